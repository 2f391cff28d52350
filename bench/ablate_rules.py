"""Benchmarks: what each span rule of the neural tagger is worth, on folds the rules were and were not written on.

    nice .venv/bin/python bench/ablate_rules.py [--data ../shared/data] [--forms none lower asr]
        [--folds dev unseen sgd] [--sgd-dialogues 60] [--md OUT.md]

For each rule of ``veil.mask.neural.rules`` (and the group propagation, ``neural_tagger.group_propagate``)
the default maskers run with that one rule switched off (``--set neural_tagger.rules=-NAME``; a rule off by
default is switched on instead); the table
gives, per fold and text form, what the rule adds to precision, DIRECT and QUASI mention recall and type
accuracy (default minus without it: positive means the rule helps). Scored by ``veil.mask.evaluate``, the
code ``veil eval-detect --format switchboard_pii`` runs, on the engine it builds.

Folds (``bench/eval_folds.py`` reads them; ``veil.mask.neural.gold_sources`` defines them):

- ``sw_val``: ``switchboard_pii/val_gold.jsonl``, the shared dev calls the rules were written on;
- ``sw_dev``: the dev fold of the 160 double-annotated Switchboard train conversations: no rule was written
  on it and the shipped detector's thresholds were not chosen on it;
- ``sgd_dev`` / ``sgd_unseen``: ``--sgd-dialogues`` service dialogues of the trained families' dev fold / of
  the families never trained on; ``orders``: the ordering dialogues of ``bench/data``;
- ``unseen``: the 18 Switchboard conversations the shipped detector's thresholds were calibrated on.

The frozen folds are not offered: a rule is kept or removed on what this table says, so it must not see them.

The model runs once per text (its scores and the dlp spans are cached): only the rules run again per row.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "bench"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

METRICS = ("precision", "DIRECT", "QUASI", "type_accuracy")


def folds(data: Path, names: list[str], sgd_dialogues: int) -> dict[str, list]:
    """The named gold sets, read as ``bench/eval_folds.py`` reads them (``unseen``: the 18 calibration calls)."""
    from eval_folds import gold_set

    from veil.mask.neural.frames import calibration_gold

    return {name: calibration_gold(data) if name == "unseen" else gold_set(name, data, sgd_dialogues)
            for name in names}


def cached_engine() -> tuple[Any, Any]:
    """The default engine, its tagger's model scores and every other masker's spans cached per text."""
    from veil.mask.neural.tagger import NeuralTaggerMasker
    from veil.run.components import build_engine

    engine = build_engine()
    tagger = next(m for m in engine.maskers if isinstance(m, NeuralTaggerMasker))
    score, memo = tagger.score_batch, {}

    def score_batch(texts):
        todo = [t for t in dict.fromkeys(texts) if t not in memo]
        if todo:
            memo.update(zip(todo, score(todo)))
        return [memo[t] for t in texts]

    tagger.score_batch = score_batch
    for m in engine.maskers:
        if m is not tagger:
            detect, seen = m.detect_batch, {}

            def cached(texts, detect=detect, seen=seen):
                todo = [t for t in dict.fromkeys(texts) if t not in seen]
                if todo:
                    seen.update(zip(todo, detect(todo)))
                return [list(seen[t]) for t in texts]

            m.detect_batch = cached
    return engine, tagger


def measure(engine: Any, golds: list) -> dict[str, float]:
    from veil.mask.evaluate import evaluate

    r = evaluate(golds, engine.detect([g.doc for g in golds]), "switchboard_pii")
    return {"precision": r["precision"], "DIRECT": r["DIRECT"]["mention_recall"],
            "QUASI": r["QUASI"]["mention_recall"], "type_accuracy": r["type_accuracy"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--forms", nargs="+", default=["none", "lower", "asr"])
    p.add_argument("--folds", nargs="+", default=["sw_val", "sw_dev", "sgd_dev"],
                   choices=["sw_val", "sw_dev", "sgd_dev", "sgd_unseen", "orders", "unseen"])
    p.add_argument("--sgd-dialogues", type=int, default=60)
    p.add_argument("--md", type=Path, default=None, help="also write the table to this Markdown file")
    args = p.parse_args(argv)

    from veil.mask.neural.rules import REGISTRY, select
    from veil.textforms import transform_documents

    t0 = time.perf_counter()
    engine, tagger = cached_engine()
    base_golds = folds(args.data, args.folds, args.sgd_dialogues)
    rows = ["(all rules)"] + list(REGISTRY) + ["group_propagate"]
    results: dict[tuple[str, str, str], dict[str, float]] = {}
    for fold, golds in base_golds.items():
        for form in args.forms:
            docs = transform_documents(golds, form)
            for row in rows:
                if row in REGISTRY and not REGISTRY[row].default:  # off by default: measured switched on
                    tagger.rules = tuple(r for r in REGISTRY.values() if r.default or r.name == row)
                else:
                    tagger.rules = select(None if row in ("(all rules)", "group_propagate") else f"-{row}")
                tagger.group_propagate = row != "group_propagate"
                results[(fold, form, row)] = measure(engine, docs)
            print(f"{fold}/{form}: {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    tagger.rules, tagger.group_propagate = select(None), True

    cols = [(f, form) for f in base_golds for form in args.forms]
    head = "| rule | " + " | ".join(f"{f} {form}: P / D / Q / T" for f, form in cols) + " |"
    lines = [head, "|---|" + "---|" * len(cols)]

    def fmt(a: float | None, b: float | None) -> str:
        if a is None or b is None:
            return "–"
        return "0" if abs(a - b) < 0.0005 else f"{a - b:+.3f}"

    for row in rows:
        cells = []
        for fold, form in cols:
            full = results[(fold, form, "(all rules)")]
            if row == "(all rules)":
                cells.append(" / ".join("–" if full[m] is None else f"{full[m]:.3f}" for m in METRICS))
            elif row in REGISTRY and not REGISTRY[row].default:
                on = results[(fold, form, row)]
                cells.append(" / ".join(fmt(on[m], full[m]) for m in METRICS))
            else:
                off = results[(fold, form, row)]
                cells.append(" / ".join(fmt(full[m], off[m]) for m in METRICS))
        shown = f"{row} (off by default: switched on)" if row in REGISTRY and not REGISTRY[row].default else row
        lines.append(f"| {shown} | " + " | ".join(cells) + " |")
    sizes = ", ".join(f"{f}: {len(g)} utterances" for f, g in base_golds.items())
    table = "\n".join(lines)
    note = (f"{dt.date.today().isoformat()}, `bench/ablate_rules.py --forms {' '.join(args.forms)} --folds "
            f"{' '.join(args.folds)} --sgd-dialogues {args.sgd_dialogues}` ({sizes}; {time.perf_counter() - t0:.0f} s)")
    print(note + "\n\n" + table)
    if args.md is not None:
        from veil.io.atomic import write_text_atomic

        write_text_atomic(args.md, note + "\n\n" + table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
