"""Benchmark, audit stage: PPMLM vs its baselines on Switchboard (callers as persons), one command.

    .venv/bin/python bench/ppmlm_switchboard.py [--config experiments/audit_ppmlm_switchboard.yaml] [--KEY VALUE ...]

Reads the experiment file (each key a ``veil audit ppmlm`` option), lets ``--KEY VALUE`` pairs
override it, runs the audit and prints the JSON result; tables and plots land in the ``out`` folder.
Re-running resumes: finished methods are reused.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = REPO / "experiments" / "audit_ppmlm_switchboard.yaml"


def argv_from_config(cfg: dict, overrides: list[str]) -> list[str]:
    opts = {k: v for k, v in cfg.items()}
    it = iter(overrides)
    for key in it:
        if not key.startswith("--"):
            raise SystemExit(f"expected --KEY VALUE pairs, got {key!r}")
        opts[key[2:].replace("-", "_")] = next(it, None)
    corpus = opts.pop("corpus")
    argv = ["audit", "ppmlm", str((REPO / corpus) if not Path(corpus).is_absolute() else corpus), "--json"]
    for k, v in opts.items():
        if v is None:
            continue
        if k == "out" and not Path(str(v)).is_absolute():
            v = REPO / str(v)
        argv += [f"--{k.replace('_', '-')}", str(v)]
    return argv


def main(args: list[str]) -> int:
    import yaml

    from veil.cli import main as veil_main

    config = DEFAULT_CONFIG
    if args[:1] == ["--config"]:
        config, args = Path(args[1]), args[2:]
    cfg = yaml.safe_load(config.read_text())
    return veil_main(argv_from_config(cfg, args))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
