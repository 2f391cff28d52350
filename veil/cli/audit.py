"""CLI: ``veil audit {risk,identifiers,ppmlm,...}``; each sub-command lives in its own module."""

from __future__ import annotations

import argparse
import importlib

# sub-command -> (module with add_arguments / run, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "risk": ("veil.cli.audit_risk", "residual-risk score of what the masking missed (Dialpad infoType scores)"),
    "review": ("veil.cli.audit_review", "export a sample for manual review / import reviewed files"),
    "identifiers": ("veil.cli.audit_identifiers", "direct and indirect identifiers (person-word graph)"),
    "ppmlm": ("veil.cli.audit_ppmlm", "privacy-preserving MLM fine-tuning, utility, privacy, membership inference"),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="audit_command", metavar="AUDIT_COMMAND", required=True)
    # The sub-command modules import torch / spaCy only inside ``run``, so importing them all is cheap.
    for name, (module, help_) in SUBCOMMANDS.items():
        importlib.import_module(module).add_arguments(sub.add_parser(name, help=help_, description=help_))


def run(args: argparse.Namespace) -> int:
    return int(importlib.import_module(SUBCOMMANDS[args.audit_command][0]).run(args) or 0)
