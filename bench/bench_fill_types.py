"""Fill stage benchmark: do typed placeholders get substitutes of their type? (spaCy agreement, goal >= 90%).

One command: ``.venv/bin/python bench/bench_fill_types.py`` (``--limit 300`` sentences by default).

CoNLL-2003 development sentences (``../shared/data/conll2003/eng.testa``) that hold a gold entity
are masked by the ``entity_tagger`` masker (spaCy NER: persons, organisations, places, groups,
facilities) in ``numbered`` style and filled by the ``mlm`` filler (default: the offline MiniLM).
Reported per type (person / place / organisation): the share of substitutes that spaCy, run on
the whole filled text, tags with the same type, and how many came from the model (candidates the
fill loop kept after its own spaCy check in the sentence) versus Faker (no model candidate passed).
The check uses the same spaCy model as the fill loop's filter, on the final text (later fills
change the context), so it measures the end result, not an independent tagger.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def conll_sentences(path: Path, limit: int) -> list[str]:
    out, words, has_ent = [], [], False
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        parts = line.split()
        if not parts or parts[0] == "-DOCSTART-":
            if words and has_ent and len(words) >= 5:
                out.append(" ".join(words))
                if len(out) >= limit:
                    break
            words, has_ent = [], False
            continue
        words.append(parts[0])
        has_ent = has_ent or parts[-1] != "O"
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=300, help="sentences (default 300)")
    ap.add_argument("--model", default=None, help="masked LM for the mlm filler (default: offline MiniLM)")
    ap.add_argument("--strategy", default="top1", choices=("top1", "topk"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    args = ap.parse_args(argv)

    import torch

    from veil.fill.mlm import MLMFiller
    from veil.fill.typed import REPORTED, entity_type_agreement
    from veil.mask.engine import MaskingEngine
    from veil.mask.entity_tagger import EntityTaggerMasker
    from veil.types import Document

    torch.set_num_threads(args.threads)
    sents = conll_sentences(Path(args.data) / "conll2003" / "eng.testa", args.limit)
    masked = MaskingEngine([EntityTaggerMasker()], style="numbered").mask(
        [Document(f"s{i}", s) for i, s in enumerate(sents)])
    filler = MLMFiller(model=args.model, strategy=args.strategy)
    t = time.perf_counter()
    filled = filler.fill(masked)
    secs = time.perf_counter() - t
    n_ph = sum(len(d.placeholders) for d in masked)
    n_rep = sum(1 for d in filled for s in d.substitutions if s.label in REPORTED)
    print(f"{len(sents)} CoNLL-2003 dev sentences, {n_ph} placeholders ({n_rep} person/place/organisation "
          f"substitutions), filled in {secs:.1f} s with mlm {args.model or 'minilm'} {args.strategy}")
    st = filler.stats
    print(f"fill loop: {st['model_markers']} markers asked of the model; {st['entity_faker']} entity markers had no "
          f"model candidate that spaCy tags with the type and got a checked Faker draw "
          f"({st['entity_faker_unverified']} of them unchecked: no draw passed); {st['faker']} format markers (Faker)")
    report = entity_type_agreement(filled)
    print("\n| type | substitutes | tagged with the same type by spaCy |")
    print("|---|---:|---:|")
    for name, r in report.items():
        print(f"| {name} | {r['n']} | {100 * r['share']:.1f}% |")
    for d in filled[:5]:
        print("  e.g.", d.text[:140])
    return 0


if __name__ == "__main__":
    sys.exit(main())
