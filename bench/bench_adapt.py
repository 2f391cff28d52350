"""Benchmarks: what a reviewer's time buys, simulated from gold: review N documents of a new domain, adapt, score the rest.

    .venv/bin/python bench/bench_adapt.py [--data ../shared/data] [--domains orders sgd:Flights]
        [--sizes 10 30 100] [--picks uncertain random] [--steps 0] [--threads 2] [--config KEY=VALUE ...]
        [--base-at 30] [--base-picks uncertain random] [--base-sets ...] [--seeds 0 1 2] [--json out.json]

For each domain, each way of picking (``uncertain``: the tagger's least decided documents covering the most
distinct doubtful words; ``random``) and each number of reviewed documents, the simulated reviewer marks the
picked documents exactly as their gold says; ``veil.mask.neural.adapt.adapt`` fine-tunes the shipped detector on
them; the default masking (``neural_tagger`` + ``dlp``) with the adapted detector is scored on the documents not
reviewed: word precision (OPTIONAL mentions allowed), DIRECT and QUASI mention recall (``veil.mask.evaluate``).
Beside it, the same with the review's term lists (``--exclude``: the masks rejected in the reviewed documents
and kept nowhere in them; ``--add-terms``: the gold mentions the base masking missed there), as a user passes
them to ``veil mask``. At ``--base-at`` sizes the adapted detector is also scored on the base sets (real calls
dev: switchboard_pii val; TAB dev; the Presidio synthetic held-out records) to show what adapting cost there.

Domains: ``orders`` (bench/data/orders_gold.jsonl: 20 coffee-shop and pizza ordering dialogues, 154 utterances
annotated by switchboard_pii's GUIDELINES.md: customers' names DIRECT, menu words not personal, brands and shop
names OPTIONAL) and ``sgd:FAMILY`` (the SGD dev dialogues of one service family, slots typed by
``slot_classes.json``; the shipped detector never trained on SGD). A document is an utterance (a turn).

The documents are picked by ``veil.review.pick.pick_documents`` (what ``veil review --sample N --pick`` runs), the
uncertain pick with its default scorer, the shipped tagger; ``pick`` (:func:`run`) replaces it in tests.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from veil.mask.evaluate import evaluate  # noqa: E402
from veil.mask.gold import GoldDocument, read_gold  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
ORDERS = REPO / "bench" / "data" / "orders_gold.jsonl"
BASE_SETS = {"real calls dev": ("switchboard_pii/val_gold.jsonl", "switchboard_pii"),
             "TAB dev": ("tab/tab_train_dev.jsonl", "tab"),
             "Presidio held-out": ("presidio_synth/synth_dataset_v2_first750.json", "presidio")}


def domain(name: str, data: Path) -> list[GoldDocument]:
    if name == "orders":
        return read_gold(ORDERS, "switchboard_pii")
    if name.startswith("sgd:"):
        from veil.mask.gold import read_sgd

        return read_sgd(data / "sgd" / "dev.jsonl.gz", services=name[4:])
    raise SystemExit(f"unknown domain {name!r} (orders or sgd:FAMILY)")


def base_set(name: str, data: Path) -> tuple[list[GoldDocument], str]:
    path, fmt = BASE_SETS[name]
    golds = read_gold(data / path, fmt)
    if fmt == "tab":
        golds = [g for g in golds if g.doc.meta.get("dataset_type") == "dev"]
    if fmt == "presidio":
        from veil.mask.gold import presidio_held_out

        golds = presidio_held_out(golds)
    return golds, fmt


#: the span judge's setting for every engine of the bench (``--judge``)
JUDGE = {"judge": "default"}


def engine(model: str | None, threads: int, exclude: list[str] = (), terms: dict[str, str] | None = None) -> Any:
    from veil.run.components import DEFAULT_MASKERS, build_engine

    names = list(DEFAULT_MASKERS)
    options: dict[str, dict] = {"neural_tagger": {"threads": threads, **JUDGE, **({"model": model} if model else {})}}
    if terms:
        names.append("deny_list")
        options["deny_list"] = {"terms": terms}
    return build_engine(names, options=options, exclude=exclude)


def scores(golds: list[GoldDocument], spans: list, fmt: str) -> dict[str, Any]:
    r = evaluate(golds, spans, fmt)
    if "DIRECT" in r:
        return {"precision": r["precision"], "DIRECT": r["DIRECT"]["mention_recall"],
                "QUASI": r["QUASI"]["mention_recall"]}
    return {"precision": r["precision"], "recall": r["overall"]["mention_recall"],
            "PERSON": (r["per_type"].get("PERSON") or {}).get("mention_recall")}


def review_lists(reviewed: list[GoldDocument], base_spans: list) -> tuple[list[str], dict[str, str]]:
    """What the review page would export for these documents: ``--exclude`` (masked words outside every gold
    mention, kept nowhere in the reviewed documents) and ``--add-terms`` (DIRECT / QUASI gold mentions the base
    masking left, with their veil label)."""
    from veil.mask.coverage import Coverage
    from veil.mask.neural.adapt import GOLD_TO_TYPE
    from veil.mask.neural.data import TYPE_TO_LABEL
    from veil.textutil import normalise_surface

    rejected: dict[str, str] = {}
    kept: set[str] = set()
    terms: dict[str, str] = {}
    for gd, spans in zip(reviewed, base_spans):
        text = gd.doc.text
        for sp in spans:
            key = normalise_surface(text[sp.start:sp.end])
            if any(g.start < sp.end and sp.start < g.end for g in gd.spans):
                kept.add(key)
            elif key:
                rejected.setdefault(key, " ".join(text[sp.start:sp.end].split()))
        cov = Coverage(text, spans)
        for g in gd.spans:
            kept.add(normalise_surface(text[g.start:g.end]))
            kind = GOLD_TO_TYPE.get(g.label)
            if g.identifier_type in ("DIRECT", "QUASI") and kind and not cov.is_covered(g.start, g.end):
                terms.setdefault(" ".join(text[g.start:g.end].split()), TYPE_TO_LABEL[kind])
    return sorted(v for k, v in rejected.items() if k not in kept), terms


def run(args: argparse.Namespace, pick: Callable[..., list[int]] | None = None) -> dict[str, Any]:
    from veil.mask.neural.adapt import AdaptConfig, adapt
    from veil.review.pick import TaggerScorer, pick_documents

    pick = pick or pick_documents
    data = Path(args.data)
    out: dict[str, Any] = {"domains": {}, "base_sets": {}}
    base_golds = {name: base_set(name, data) for name in args.base_sets}
    for name, (golds, fmt) in base_golds.items():
        out["base_sets"][name] = {"base": scores(golds, engine(None, args.threads).detect([g.doc for g in golds]), fmt)}
        print(name, "base", out["base_sets"][name]["base"], flush=True)
    scorer = TaggerScorer(threads=args.threads)
    for dname in args.domains:
        docs = domain(dname, data)
        base_spans = engine(None, args.threads).detect([g.doc for g in docs])
        res: dict[str, Any] = {"documents": len(docs), "base": scores(docs, base_spans, "switchboard_pii"),
                               "runs": []}
        out["domains"][dname] = res
        print(dname, len(docs), "documents; base", res["base"], flush=True)
        for how in args.picks:
            for n, seed in ((n, seed) for n in args.sizes for seed in args.seeds):
                chosen = pick([g.doc.text for g in docs], n, how, seed, scorer)
                picked = set(chosen)
                reviewed = [docs[i] for i in chosen]
                rest = [g for i, g in enumerate(docs) if i not in picked]
                rest_base = [s for i, s in enumerate(base_spans) if i not in picked]
                exclude, terms = review_lists(reviewed, [base_spans[i] for i in chosen])
                row: dict[str, Any] = {"pick": how, "reviewed": n, "seed": seed, "rest": len(rest),
                                       "base_on_rest": scores(rest, rest_base, "switchboard_pii"),
                                       "base_with_lists": scores(rest, engine(None, args.threads, exclude, terms)
                                                                 .detect([g.doc for g in rest]), "switchboard_pii"),
                                       "excluded_terms": len(exclude), "added_terms": len(terms)}
                with tempfile.TemporaryDirectory() as tmp:
                    t0 = time.time()
                    record = adapt(reviewed, Path(tmp) / "det", config=AdaptConfig(**{"steps": args.steps, "seed": seed,
                                                                       "threads": args.threads, **overrides(args)}),
                                   add_terms=terms, exclude=exclude, progress=False)
                    row["adapt_seconds"] = round(time.time() - t0, 1)
                    row["steps"] = record["steps"]
                    model = str(Path(tmp) / "det")
                    row["adapted"] = scores(rest, engine(model, args.threads).detect([g.doc for g in rest]),
                                            "switchboard_pii")
                    row["adapted_with_lists"] = scores(rest, engine(model, args.threads, exclude, terms)
                                                       .detect([g.doc for g in rest]), "switchboard_pii")
                    if n in args.base_at and how in args.base_picks:
                        row["base_sets"] = {b: scores(g, engine(model, args.threads).detect([x.doc for x in g]), f)
                                            for b, (g, f) in base_golds.items()}
                    from veil.mask.neural.tagger import load_detector

                    load_detector.cache_clear()
                res["runs"].append(row)
                print(json.dumps(row), flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")
    return out


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """``--config anchor=0.01 distil=0``: AdaptConfig fields, typed as their defaults."""
    from dataclasses import fields

    from veil.mask.neural.adapt import AdaptConfig

    types = {f.name: type(getattr(AdaptConfig(), f.name)) for f in fields(AdaptConfig)}
    out = {}
    for item in args.config:
        key, _, value = item.partition("=")
        if key not in types:
            raise SystemExit(f"--config: {key!r} is not a setting of AdaptConfig ({', '.join(types)})")
        out[key] = types[key](value)
    return out


def f3(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def mean_std(xs: list[float | None]) -> str:
    """``0.812`` for one value, ``0.812 ± 0.031`` for several (sample std), ``-`` when none is defined."""
    from veil.numeric import sample_std

    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    std = sample_std(xs)
    return f3(sum(xs) / len(xs)) + ("" if std is None else f" ± {std:.3f}")


def grouped(runs: list[dict]) -> list[list[dict]]:
    """Runs of one pick and size (their seeds) together, in the order first met."""
    out: dict[tuple, list[dict]] = {}
    for r in runs:
        out.setdefault((r["pick"], r["reviewed"]), []).append(r)
    return list(out.values())


def markdown(out: dict[str, Any], command: str, seconds: float) -> str:
    lines = [f"Measured {dt.date.today().isoformat()}: `{command}` ({seconds / 60:.0f} min).", ""]
    for dname, res in out["domains"].items():
        b = res["base"]
        lines += [f"**{dname}** ({res['documents']} documents; shipped detector on all of them: precision "
                  f"{f3(b['precision'])}, DIRECT {f3(b['DIRECT'])}, QUASI {f3(b['QUASI'])})", "",
                  "| pick | reviewed | seeds | shipped on the rest: P / DIRECT / QUASI | + review lists | adapted | "
                  "adapted + lists | adapt s |", "|---|---|---|---|---|---|---|---|"]
        for runs in grouped(res["runs"]):
            def cell(key: str) -> str:
                return " / ".join(mean_std([r[key][k] for r in runs]) for k in ("precision", "DIRECT", "QUASI"))
            lines.append(f"| {runs[0]['pick']} | {runs[0]['reviewed']} | {len(runs)} | {cell('base_on_rest')} | "
                         f"{cell('base_with_lists')} | {cell('adapted')} | {cell('adapted_with_lists')} | "
                         f"{sum(r['adapt_seconds'] for r in runs) / len(runs):.0f} |")
        lines.append("")
    rows = [(d, runs) for d, res in out["domains"].items() for runs in grouped(res["runs"]) if runs[0].get("base_sets")]
    if rows:
        names = list(out["base_sets"])
        lines += ["Base sets after adapting (precision / DIRECT / QUASI; Presidio: precision / recall / PERSON; "
                  "mean ± std over seeds):", "", "| detector | seeds | " + " | ".join(names) + " |",
                  "|---|---|" + "---|" * len(names)]
        lines.append("| shipped | | " + " | ".join(" / ".join(f3(v) for v in out["base_sets"][b]["base"].values())
                                                  for b in names) + " |")
        for d, runs in rows:
            cells = [" / ".join(mean_std([r["base_sets"][b][k] for r in runs if b in r["base_sets"]])
                                for k in out["base_sets"][b]["base"]) for b in names]
            lines.append(f"| {d}, {runs[0]['pick']} {runs[0]['reviewed']} | {len(runs)} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    p.add_argument("--domains", nargs="+", default=["orders", "sgd:Flights"])
    p.add_argument("--sizes", nargs="+", type=int, default=[10, 30, 100])
    p.add_argument("--picks", nargs="+", default=["uncertain", "random"])
    p.add_argument("--base-at", nargs="*", type=int, default=[30], help="sizes whose adapted detector is also scored "
                                                                          "on the base sets")
    p.add_argument("--base-picks", nargs="*", default=["uncertain", "random"],
                   help="picks whose adapted detectors are scored on the base sets")
    p.add_argument("--base-sets", nargs="*", default=list(BASE_SETS))
    p.add_argument("--steps", type=int, default=0, help="adapt steps (0: veil adapt's own choice)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                   help="other veil adapt settings (AdaptConfig), e.g. anchor=0.01 distil=0")
    p.add_argument("--seeds", nargs="+", type=int, default=[0],
                   help="adaptation seeds (also the random pick's); tables give mean ± std over them")
    p.add_argument("--judge", default="default", help="the neural tagger's span judge: default, off or a folder")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    JUDGE["judge"] = args.judge
    t0 = time.time()
    out = run(args)
    print(markdown(out, "python bench/bench_adapt.py " + " ".join(sys.argv[1:]), time.time() - t0))


if __name__ == "__main__":
    main()
