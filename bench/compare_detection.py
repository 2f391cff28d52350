"""Benchmarks: detection recall, precision and residual risk of veil's maskers next to Presidio and spaCy, per text form.

    .venv/bin/python bench/compare_detection.py [--data ../shared/data] [--forms none lower asr]
        [--sets tab presidio_synth conll wnut switchboard_pii] [--md docs/detection_comparison.md] [--json out.json]

One table: dataset x form (``none`` / ``lower`` / ``asr``, ``veil.textforms``) x system, with mention
recall per entity type, precision (share of masked words inside gold mentions a masker may mask), the masked
share of all words, and the Dialpad criterion (mean + std of the residual-risk score of each
document, ``veil.audit.risk``; a corpus passes below 5). Every system is scored by
``veil.mask.evaluate`` / ``veil.mask.coverage``, the rule ``veil eval-detect`` and ``veil audit
risk`` use.

Systems, from the masker registry (a newly registered detector shows up without editing this file):

- ``veil default``: the maskers ``veil eval-detect`` runs by default;
- every other registered masker (but the word-list maskers) alone, and added to the default;
- ``Presidio``: its default recognizers over the same spaCy model, every result kept (score
  threshold 0), so its recall is as high as it gets;
- ``spaCy NER``: the entity tagger without veil's in-document propagation and name extension;
- ``allow_list``: masks every word outside the 5,000 most frequent English ones: the trivial
  recall bound (recall bought by masking nearly everything is no result).

Data: TAB's dev documents (the detector trains on its train split), the held-out share of the
Presidio synthetic set (``veil.mask.gold.PRESIDIO_HELD_OUT``), CoNLL-2003 ``eng.testa``, WNUT-17
dev, and real conversation: the annotated Switchboard ``val`` utterances (``switchboard_pii``;
DIRECT / QUASI recall, OPTIONAL mentions allowed in the precision, type accuracy; never trained on).
The Markdown report lists, per form, the most frequent kinds of mention the default still misses.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from veil.audit import risk  # noqa: E402
from veil.mask.evaluate import evaluate, false_positive_words, missed_mentions  # noqa: E402
from veil.mask.gold import GoldDocument, read_gold  # noqa: E402
from veil.mask.placeholders import merge_spans  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
#: name -> (path under --data, gold format, which documents)
SETS = {"tab": ("tab/tab_train_dev.jsonl", "tab", "dev"),
        "presidio_synth": ("presidio_synth/synth_dataset_v2_first750.json", "presidio", "held_out"),
        "conll": ("conll2003/eng.testa", "conll", "all"),
        "wnut": ("wnut17/emerging.dev.conll", "conll", "all"),
        "switchboard_pii": ("switchboard_pii/val_gold.jsonl", "switchboard_pii", "all")}
#: the heading each set gets in the report
TITLES = {"switchboard_pii": "switchboard_pii (real conversation)"}
FORMS = ("none", "lower", "asr")
#: maskers that mask by word frequency, not by detecting anything: shown only as the trivial bound
WORD_LIST_MASKERS = ("allow_list", "vocab_threshold")
#: maskers that detect only what the user lists (deny_list: the review's missed terms): nothing to compare
USER_LIST_MASKERS = ("deny_list",)
ALLOW_LIST = "allow_list (trivial bound)"
#: the default's maskers with options: name -> (masker, its options)
VARIANTS = {f"{m} register=written": (m, {"register": "written"}) for m in ("neural_tagger", "dlp")}
WRITTEN = "veil default, register=written"


def select(golds: list[GoldDocument], which: str) -> list[GoldDocument]:
    if which == "dev":
        return [g for g in golds if g.doc.meta.get("dataset_type") == "dev"]
    if which == "held_out":
        from veil.mask.gold import presidio_held_out

        return presidio_held_out(golds)
    return golds


def default_maskers() -> tuple[str, ...]:
    from veil.run.components import DEFAULT_MASKERS

    return tuple(DEFAULT_MASKERS)


def systems() -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """(maskers to run, system name -> the maskers whose spans it unites)."""
    from veil.registry import maskers as registry

    default = default_maskers()
    others = [n for n in registry.names() if n not in default and n not in WORD_LIST_MASKERS + USER_LIST_MASKERS]
    out: dict[str, tuple[str, ...]] = {"veil default": default}
    written = tuple(f"{m} register=written" if f"{m} register=written" in VARIANTS else m for m in default)
    out[WRITTEN] = written
    for n in others:
        out[n] = (n,)
        out[f"veil default + {n}"] = (*default, n)
    out["Presidio"] = ("presidio",)
    out["spaCy NER"] = ("spacy_ner",)
    out[ALLOW_LIST] = ("allow_list",)
    extra = [m for m in written if m not in default]
    return [*default, *extra, *others, "presidio", "spacy_ner", "allow_list"], out


def detect(name: str, docs: list, timings: dict[str, float]) -> list[list]:
    """Spans of one masker (or of Presidio / bare spaCy NER) on every document, through veil's engine."""
    from veil.mask.engine import MaskingEngine
    from veil.run.components import build_engine

    t0 = time.perf_counter()
    if name == "presidio":
        import _presidio

        engine = _presidio.analyzer()
        out = list(_presidio.analyze_per_text(engine, [d.text for d in docs]))
    else:
        if name == "spacy_ner":
            from veil.mask.entity_tagger import EntityTaggerMasker

            engine = MaskingEngine([EntityTaggerMasker(propagate=False, extend=False)])
        elif name in VARIANTS:
            masker, options = VARIANTS[name]
            engine = build_engine([masker], options={masker: {**options, **_judge_off(masker)}})
        else:
            engine = build_engine([name], options={name: _judge_off(name)} if _judge_off(name) else None)
        out = []
        for i in range(0, len(docs), 64):
            out.extend(engine.detect(docs[i:i + 64]))
    timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0
    return out


