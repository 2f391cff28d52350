"""Command-line entry point: ``veil COMMAND ...``; each command lives in its own module here.

Only the chosen command's module is imported, and those modules import torch / spaCy inside
``run``, so ``veil --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from veil.errors import VeilError

# command -> (module, one-line help). One line per command.
COMMANDS: dict[str, tuple[str, str]] = {
    "mask": ("veil.cli.mask", "detect sensitive words and replace them with placeholders"),
    "eval-detect": ("veil.cli.eval_detect", "score masking against gold spans (TAB, Presidio synth, CoNLL/WNUT)"),
    "fill": ("veil.cli.fill", "replace every placeholder with a language model's substitute"),
    "finetune": ("veil.cli.finetune", "fine-tune a filler on the corpus (MLM, or LoRA for llm-instruct)"),
    "experiment": ("veil.cli.experiment", "run an experiment grid: mask, fill, adapt an LM, perplexity, report"),
    "audit": ("veil.cli.audit", "privacy audit: residual risk, identifiers, PPMLM, membership inference"),
    "train-detector": ("veil.cli.train_detector", "fine-tune the case-robust neural entity detector (token classification)"),
    "ls": ("veil.cli.ls", "list registered maskers, fillers, corpus formats and downstream LMs"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="veil", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        if name == command:
            importlib.import_module(module).add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(command if command in COMMANDS else None)
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    try:
        return int(importlib.import_module(COMMANDS[args.command][0]).run(args) or 0)
    except VeilError as e:
        print(f"veil {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"veil {args.command}: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
