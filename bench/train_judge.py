"""Train the span judge (``veil.mask.judge``) from gold conversations and choose its threshold on the dev folds.

    .venv/bin/python bench/train_judge.py [--data ../shared/data] [--out veil/data/judge] [--sgd-dialogues 400]
        [--beta 1] [--c 1.0] [--model DETECTOR_DIR] [--json OUT.json]

1. The default masking, judge off, runs over the training sets: the annotated Switchboard train fold (as written
   and in its asr form) and ``--sgd-dialogues`` SGD training dialogues outside the unseen families. Each merged
   span of a judged type is an example: "keep" where gold (DIRECT, QUASI or OPTIONAL) covers at least half of
   its words.
2. A logistic regression (``--c``) learns keep / drop from the span's hashed features.
3. The same masking runs over the dev sets (``switchboard_pii`` val, ``sw_dev`` as written and in asr form,
   ``sgd_dev``); the threshold
   is the one of a grid that maximises the mean F-beta (``--beta``) of precision and QUASI recall over them,
   judging at each threshold only the types that, judged alone, drop a span and lose no DIRECT or QUASI mention
   on any dev set (the lowest threshold within ``TIE`` of the best: it drops least). Each set is scored as the
   engine masks it: a value kept in one utterance of a call stays masked in the call's others.
4. Per type: each type's own threshold is the highest of the grid at which, judged alone, it drops a span and
   loses no DIRECT or QUASI mention on any dev set. These per-type thresholds ship when their mean F-beta over
   the dev sets is at least the one threshold's (types differ: a job said in passing reads surer than a date).
   The grid and each type's effect are printed; the folder records them.

The frozen folds, ``sgd_unseen`` and the ordering dialogues are never read here: score them after with
``bench/eval_folds.py``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

#: mean F-beta within this of the best counts as a tie, broken toward the lower threshold
TIE = 0.001
GRID = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)


def training_golds(data: Path, sgd_dialogues: int) -> dict[str, list]:
    from veil.mask.neural import gold_sources as gs
    from veil.textforms import transform_documents

    sw = gs.switchboard_gold(data, ("train",))
    sgd = gs.sgd_gold(data, "train", exclude=gs.UNSEEN_FAMILIES)
    dialogues = sorted({str(d.doc.group) for d in sgd})
    keep = set(random.Random(0).sample(dialogues, min(sgd_dialogues, len(dialogues))))
    return {"sw_train none": sw, "sw_train asr": transform_documents(sw, "asr"),
            "sgd_train none": [d for d in sgd if d.doc.group in keep]}


def dev_golds(data: Path) -> dict[str, list]:
    from eval_folds import gold_set

    from veil.textforms import transform_documents

    sw = gold_set("sw_dev", data, 0)
    return {"sw_val none": gold_set("sw_val", data, 0), "sw_dev none": sw, "sw_dev asr": transform_documents(sw, "asr"),
            "sgd_dev none": gold_set("sgd_dev", data, 150)}


def candidates(golds: list, engine: Any, label: str) -> dict[str, Any]:
    """The merged spans of the judge-free default masking, with each masker's own spans, call by call."""
    from eval_folds import whole_calls
    from tqdm import tqdm

    docs = [g.doc for g in golds]
    merged, tagger, dlp = [], [], []
    with tqdm(total=len(docs), desc=f"masking {label}", unit="utt") as bar:
        for batch in whole_calls(docs):
            m, each = engine.detect_each(batch)
            merged, tagger, dlp = merged + m, tagger + each[0], dlp + each[1]
            bar.update(len(batch))
    return {"golds": golds, "merged": merged, "tagger": tagger, "dlp": dlp}


def kept_by_gold(text: str, allowed: Any, start: int, end: int) -> bool:
    """Whether the gold that may be masked (``allowed``, its ``veil.mask.coverage.Coverage``) touches at least
    half of the words of ``[start, end)``, each word as precision counts it."""
    from veil.textutil import iter_words

    words = [(ws + start, we + start) for ws, we, _ in iter_words(text[start:end])]
    return bool(words) and 2 * sum(allowed.word_is_masked(ws, we) for ws, we in words) >= len(words)