def _judge_off(masker: str) -> dict[str, Any]:
    """The neural tagger runs alone without its span judge: the judge reads every masker's merged spans, so it is
    applied to a system's united spans (:func:`judged`), as the engine applies it."""
    return {"judge": "off"} if masker == "neural_tagger" else {}


def judged(docs: list, united: list[list], members: tuple[str, ...], spans: dict[str, list[list]]) -> list[list]:
    """``united`` as the engine leaves it: the system's neural tagger (its options, judge on) judges the merged spans
    of a system holding it, with the tagger's and dlp's own spans (``judge_merged``, as the engine calls it)."""
    tagger = next((m for m in members if m.split()[0] == "neural_tagger"), None)
    if tagger is None:
        return united
    from veil.run.components import build_engine

    options = VARIANTS[tagger][1] if tagger in VARIANTS else {}
    [masker] = build_engine(["neural_tagger"], options={"neural_tagger": options}).maskers
    found = {"neural_tagger": spans[tagger], **{"dlp": spans[m] for m in members if m.split()[0] == "dlp"}}
    groups = [d.group for d in docs]
    return masker.judge_merged([d.text for d in docs], united, found,
                               groups if any(g is not None for g in groups) else None)


def score(golds: list[GoldDocument], spans: list[list], fmt: str) -> dict[str, Any]:
    r = evaluate(golds, spans, fmt)
    risks = risk.audit_against_gold(golds, spans, fmt)
    total = risk.group_table(risks)[-1]
    classes = "DIRECT" in r
    recall = r["DIRECT"]["mention_recall"] if classes else r["overall"]["mention_recall"]
    row = {"recall": recall, "precision": r["precision"], "masked_share": r["masked_token_share"],
           "risk_mean": total["mean"], "risk_std": total["std"], "risk_mean_plus_std": total["mean_plus_std"],
           "risk_pass": total["pass"], "per_type": {k: v["mention_recall"] for k, v in r["per_type"].items()}}
    if classes:
        row["DIRECT"], row["QUASI"] = r["DIRECT"]["mention_recall"], r["QUASI"]["mention_recall"]
    if "type_accuracy" in r:
        row["type_accuracy"] = r["type_accuracy"]
    return row


