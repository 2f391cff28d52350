"""Benchmarks: the neural detector against today's default and Presidio, on held-out data in three text forms.

    .venv/bin/python bench/detector_forms.py [--data ../shared/data] [--systems NAME ...] [--json out.json]

Held-out sets only (never trained on; ``veil.train.detector_data.heldout_sets``): TAB dev documents,
the Presidio synthetic records of held-out templates, CoNLL-2003 eng.testa, WNUT-17 dev. Each is
scored as written (``none``), lower-cased and in speech-recognition form (``asr``), through
``veil.textforms`` (gold offsets remapped) and ``veil.mask.evaluate`` (the eval-detect scorer).
A system is a list of veil maskers run through ``MaskingEngine`` (what ``veil mask`` does), or
Presidio (its default recognizers over the same spaCy model, batched). Detected spans are cached
per (system, set, form) under ``--cache`` so a re-run after adding a system only runs that one.
Prints one table per set (recall per type, precision, masked share) and the ten most frequent
missed mention kinds per form.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from veil.mask.evaluate import evaluate, missed_mentions  # noqa: E402
from veil.textforms import FORMS, transform_documents  # noqa: E402
from veil.types import Span  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SYSTEMS = {
    "default before (entity_tagger + dlp)": ["entity_tagger", "dlp"],
    "Presidio": "presidio",
    "neural_tagger": ["neural_tagger"],
    "neural_tagger + dlp": ["neural_tagger", "dlp"],
    "entity_tagger + neural_tagger + dlp": ["entity_tagger", "neural_tagger", "dlp"],
}
# what each set's headline recall is: TAB by identifier type, the rest per gold type
HEADLINE = {"tab": ["DIRECT", "QUASI"], "presidio_synth": ["PERSON", "STREET_ADDRESS", "GPE", "ORGANIZATION"],
            "conll2003": ["PER", "ORG", "LOC", "MISC"], "wnut17": ["person", "location", "corporation", "group"]}


def detect(system: str, texts: list[str]) -> list[list[Span]]:
    spec = SYSTEMS[system]
    if spec == "presidio":
        import _presidio

        return _presidio.analyze_batch(_presidio.analyzer(), texts, 256, 1)
    from veil.mask.engine import MaskingEngine
    from veil.types import Document

    engine = MaskingEngine.from_names(spec)
    return engine.detect([Document(id=str(i), text=t) for i, t in enumerate(texts)])


def _key(system: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in system)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    ap.add_argument("--forms", nargs="+", default=list(FORMS), choices=list(FORMS))
    ap.add_argument("--sets", nargs="+", default=list(HEADLINE), choices=list(HEADLINE))
    ap.add_argument("--cache", type=Path, default=Path("/tmp/veil_detector_forms"),
                    help="detected spans per (system, set, form); delete to recompute")
    ap.add_argument("--json", type=Path, default=None, help="also write all results here")
    args = ap.parse_args()
    from veil.train.detector_data import heldout_sets

    sets = {k: v for k, v in heldout_sets(args.data).items() if k in args.sets}
    args.cache.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    missed: dict[str, Counter] = {f: Counter() for f in args.forms}
    for set_name, (golds0, fmt) in sets.items():
        for form in args.forms:
            golds = transform_documents(golds0, form)
            texts = [g.doc.text for g in golds]
            for system in args.systems:
                cache = args.cache / f"{set_name}.{form}.{_key(system)}.json"
                if cache.is_file():
                    detected = [[Span(*s) for s in doc] for doc in json.loads(cache.read_text())]
                else:
                    t0 = time.perf_counter()
                    detected = detect(system, texts)
                    print(f"  {set_name} {form} {system}: {time.perf_counter() - t0:.1f}s", file=sys.stderr)
                    cache.write_text(json.dumps([[(s.start, s.end, s.label, s.source, s.score) for s in d]
                                                 for d in detected]))
                r = evaluate(golds, detected, fmt)
                results.setdefault(set_name, {}).setdefault(form, {})[system] = r
                if system == args.systems[-1]:
                    for m in missed_mentions(golds, detected):
                        kind = f"{set_name} {m['identifier_type'] + ' ' if m['identifier_type'] else ''}{m['label']}"
                        missed[form][kind] += 1
    for set_name, by_form in results.items():
        cols = HEADLINE[set_name]
        print(f"\n{set_name} ({len(sets[set_name][0])} held-out documents): mention recall; precision; masked share")
        print(f"{'form':<6} {'system':<40} " + " ".join(f"{c[:10]:>10}" for c in cols)
              + f" {'all':>7} {'prec':>6} {'masked':>7}")
        for form, by_system in by_form.items():
            for system, r in by_system.items():
                if set_name == "tab":
                    vals = [r[c]["mention_recall"] for c in cols]
                    allv = None
                else:
                    vals = [r["per_type"].get(c, {}).get("mention_recall") for c in cols]
                    allv = r["overall"]["mention_recall"]
                f3 = lambda x: "   -  " if x is None else f"{x:.3f}"  # noqa: E731
                print(f"{form:<6} {system:<40} " + " ".join(f"{f3(v):>10}" for v in vals)
                      + f" {f3(allv):>7} {f3(r['precision']):>6} {r['masked_token_share']:>7.3f}")
    print(f"\nMost frequent missed mention kinds per form ({args.systems[-1]}):")
    for form, c in missed.items():
        print(f"  {form}: " + "; ".join(f"{k} {n}" for k, n in c.most_common(10)))
    if args.json:
        args.json.write_text(json.dumps({"results": results,
                                         "missed": {f: c.most_common(10) for f, c in missed.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
