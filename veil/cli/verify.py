"""Audit command: ``veil verify ORIGINAL FILLED [--masked MASKED] [--json] [--show-values]``.

Checks, document by document (a whole group with ``--group-field``, or the group field the masking
run recorded), that no value the masking removed appears in the filled corpus, its substitutions file
or the files veil wrote beside it, verbatim or normalised, spelled or spoken (:mod:`veil.audit.verify`);
also reports, with their pools, substitutes equal to an original value of their document.
Exit 0: clean; 1: a survivor, or more such substitutes than their pools explain; 2: a usage error.
The report gives positions and types, values only with ``--show-values``.
"""

from __future__ import annotations

import argparse
import json

from veil.errors import VeilError


def add_arguments(p: argparse.ArgumentParser) -> None:
    from veil.cli.common import add_fields, add_list, add_set

    p.add_argument("original", metavar="ORIGINAL", help="the corpus before masking")
    p.add_argument("filled", metavar="FILLED", help="the filled corpus to check (as veil fill writes it)")
    p.add_argument("--masked", metavar="MASKED",
                   help="the masked corpus FILLED was filled from: the removed values are exactly its placeholders' "
                        "original text. Without it ORIGINAL is masked again with --masker (default: veil's maskers)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--show-values", action="store_true",
                   help="print the surviving values themselves (default: positions and types only)")
    add_list(p, "--masker", help="without --masked: the maskers that find the values (default: veil's default)")
    add_set(p)
    p.add_argument("--exclude", default=None, metavar="FILE",
                   help="without --masked: never-mask list the masking run used, one entry a line")
    p.add_argument("--min-chars", type=int, default=2, metavar="N",
                   help="look only for values with at least N letters and digits (default 2)")
    add_list(p, "--skip-label", metavar="TYPE", help="do not look for values of these types (e.g. WORD)")
    p.add_argument("--format", "--original-format", dest="original_format", default=None,
                   help="format of ORIGINAL (default: from the extension)")
    p.add_argument("--filled-format", default=None, help="format of FILLED (default: from the extension)")
    p.add_argument("--masked-format", default=None, help="format of MASKED (default: from the extension)")
    add_fields(p, person="person")
    p.set_defaults(group_field=None)  # unset: the group field veil mask recorded beside MASKED (or fill beside FILLED)


def run(args: argparse.Namespace) -> int:
    from veil.audit.verify import format_report, verify
    from veil.cli.common import fields_of, list_value, maskers_of, parse_options

    if args.min_chars < 1:
        raise VeilError("--min-chars must be at least 1")
    for name in ("original", "filled", "masked"):
        if getattr(args, name) == "":
            raise VeilError(f"{'--masked' if name == 'masked' else name.upper()} is empty; give a corpus file")
    engine = None
    names = maskers_of(args)
    if args.masked is None:
        from veil.cli.mask import _exclude
        from veil.run.components import build_engine

        engine = build_engine(names, options=parse_options(args.set, names), exclude=_exclude(args))
    elif args.masker or args.set or args.exclude:
        raise VeilError("--masker, --set and --exclude are for verifying without --masked (the values then come "
                        "from masking ORIGINAL again)")
    report = verify(args.original, args.filled, args.masked, fields=fields_of(args),
                    original_format=args.original_format, filled_format=args.filled_format,
                    masked_format=args.masked_format, engine=engine, engine_name=" + ".join(names),
                    min_chars=args.min_chars, skip_labels=list_value(args.skip_label))
    if args.json:
        print(json.dumps(report.to_dict(args.show_values), ensure_ascii=False))
    else:
        print(format_report(report, args.show_values))
    return 0 if report.clean else 1