def missed_kinds(counter: Counter) -> Counter:
    """Missed mentions counted per (dataset, gold type): the "kinds" the closing notes list."""
    kinds: Counter = Counter()
    for (d, t, _), n in counter.items():
        kinds[(d, t)] += n
    return kinds


def f3(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def markdown(results: dict, missed: dict, command: str, seconds: float, false_pos: dict | None = None) -> str:
    today = dt.date.today().isoformat()
    lines = [f"# Detection comparison ({today})", "",
             f"Command: `{command}` ({seconds / 60:.0f} min on the shared 2-core machine).", "",
             "Mention recall (TAB: DIRECT / QUASI; others: all mentions), precision (share of masked words",
             "inside gold mentions to mask), masked share of all words, and the Dialpad criterion",
             "(mean + std of the per-document residual-risk score; pass below 5). Produced by",
             "`bench/compare_detection.py`; every number is scored by `veil.mask.coverage`.", ""]
    for set_name, forms in results.items():
        lines += [f"## {TITLES.get(set_name, set_name)}", ""]
        first = next(iter(next(iter(forms.values())).values()))
        types = sorted(first["per_type"])
        typed = "type_accuracy" in first
        head = ["form", "system"] + (["DIRECT", "QUASI"] if "DIRECT" in first else ["recall"]) + \
            ["precision"] + (["type acc."] if typed else []) + ["masked", "μ+σ", "pass"] + types
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for form, rows in forms.items():
            for system, r in rows.items():
                rec = [f3(r["DIRECT"]), f3(r["QUASI"])] if "DIRECT" in r else [f3(r["recall"])]
                cells = [form, system, *rec, f3(r["precision"]), *([f3(r.get("type_accuracy"))] if typed else []),
                         f3(r["masked_share"]),
                         f"{r['risk_mean_plus_std']:.2f}", "yes" if r["risk_pass"] else "no",
                         *[f3(r["per_type"].get(t)) for t in types]]
                lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    if false_pos:
        lines += ["## Most frequent false-positive words of `veil default` on real conversation", "",
                  "Masked words outside every annotated span (DIRECT, QUASI or OPTIONAL), lower-cased, per form:", ""]
        for form, words in false_pos.items():
            lines.append(f"- {form}: " + ", ".join(f"{w} {n}" for w, n in list(words.items())[:20]))
        lines.append("")
    lines += ["## Still missed by `veil default`", "",
              "Per form: the ten most frequent kinds of missed (or partly masked) mention (dataset / gold type,",
              "with counts), then each dataset's five most frequent missed mentions as they read in that form.", ""]
    for form, counter in missed.items():
        kinds = missed_kinds(counter)
        lines += [f"**{form}**: " + "; ".join(f"{d}/{t} ×{n}" for (d, t), n in kinds.most_common(10)), ""]
        for d in dict.fromkeys(d for d, _, _ in counter):
            top = Counter({k: n for k, n in counter.items() if k[0] == d}).most_common(5)
            lines.append(f"- {d}: " + "; ".join(f"{t} “{m}” ×{n}" for (_, t, m), n in top))
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    ap.add_argument("--forms", nargs="+", default=list(FORMS), choices=list(FORMS))
    ap.add_argument("--limit", type=int, default=None, help="only the first N documents of each set (a quick look)")
    ap.add_argument("--md", type=Path, default=None, help="write the Markdown report here (docs/detection_comparison.md)")
    ap.add_argument("--json", type=Path, default=None, help="also write all results here")
    args = ap.parse_args()
    from veil.textforms import transform_documents

    t_start = time.perf_counter()
    run, system_of = systems()
    results: dict[str, dict[str, dict[str, Any]]] = {}
    missed: dict[str, Counter] = {f: Counter() for f in args.forms}
    false_pos: dict[str, dict[str, int]] = {}  # form -> the default's false-positive words on real conversation
    timings: dict[str, float] = {}
    for set_name in args.sets:
        rel, fmt, which = SETS[set_name]
        path = args.data / rel
        if not path.is_file():
            print(f"skipping {set_name}: {path} not found", file=sys.stderr)
            continue
        base = select(read_gold(path, fmt), which)[: args.limit]
        for form in args.forms:
            golds = transform_documents(base, form)
            docs = [g.doc for g in golds]
            print(f"{set_name} / {form}: {len(golds)} documents", file=sys.stderr)
            spans = {name: detect(name, docs, timings) for name in run}
            rows = {}
            for system, members in system_of.items():
                # overlapping spans of several maskers are merged as the engine merges them
                united = [merge_spans([s for m in members for s in spans[m][i]]) for i in range(len(docs))]
                united = judged(docs, united, members, spans)
                rows[system] = score(golds, united, fmt)
                if system == "veil default":
                    for m in missed_mentions(golds, united):
                        missed[form][(set_name, m["label"], m["mention"].lower())] += 1
                    if fmt == "switchboard_pii":
                        false_pos[form] = false_positive_words(golds, united)
            results.setdefault(set_name, {})[form] = rows
            print_block(set_name, form, rows)
    print("detection seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()), file=sys.stderr)
    command = "python bench/compare_detection.py " + " ".join(sys.argv[1:])
    if args.md:
        args.md.parent.mkdir(parents=True, exist_ok=True)
        args.md.write_text(markdown(results, missed, command.strip(), time.perf_counter() - t_start, false_pos),
                           encoding="utf-8")
    for form, counter in missed.items():
        print(f"\nmost missed kinds by veil default ({form}): " +
              "; ".join(f"{d}/{t} x{n}" for (d, t), n in missed_kinds(counter).most_common(10)))
        print(f"most missed mentions by veil default ({form}): " +
              "; ".join(f"{d}/{t} {m!r} x{n}" for (d, t, m), n in counter.most_common(10)))
    for form, words in false_pos.items():
        print(f"\nmost frequent false-positive words of veil default on real conversation ({form}): " +
              ", ".join(f"{w} {n}" for w, n in list(words.items())[:20]))
    if args.json:
        args.json.write_text(json.dumps({"results": results, "timings": timings,
                                         "false_positive_words": {f: dict(list(w.items())[:50]) for f, w in false_pos.items()}},
                                        indent=1), encoding="utf-8")
    return 0


def print_block(set_name: str, form: str, rows: dict[str, dict[str, Any]]) -> None:
    first = next(iter(rows.values()))
    types = sorted(first["per_type"])
    tab = "DIRECT" in first
    print(f"\n{set_name} / {form}")
    head = f"{'system':<34} " + (f"{'DIRECT':>7} {'QUASI':>7}" if tab else f"{'recall':>7}") + \
        f" {'prec':>6} {'typeacc':>7} {'masked':>6} {'μ+σ':>6} " + " ".join(f"{t[:9]:>9}" for t in types)
    print(head)
    for system, r in rows.items():
        rec = f"{f3(r['DIRECT']):>7} {f3(r['QUASI']):>7}" if tab else f"{f3(r['recall']):>7}"
        print(f"{system:<34} {rec} {f3(r['precision']):>6} {f3(r.get('type_accuracy')):>7} {f3(r['masked_share']):>6} "
              f"{r['risk_mean_plus_std']:>6.2f} " + " ".join(f"{f3(r['per_type'].get(t)):>9}" for t in types))


if __name__ == "__main__":
    sys.exit(main())
