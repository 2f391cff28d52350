"""Benchmarks: the default masking scored fold by fold, so a figure says whether anyone tuned on its data.

    .venv/bin/python bench/eval_folds.py [--model DIR] [--forms none lower asr] [--sets ...] [--md OUT.md]
        [--json OUT.json] [--rules SPEC] [--sgd-dialogues N]

Sets (``veil.mask.neural.gold_sources`` defines the folds):

- ``sw_val`` (dev): ``switchboard_pii`` val. Span rules were written against its errors: a dev figure.
- ``sw_dev``: the dev fold of the annotated Switchboard train conversations (thresholds are chosen on it).
- ``sw_frozen``: their frozen fold: nothing was trained, tuned or written on it; its errors were read on
  2026-11-29, so it is a dev fold for what was chosen after.
- ``sw_holdout``: 24 more Switchboard train conversations (``bench/data/switchboard_holdout``), annotated twice
  and adjudicated after every rule, threshold and model of the default was chosen; scored, never read for errors.
  ``sw_holdout_unframed``: its utterances that none of the shipped detector's 8,000 candidate silver frames held
  (``framed_ids.json`` there, from :func:`framed_utterances`): text the model never read.
- ``sgd_dev`` / ``sgd_frozen``: SGD dev dialogues of the service families the tagger trains on, by dialogue hash.
- ``sgd_unseen``: SGD dev dialogues of the families never trained on (``UNSEEN_FAMILIES``): a domain veil has
  not seen.
- ``orders``: ``bench/data/orders_gold.jsonl``, food-ordering dialogues written and annotated for veil's
  benchmarks (menu words are things, customers' names DIRECT): a domain no training source covers.

Each cell is the default masking (``neural_tagger`` + ``dlp``, the detector folder ``--model`` or the shipped one)
scored by ``veil.mask.evaluate`` as ``veil eval-detect --format switchboard_pii`` scores it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import time
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parent.parent
SETS = ("sw_val", "sw_dev", "sw_frozen", "sw_holdout", "sw_holdout_unframed", "sgd_dev", "sgd_frozen", "sgd_unseen",
        "orders")
FORMS = ("none", "lower", "asr")


def gold_set(name: str, data: Path, sgd_dialogues: int, seed: int = 0) -> list:
    from veil.mask.gold import read_gold
    from veil.mask.neural import gold_sources as gs

    if name == "orders":
        return read_gold(REPO / "bench" / "data" / "orders_gold.jsonl", "switchboard_pii")
    if name == "sw_val":
        return read_gold(data / "switchboard_pii/val_gold.jsonl", "switchboard_pii")
    if name in ("sw_dev", "sw_frozen"):
        return gs.switchboard_gold(data, (name[3:],))
    if name.startswith("sw_holdout"):
        from veil.mask.neural.frames import HOLDOUT_FILE, calibration_gold

        golds = calibration_gold(data, HOLDOUT_FILE)
        if name == "sw_holdout_unframed":
            framed = json.loads((REPO / "bench" / "data" / "switchboard_holdout" / "framed_ids.json").read_text())
            seen = set(framed["ids"])
            golds = [g for g in golds if g.doc.id not in seen]
        return golds
    if name == "sgd_unseen":
        docs = gs.sgd_gold(data, "dev", families=gs.UNSEEN_FAMILIES)
    else:
        docs = gs.sgd_gold(data, "dev", exclude=gs.UNSEEN_FAMILIES, folds=(name[4:],))
    dialogues = sorted({str(d.doc.group) for d in docs})
    keep = set(random.Random(seed).sample(dialogues, min(sgd_dialogues, len(dialogues))))
    return [d for d in docs if d.doc.group in keep]


def framed_utterances(data: Path, exclude: frozenset[str], n: int = 8000, seed: int = 0) -> frozenset[str]:
    """The ids (``<conversation>-<line>``) of every Switchboard train utterance in the ``n`` candidate frames a
    detector's training drew (``veil.mask.neural.frames.frames``: ``sample_texts`` of twice its 4,000 frames, seed
    0, the conversations ``exclude`` left out: those annotated when it was trained), drawn again by
    ``sample_texts`` itself: an upper bound on the text it read with silver labels.
    ``bench/data/switchboard_holdout/framed_ids.json`` holds the shipped detector's, drawn with the calibration set
    and the first 160 gold conversations excluded."""
    from veil.mask.neural.frames import SWITCHBOARD_TRAIN, conversation_lines, sample_texts

    lines = conversation_lines(data / SWITCHBOARD_TRAIN)
    drawn: list[tuple[str, int, int]] = []
    sample_texts({c: [u for _, u in utts] for c, utts in lines.items()}, n, random.Random(seed), exclude, drawn)
    return frozenset(f"{conv}-{lines[conv][j][0]}" for conv, first, k in drawn
                     for j in range(first, min(first + k, len(lines[conv]))))


def whole_calls(docs: list, size: int = 64) -> Iterator[list]:
    """``docs`` in batches of about ``size`` that never split a call: a call's values are carried over all of its
    utterances only when the engine sees them together."""
    batch: list = []
    for i, d in enumerate(docs):
        batch.append(d)
        if len(batch) >= size and (i + 1 == len(docs) or docs[i + 1].group is None or docs[i + 1].group != d.group):
            yield batch
            batch = []
    if batch:
        yield batch


def scores(golds: list, form: str, engine: Any) -> dict[str, Any]:
    from veil.mask.evaluate import evaluate
    from veil.textforms import transform_documents

    g = transform_documents(golds, form)
    docs = [x.doc for x in g]
    spans = [s for batch in whole_calls(docs) for s in engine.detect(batch)]
    r = evaluate(g, spans, "switchboard_pii")
    return {"precision": r["precision"], "DIRECT": r["DIRECT"]["mention_recall"], "DIRECT_n": r["DIRECT"]["mentions"],
            "QUASI": r["QUASI"]["mention_recall"], "QUASI_n": r["QUASI"]["mentions"],
            "type_accuracy": r.get("type_accuracy"), "utterances": len(docs)}


def f3(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def markdown(results: dict, forms: list[str], command: str, seconds: float) -> str:
    lines = [f"Default masking by fold ({dt.date.today().isoformat()}; `{command}`, {seconds / 60:.0f} min). "
             "Each cell: " + " / ".join(forms) + ".", "",
             "| set | utterances | precision | DIRECT (n) | QUASI (n) | type accuracy |", "|---|---|---|---|---|---|"]
    for name, by_form in results.items():
        cells = [by_form[f] for f in forms]
        lines.append(f"| {name} | {cells[0]['utterances']} | " + " / ".join(f3(c["precision"]) for c in cells)
                     + " | " + " / ".join(f3(c["DIRECT"]) for c in cells) + f" ({cells[0]['DIRECT_n']})"
                     + " | " + " / ".join(f3(c["QUASI"]) for c in cells) + f" ({cells[0]['QUASI_n']})"
                     + " | " + " / ".join(f3(c["type_accuracy"]) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    from veil.run.components import build_engine

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--model", help="detector folder (default: the shipped one)")
    ap.add_argument("--forms", nargs="+", default=list(FORMS), choices=FORMS)
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    ap.add_argument("--sgd-dialogues", type=int, default=150, help="SGD dialogues per SGD set (seeded sample)")
    ap.add_argument("--set", dest="options", action="append", default=[], metavar="neural_tagger.KEY=VALUE",
                    help="a neural_tagger option (e.g. rules=...)")
    ap.add_argument("--md", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    opts: dict[str, Any] = {}
    if args.model:
        opts["model"] = args.model
    for o in args.options:
        key, _, value = o.partition("=")
        opts[key.removeprefix("neural_tagger.")] = value
    engine = build_engine(["neural_tagger", "dlp"], options={"neural_tagger": opts} if opts else None)
    t0 = time.time()
    results: dict[str, dict[str, Any]] = {}
    for name in args.sets:
        golds = gold_set(name, args.data, args.sgd_dialogues)
        if not golds:
            print(f"{name}: no documents (no annotations of this fold shipped?)", file=sys.stderr)
            continue
        results[name] = {f: scores(golds, f, engine) for f in args.forms}
        c = results[name][args.forms[0]]
        print(f"{name:11s} {args.forms[0]}: P {f3(c['precision'])} DIRECT {f3(c['DIRECT'])} QUASI {f3(c['QUASI'])} "
              f"type {f3(c['type_accuracy'])}", file=sys.stderr, flush=True)
    command = "python bench/eval_folds.py " + " ".join(sys.argv[1:])
    md = markdown(results, args.forms, command.strip(), time.time() - t0)
    print(md)
    if args.md:
        args.md.write_text(md, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
