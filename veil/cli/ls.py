"""CLI: ``veil ls`` lists every registry's entries."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    from veil import registry

    for reg in registry.ALL:
        print(f"{reg.kind}s: {', '.join(reg.names()) or '(none)'}")
    return 0
