"""Experiment stage CLI: ``veil experiment run EXP.yaml --out DIR``, ``veil experiment gap EXP.yaml --out DIR``."""

from __future__ import annotations

import argparse

from veil.cli.common import count


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    r = sub.add_parser("run", help="run (or resume) an experiment file: mask, fill, adapt the LM, perplexity, report")
    r.add_argument("experiment", help="experiment file (YAML), e.g. experiments/ptb.yaml")
    r.add_argument("-o", "--output", "--out", dest="out", required=True, help="output folder (results.csv, results.md, report.html, cache/)")
    r.add_argument("--cache", help="stage cache folder (default OUT/cache; share one between experiments)")
    r.add_argument("--method", nargs="+", action="extend", help="run only these methods (repeated or space-separated)")
    r.add_argument("--technique", nargs="+", action="extend",
                   help="run only these techniques (repeated or space-separated)")
    r.add_argument("--train-limit", type=count, help="override train.limit")
    r.add_argument("--test-limit", type=count, help="override test.limit")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting of the file, dotted, value in YAML (e.g. lm.finetune_epochs=4, "
                        "pretrain.limit=10000)")
    from veil.run.executors import add_executor_arguments

    add_executor_arguments(r)
    g = sub.add_parser("gap", help="split the Baseline0 - Oracle gap of a finished run by word class (the words the "
                                   "technique masks vs the others)")
    g.add_argument("experiment", help="the experiment file the run used")
    g.add_argument("-o", "--output", "--out", dest="out", required=True, help="the run's output folder (results.csv with lm_dir)")
    g.add_argument("--cache", help="stage cache folder, if the run was given one")
    g.add_argument("--technique", nargs="+", action="extend",
                   help="techniques to analyse, repeated or space-separated (default: all in results.csv)")
    g.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="the same overrides as the run")
    g.add_argument("--word-vocab", type=int, metavar="N",
                   help="also give each method's gap recovered without the test words outside wordfreq's N most "
                        "frequent English words (what a word-level LM with an N-word vocabulary would measure; "
                        "the paper's has ~85K)")
    add_executor_arguments(g)


def run(args: argparse.Namespace) -> int:
    if args.action == "gap":
        return gap(args)
    from pathlib import Path

    from veil.errors import VeilError
    from veil.experiment.runner import ExperimentRunner
    from veil.experiment.spec import load_spec

    spec = load_spec(args.experiment, setters=args.set)
    if args.cache:
        spec.cache = Path(args.cache)
    for name in ("train_limit", "test_limit"):
        if getattr(args, name) == 0:
            raise VeilError(f"--{name.replace('_', '-')} must be at least 1")
    if args.train_limit:
        spec.train.limit = args.train_limit
    if args.test_limit:
        spec.test.limit = args.test_limit
    from veil.run.executors import executor_of

    runner = ExperimentRunner(spec, Path(args.out), progress=not args.no_progress,
                              only_methods=args.method, only_techniques=args.technique, executor=executor_of(args))
    runner.run()
    out = Path(args.out)
    print((out / "results.md").read_text(encoding="utf-8"))
    print(f"stages computed: {len(runner.cache.computed)}, reused: {len(runner.cache.reused)}")
    print(f"report: {(out / 'report.html').resolve()}")
    return 0


def gap(args: argparse.Namespace) -> int:
    import csv
    from pathlib import Path

    from veil.errors import VeilError
    from veil.experiment import gap as g
    from veil.experiment.runner import ExperimentRunner
    from veil.experiment.spec import load_spec
    from veil.run.executors import executor_of

    if args.word_vocab is not None and args.word_vocab < 1:
        raise VeilError("--word-vocab must be a positive number of words")

    spec = load_spec(args.experiment, setters=args.set)
    if args.cache:
        spec.cache = Path(args.cache)
    out = Path(args.out)
    techs = args.technique
    if not techs:
        if not (out / "results.csv").is_file():
            raise VeilError(f"{out / 'results.csv'}: no results; run `veil experiment run` first")
        with (out / "results.csv").open(encoding="utf-8") as f:
            techs = list(dict.fromkeys(r["technique"] for r in csv.DictReader(f) if r["technique"]))
    runner = ExperimentRunner(spec, out, progress=not args.no_progress, executor=executor_of(args))
    for t in techs:
        r = runner.gap(t, word_vocab=args.word_vocab)
        path = g.write(r, out)
        print(g.to_markdown(r))
        print(f"written: {path}")
    return 0
