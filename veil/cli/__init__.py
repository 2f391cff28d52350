"""Command-line entry point: ``veil COMMAND ...``; each command lives in its own module here.

Only the chosen command's module is imported, and those modules import torch / spaCy inside
``run``, so ``veil --help`` stays fast. Errors a user can act on are one line (``veil CMD: error:
...``), never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import signal
import sys
from contextlib import contextmanager
from typing import Iterator

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
    "adapt": ("veil.cli.adapt", "fine-tune the detector on reviewed documents of your own corpus (veil review --export gold)"),
    "review": ("veil.cli.review", "review masked documents in the browser; export gold spans, missed PI, term lists"),
    "verify": ("veil.cli.verify", "check that no value the masking removed survives in a filled corpus"),
    "ls": ("veil.cli.ls", "list every registry (maskers, detectors, fillers, formats, LMs, PPMLM methods)"),
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("veil")
    except PackageNotFoundError:
        return "unknown"


class _VersionAction(argparse.Action):
    """``--version`` without reading package metadata unless asked (it costs start-up time)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print veil's version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"veil {_version()}")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    from veil.cli.common import add_shared

    parser = argparse.ArgumentParser(prog="veil", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action=_VersionAction)
    add_shared(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        if name == command:
            importlib.import_module(module).add_arguments(p)
            for q in parsers_of(p):
                add_shared(q)
    return parser


def parsers_of(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every sub-command parser below it (``veil audit risk``...)."""
    out = [parser]
    for action in parser._actions:  # argparse keeps sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += parsers_of(sub)
    return out


def configure_logging(verbose: bool, quiet: bool) -> None:
    """veil's own INFO lines by default; third-party INFO lines and model-loading bars only with ``-v``."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
        root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.WARNING)
    logging.getLogger("veil").setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
    if not verbose:
        # read by transformers / huggingface_hub / TensorFlow-style C++ logging when (if) they are imported
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        os.environ.setdefault("ONEDNN_VERBOSE", "0")
        import warnings

        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", category=UserWarning, module=r"(transformers|torch|spacy|thinc)\b")


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an exception so that every ``finally`` runs: temporary copies of the input
    are removed, the lock is released, a resumable run keeps its partial files."""


@contextmanager
def _terminate_cleanly() -> Iterator[None]:
    def on_term(signum: int, frame: object) -> None:
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread (an embedding program): leave its handlers alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupted(args: argparse.Namespace, e: KeyboardInterrupt) -> str:
    what = "terminated" if isinstance(e, Terminated) else "interrupted"
    if getattr(args, "output", None) == "-":
        return f"{what}; nothing was kept (standard output cannot be resumed): run the command again"
    return f"{what}; re-run the same command to resume"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(command if command in COMMANDS else None)
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    verbose, quiet = getattr(args, "verbose", False), getattr(args, "quiet", False)
    args.verbose, args.quiet = verbose, quiet
    args.no_progress = getattr(args, "no_progress", False) or quiet
    configure_logging(verbose, quiet)
    huge = [k for k, v in vars(args).items() if isinstance(v, int) and not isinstance(v, bool) and abs(v) > sys.maxsize]
    if huge:  # argparse's int() takes any size; the libraries behind the options do not
        print(f"veil {args.command}: error: --{huge[0].replace('_', '-')} is out of range", file=sys.stderr)
        return 2
    try:
        with _terminate_cleanly():
            return int(importlib.import_module(COMMANDS[args.command][0]).run(args) or 0)
    except VeilError as e:
        print(f"veil {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print(f"veil {args.command}: {_interrupted(args, e)}", file=sys.stderr)
        return 143 if isinstance(e, Terminated) else 130
    except UnicodeDecodeError as e:  # a text file the commands did not read strictly: still one line
        if verbose:
            raise
        print(f"veil {args.command}: error: a file is not valid UTF-8 ({e.reason} at byte {e.start}); re-encode it "
              "as UTF-8 (-v shows the traceback)", file=sys.stderr)
        return 2
    except OSError as e:  # a file problem the commands did not foresee: still one line, never a traceback
        if verbose:
            raise
        what = "the disk is full; free some space and re-run to resume" if e.errno == errno.ENOSPC else e.strerror
        print(f"veil {args.command}: error: {e.filename or ''}{': ' if e.filename else ''}{what or e} "
              "(-v shows the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
