"""Command-line interface: the flags every command shares, defined once (one vocabulary on every command).

- ``-v/--verbose`` and ``-q/--quiet`` are accepted before or after the sub-command;
- ``--no-progress`` hides progress bars;
- list-valued flags (``--masker``, ``--methods``, ...) take their values repeated *and*
  space-separated with the same meaning (``nargs="+"`` with ``action="extend"``);
- ``--set COMPONENT.OPTION=VALUE`` sets a component's constructor option.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from veil.errors import VeilError


def count(text: str) -> int:
    """argparse type of a number of documents (``--limit``, ``--sample``): a whole number, 0 or more."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 <= n <= sys.maxsize:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to {sys.maxsize}, got {text}")
    return n


def add_shared(p: argparse.ArgumentParser) -> None:
    """Flags of every command (``SUPPRESS``: a sub-command's default does not undo ``veil -v COMMAND``)."""
    g = p.add_argument_group("shared options")
    g.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="debug logging, third-party messages and model-loading bars")
    g.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                   help="warnings and errors only, no progress bars")
    g.add_argument("--no-progress", action="store_true", default=argparse.SUPPRESS, help="no progress bars")


def add_list(p: Any, flag: str, default: Sequence[str] | None = None, metavar: str = "NAME",
             help: str = "", **kwargs: Any) -> None:
    """A list-valued flag: ``--flag A --flag B`` and ``--flag A B`` (and ``--flag A,B``) mean the same."""
    p.add_argument(flag, nargs="+", action="extend", default=None, metavar=metavar,
                   help=help + (f" (repeated or space-separated; default: {' '.join(default)})" if default else
                                " (repeated or space-separated)"), **kwargs)


def list_value(values: Sequence[str] | None, default: Sequence[str] | None = None) -> list[str]:
    """The values of a list flag, commas split too (``--methods a,b``), else ``default``."""
    if not values:
        return list(default or [])
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def add_maskers(p: Any, help: str = "maskers to combine (see `veil ls`)") -> None:
    from veil.run.components import DEFAULT_MASKERS

    add_list(p, "--masker", DEFAULT_MASKERS, help=help)


def maskers_of(args: argparse.Namespace) -> list[str]:
    from veil.run.components import DEFAULT_MASKERS

    return list_value(getattr(args, "masker", None), DEFAULT_MASKERS)


def add_terms_masker(names: Sequence[str], options: dict[str, dict[str, Any]],
                     terms_file: str | None) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """``--add-terms FILE``: the deny_list masker with the file's terms, after the chosen maskers.

    The terms themselves (not the path) go into the options, so a resumed run sees a changed file.
    """
    names, options = list(names), dict(options)
    if not terms_file:
        return names, options
    if "deny_list" in names:
        raise VeilError("--add-terms runs the deny_list masker itself; drop deny_list from --masker, or "
                        "give it --set deny_list.terms_file=FILE instead of --add-terms")
    from veil.mask.deny_list import read_terms

    terms = read_terms(terms_file)
    if not terms:
        raise VeilError(f"--add-terms {terms_file}: no terms in the file")
    options["deny_list"] = {"terms": dict(sorted(terms.items()))}
    return names + ["deny_list"], options


def add_set(p: Any, what: str = "MASKER") -> None:
    p.add_argument("--set", action="append", default=[], metavar=f"{what}.OPTION=VALUE", dest="set",
                   help=f"a {what.lower()} option, e.g. entity_tagger.labels=PERSON,ORG or dlp.min_score=0.6 "
                        "(repeatable; a comma makes a list; numbers and true/false are converted)")


def parse_value(raw: str) -> Any:
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    if "," in raw:
        return [v.strip() for v in raw.split(",") if v.strip()]
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return raw


def parse_options(items: Sequence[str], components: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``["dlp.min_score=0.6"]`` -> ``{"dlp": {"min_score": 0.6}}``; a component not run is an error."""
    options: dict[str, dict[str, Any]] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        component, dot, option = key.partition(".")
        if not eq or not dot or not option:
            raise VeilError(f"--set {item!r}: expected NAME.OPTION=VALUE")
        if component not in components:
            raise VeilError(f"--set {item!r}: {component!r} is not among the components run ({', '.join(components)})")
        options.setdefault(component, {})[option] = parse_value(raw)
    return options


def add_fields(p: Any, person: str | None = None, group: str | None = None) -> None:
    p.add_argument("--text-field", default="text", help="field holding the text (default: text)")
    p.add_argument("--id-field", default="id",
                   help="field holding the id; '' or a record without it: the record number (default: id)")
    p.add_argument("--person-field", default=person, help="field holding the person id (kept for audits)")
    p.add_argument("--group-field", default=group, help="field holding a group id (e.g. the conversation)")


def fields_of(args: argparse.Namespace) -> Any:
    from veil.io.formats import Fields

    return Fields(text=args.text_field, id=args.id_field or None, person=args.person_field, group=args.group_field)


def progress_of(args: argparse.Namespace) -> bool:
    return not (getattr(args, "no_progress", False) or getattr(args, "quiet", False))
