"""Benchmarks: the task classifier's settings on Oracle text (which classifier, context, tag set), one table.

Trains the task stage of an experiment file on its original training utterances under each setting
given with ``--try`` (``key=value,key=value``; the experiment file's ``task:`` is the base) and
prints macro-F1 / accuracy on the experiment's test set and the wall time. Results are cached in the
experiment's cache like the runner's task stage, so a setting tried here is reused by a later run.

    python bench/task_choice.py experiments/switchboard_task.yaml \\
        --try classifier=tfidf,context=none --try classifier=tfidf --try epochs=2
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import yaml

from veil.cache import StageCache
from veil.experiment.runner import load_corpus
from veil.experiment.spec import Variant, load_spec
from veil.downstream.task.settings import TaskSettings
from veil.downstream.task.stage import TaskStage


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment")
    ap.add_argument("--try", dest="tries", action="append", default=[], help="key=value,... over the file's task:")
    ap.add_argument("--set", dest="setters", action="append", default=[], help="experiment file KEY=VALUE")
    args = ap.parse_args()
    spec = load_spec(args.experiment, setters=args.setters)
    base = spec.task or TaskSettings()
    cache = StageCache(spec.cache or Path("runs") / "cache")
    train, test = load_corpus(spec.train), load_corpus(spec.test)
    print(f"| setting | macro-F1 | accuracy | seconds |\n|---|---:|---:|---:|")
    for t in args.tries or [""]:
        changes = {k: yaml.safe_load(v) for k, _, v in (kv.partition("=") for kv in t.split(",") if kv)}
        s = TaskSettings.from_dict({**dataclasses.asdict(base), **changes})
        t0 = time.time()
        cols = TaskStage(s, cache, train, test, spec.seed, progress=False).columns(
            "oracle", Variant("oracle", "original"), [d.text for d in train])
        print(f"| {t or 'as in the file'} | {100 * cols['da_macro_f1']:.1f} | {100 * cols['da_accuracy']:.1f} | "
              f"{time.time() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