def examples(c: dict[str, Any]) -> tuple[list, list, list]:
    from veil.mask.coverage import Coverage, spans_of
    from veil.mask.evaluate import _may_mask
    from veil.mask.judge import JUDGED, features, found_by

    rows, labels, where = [], [], []
    for i, (gd, spans) in enumerate(zip(c["golds"], c["merged"])):
        allowed = Coverage(gd.doc.text, spans_of(_may_mask(gd)))
        for j, s in enumerate(spans):
            if s.label in JUDGED:
                rows.append(features(gd.doc.text, s.start, s.end, s.label, found_by(s, c["tagger"][i], c["dlp"][i]),
                                     s.score))
                labels.append(kept_by_gold(gd.doc.text, allowed, s.start, s.end))
                where.append((i, j))
    return rows, labels, where


def scored(c: dict[str, Any], drop: set) -> tuple[float, float | None, float]:
    from veil.mask.evaluate import evaluate

    spans = [[s for j, s in enumerate(m) if (i, j) not in drop] for i, m in enumerate(c["merged"])]
    r = evaluate(c["golds"], spans, "switchboard_pii")
    return r["precision"], r["DIRECT"]["mention_recall"], r["QUASI"]["mention_recall"]


def fbeta(p: float, r: float, beta: float) -> float:
    b2 = beta * beta
    return (1 + b2) * p * r / (b2 * p + r) if p + r else 0.0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(REPO / "veil" / "data" / "judge"))
    ap.add_argument("--sgd-dialogues", type=int, default=400)
    ap.add_argument("--beta", type=float, default=1.0)
    ap.add_argument("--c", type=float, default=1.0, help="inverse regularisation of the logistic regression")
    ap.add_argument("--model", help="the detector folder whose spans are judged (default: the shipped detector); "
                                    "a judge learns the spans of one detector")
    ap.add_argument("--json", help="also write the grid here")
    args = ap.parse_args(argv)

    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from veil.mask.judge import JUDGED, kept_in_groups, save, vectorise
    from veil.run.components import build_engine

    began = time.time()
    data = Path(args.data)
    tagger = {"judge": "off", **({"model": args.model} if args.model else {})}
    engine = build_engine(["neural_tagger", "dlp"], options={"neural_tagger": tagger})
    train = {k: candidates(g, engine, k) for k, g in training_golds(data, args.sgd_dialogues).items()}
    rows, labels = [], []
    for c in train.values():
        r, y, _ = examples(c)
        rows += r
        labels += y
    y = np.array(labels)
    print(f"{len(y)} training spans, {y.mean():.3f} kept by gold", flush=True)
    model = LogisticRegression(C=args.c, max_iter=3000, solver="liblinear").fit(vectorise(rows), y)

    dev = {k: candidates(g, engine, k) for k, g in dev_golds(data).items()}
    probs = {}
    for k, c in dev.items():
        r, _, where = examples(c)
        probs[k] = (model.predict_proba(vectorise(r))[:, 1] if r else np.zeros(0), where)
    base = {k: scored(c, set()) for k, c in dev.items()}
    # each dev set's texts and calls, read once for the many ``effect`` calls (a record without a call is its own)
    texts = {k: [g.doc.text for g in c["golds"]] for k, c in dev.items()}
    groups = {k: [g.doc.group for g in c["golds"]] for k, c in dev.items()}

    def effect(k: str, thresholds: dict[str, float]) -> tuple[int, tuple]:
        """Spans dropped and the scores with each type of ``thresholds`` judged at its threshold, as the engine
        drops them: a value kept elsewhere in its call stays."""
        p, where = probs[k]
        c = dev[k]
        label = {w: c["merged"][w[0]][w[1]].label for w in where}
        judged = [w for w in where if label[w] in thresholds]
        drop = {w for w, q in zip(where, p) if label[w] in thresholds and q < thresholds[label[w]]}
        drop = kept_in_groups(texts[k], c["merged"], judged, drop, groups[k])
        return len(drop), (scored(c, drop) if drop else base[k])

    def costs_recall(res: tuple, before: tuple) -> bool:
        return res[2] < before[2] - 1e-12 or (res[1] is not None and before[1] is not None and res[1] < before[1])

    grid = []
    print("| threshold | types judged | " + " | ".join(f"{k} P / DIRECT / QUASI" for k in dev)
          + f" | mean F{args.beta:g} |")
    print("|---|---|" + "---|" * (len(dev) + 1))
    for t in (0.0,) + GRID:
        # a type is judged at t only if, judged alone, it drops a span and loses no DIRECT or QUASI mention on any
        # dev set
        types = set()
        for typ in sorted(JUDGED) if t else ():
            effects = [(k, *effect(k, {typ: t})) for k in dev]
            if any(n for _, n, _ in effects) and not any(costs_recall(res, base[k]) for k, _, res in effects):
                types.add(typ)
        cells = [effect(k, dict.fromkeys(types, t))[1] for k in dev]
        mean_f = float(np.mean([fbeta(r[0], r[2], args.beta) for r in cells]))
        grid.append({"threshold": t, "types": sorted(types), "mean_f": mean_f,
                     "sets": {k: dict(zip(("precision", "DIRECT", "QUASI"), r)) for k, r in zip(dev, cells)}})
        print(f"| {t:g} | {', '.join(sorted(types)) or '–'} | "
              + " | ".join(f"{r[0]:.3f} / {'–' if r[1] is None else f'{r[1]:.3f}'} / {r[2]:.3f}" for r in cells)
              + f" | {mean_f:.4f} |")
    top = max(g["mean_f"] for g in grid)
    # F cannot tell thresholds within TIE apart (one QUASI mention of val moves its recall by 0.006): the lowest
    # of them drops least, and a privacy tool takes the recall
    best = min((g for g in grid if g["mean_f"] >= top - TIE), key=lambda g: g["threshold"])
    print(f"one threshold: {best['threshold']:g}, judging {', '.join(best['types'])} "
          f"(mean F{args.beta:g} {best['mean_f']:.4f})")

    def passes(typ: str, t: float) -> bool:
        effects = [(k, *effect(k, {typ: t})) for k in dev]
        return any(n for _, n, _ in effects) and not any(costs_recall(res, base[k]) for k, _, res in effects)

    per_type = {typ: max(ok) for typ in sorted(JUDGED) if (ok := [t for t in GRID if passes(typ, t)])}
    cells = [effect(k, per_type)[1] for k in dev]
    per_type_f = float(np.mean([fbeta(r[0], r[2], args.beta) for r in cells]))
    print(f"per type: {', '.join(f'{k} {v:g}' for k, v in per_type.items())} (mean F{args.beta:g} {per_type_f:.4f}): "
          + " | ".join(f"{k} {r[0]:.3f} / {'–' if r[1] is None else f'{r[1]:.3f}'} / {r[2]:.3f}"
                       for k, r in zip(dev, cells)))
    one = {t: best["threshold"] for t in best["types"]}
    thresholds = per_type if per_type and per_type_f >= best["mean_f"] else one
    print(f"shipped: {'per-type thresholds' if thresholds is per_type else 'the one threshold'}")
    by_type = {}
    print("\nEach type judged alone at its threshold (spans dropped: precision / QUASI recall minus the judge-free):")
    print("| type | threshold | " + " | ".join(dev) + " | judged |")
    print("|---|---|" + "---|" * (len(dev) + 1))
    for typ in sorted(JUDGED):
        t = thresholds.get(typ, best["threshold"])
        cells_t = {}
        for k in dev:
            n, res = effect(k, {typ: t})
            cells_t[k] = {"dropped": n, "precision": res[0] - base[k][0], "QUASI": res[2] - base[k][2]}
        by_type[typ] = dict(cells_t, threshold=t)
        print(f"| {typ} | {t:g} | " + " | ".join(f"{v['dropped']}: {v['precision']:+.3f} / {v['QUASI']:+.3f}"
                                                for v in cells_t.values())
              + f" | {'yes' if typ in thresholds else 'no'} |")
    meta = {"trained": dt.date.today().isoformat(),
            "command": "python bench/train_judge.py " + " ".join(argv or sys.argv[1:]),
            "training_spans": int(len(y)), "kept_share": float(y.mean()), "sets": sorted(train),
            "sgd_dialogues": args.sgd_dialogues, "detector": args.model or "shipped", "c": args.c, "beta": args.beta,
            "tie": TIE, "judged": sorted(thresholds), "thresholds": thresholds,
            "one_threshold": {"threshold": best["threshold"], "types": best["types"], "mean_f": best["mean_f"]},
            "per_type": {"thresholds": per_type, "mean_f": per_type_f},
            "grid": grid, "by_type": by_type, "seconds": round(time.time() - began)}
    save(Path(args.out), model.coef_[0].astype(np.float32), float(model.intercept_[0]), best["threshold"], meta)
    if args.json:
        Path(args.json).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} in {time.time() - began:.0f} s")


if __name__ == "__main__":
    main()
