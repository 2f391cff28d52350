"""Review command: ``veil review MASKED [--original ORIGINAL] [--group-field F] [--sample N --seed S --pick P]``.

Serves the review page (``veil.review.app``) on 127.0.0.1 with a random token in its URL until
interrupted; every decision goes at once to the review file beside MASKED (``MASKED.review.jsonl``,
``MASKED.review-NAME.jsonl`` with ``--reviewer NAME``). With a group field (``--group-field``, or the one
``veil mask`` recorded in ``MASKED.veil.json``) a page is a whole call and ``--sample`` counts calls;
``--pick uncertain`` samples what the tagger is least sure of (:mod:`veil.review.pick`).

The same command with ``--export`` writes what the review found instead of serving (documents marked
done only; never over an input, or a file no export wrote: ``--overwrite`` replaces an earlier export):

- ``--export gold -o GOLD.jsonl``: gold spans for ``veil eval-detect GOLD.jsonl --format review``;
- ``--export missed -o DIR``: the paper's ``(text)[MISSED_TAG]`` files for ``veil audit review import DIR``;
- ``--export terms -o FILE``: the missed PI for ``veil mask --add-terms FILE``;
- ``--export exclude -o FILE``: rejected masks for ``veil mask --exclude FILE``.

``--agreement FILE_A FILE_B`` compares two reviewers' files of MASKED.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from veil.errors import VeilError

EXPORTS = ("gold", "missed", "terms", "exclude")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from veil.cli.common import add_fields

    p.add_argument("masked", metavar="MASKED", help="a masked corpus as veil mask writes it (JSONL, CSV, Parquet)")
    p.add_argument("--original", metavar="ORIGINAL",
                   help="the corpus MASKED was masked from, shown beside it (documents pair by id); a resumed "
                        "review reuses the one it started with")
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="review a sample of N documents, or N calls with a group field (default: all)")
    p.add_argument("--pick", choices=("random", "uncertain"), default="random",
                   help="how --sample picks: random (seeded), or uncertain: what the neural tagger is least sure "
                        "of, covering the most distinct doubtful words, most useful first (needs --original)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    p.add_argument("--port", type=int, default=0, metavar="P", help="port to listen on (default: a free one)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; the token is the only "
                        "protection elsewhere)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--reviewer", metavar="NAME", help="review into MASKED.review-NAME.jsonl (one file per reviewer)")
    who.add_argument("--review-file", metavar="FILE", help="the review file (default: MASKED.review.jsonl)")
    p.add_argument("--export", choices=EXPORTS, help="write what the review found instead of serving the page")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="--export: the file (the folder for missed); never an input, never a file an export did "
                        "not write")
    p.add_argument("--overwrite", action="store_true",
                   help="--export: replace what an earlier export wrote at -o (nothing else is ever replaced)")
    p.add_argument("--type-map", nargs="+", action="extend", default=[], metavar="TYPE=INFOTYPE",
                   help="--export missed: score a reviewed type as this score-table tag (TYPE= leaves it unscored); "
                        "repeated or space-separated")
    p.add_argument("--agreement", nargs=2, metavar=("FILE_A", "FILE_B"),
                   help="report the agreement between two review files of MASKED")
    p.add_argument("--json", action="store_true", help="--export / --agreement: print one JSON object")
    p.add_argument("--format", "--input-format", dest="input_format", default=None,
                   help="format of MASKED (default: from the extension)")
    p.add_argument("--original-format", default=None, help="format of ORIGINAL (default: from the extension)")
    add_fields(p)


def _fields(args: argparse.Namespace) -> Any:
    """The record fields; without --group-field the one veil mask recorded for MASKED (--group-field '': none)."""
    from dataclasses import replace

    from veil.cli.common import fields_of
    from veil.io.output import recorded

    fields = fields_of(args)
    if args.group_field is None:
        got = (recorded(args.masked).get("fields") or {}).get("group")
        fields = replace(fields, group=got if isinstance(got, str) and got else None)
    elif not args.group_field:
        fields = replace(fields, group=None)
    return fields


def _print(args: argparse.Namespace, data: dict, text: str) -> None:
    if args.json:
        print(json.dumps(data))
    else:
        print(text)


def _export(args: argparse.Namespace) -> int:
    from veil.review import export
    from veil.review.session import review_path, reviewed

    if not args.output:
        raise VeilError("--export needs -o PATH")
    path = review_path(args.masked, args.reviewer, args.review_file)
    header, docs, states = reviewed(path, args.masked, args.original, _fields(args), args.input_format,
                                    args.original_format)
    reviewer = header.get("reviewer")
    # never written over: the files the review reads (as given and as the review file recorded them)
    inputs = [args.masked, args.original, header.get("masked"), header.get("original"), path]
    guard = {"inputs": inputs, "overwrite": args.overwrite}
    if args.export == "gold":
        n = export.export_gold(args.output, docs, states, reviewer, **guard)
        _print(args, n, f"wrote {n['documents']} reviewed documents ({n['spans']} gold spans, {n['missed']} of them "
                        f"missed by the masking; {n['rejected']} masks rejected) to {args.output}; score a masking "
                        f"with: veil eval-detect {args.output} --format review")
    elif args.export == "missed":
        from veil.audit.risk import default_table, parse_type_map

        table = default_table()
        res = export.export_missed(args.output, docs, states, header, parse_type_map(args.type_map, table), table,
                                   **guard)
        note = ""
        if res["unscored"]:
            kinds = ", ".join(f"{k} x{v}" for k, v in sorted(res["unscored"].items()))
            note = (f"\n{sum(res['unscored'].values())} missed piece(s) have a type with no score-table tag ({kinds}): "
                    "left unannotated (unscored); --type-map TYPE=INFOTYPE scores them")
        _print(args, res, f"wrote {res['documents']} reviewed documents with {res['missed']} missed piece(s) to "
                          f"{args.output}; score them with: veil audit review import {args.output}{note}")
    elif args.export == "terms":
        n = export.export_terms(args.output, docs, states, **guard)
        _print(args, {"terms": n}, f"wrote {n} terms to {args.output}; mask them next time with: "
                                   f"veil mask ... --add-terms {args.output}")
    else:
        n = export.export_exclude(args.output, docs, states, **guard)
        _print(args, {"terms": n}, f"wrote {n} never-mask terms to {args.output}; use them with: "
                                   f"veil mask ... --exclude {args.output}")
    return 0


def _agreement(args: argparse.Namespace) -> int:
    from pathlib import Path

    from veil.review.agreement import agreement, format_agreement
    from veil.review.session import reviewed

    file_a, file_b = args.agreement
    header_a, docs, a = reviewed(file_a, args.masked, None, _fields(args), args.input_format)
    header_b, _, b = reviewed(file_b, args.masked, None, _fields(args), args.input_format)
    if header_a.get("docs") != header_b.get("docs"):
        common = set(header_a.get("docs") or ()) & set(header_b.get("docs") or ())
        docs = [d for d in docs if d.masked.id in common]
    result = agreement(docs, a, b)
    name_a = header_a.get("reviewer") or Path(file_a).name
    name_b = header_b.get("reviewer") or Path(file_b).name
    _print(args, {"a": name_a, "b": name_b, **result}, format_agreement(result, name_a, name_b))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.export and args.agreement:
        raise VeilError("give --export or --agreement, not both")
    if args.export:
        return _export(args)
    if args.agreement:
        return _agreement(args)
    if args.output or args.type_map or args.json or args.overwrite:
        raise VeilError("-o, --overwrite, --type-map and --json go with --export (or --agreement)")
    if args.pick != "random" and args.sample is None:
        raise VeilError(f"--pick {args.pick} goes with --sample N (how many documents or calls to pick)")
    if not (0 <= args.port < 65536):
        raise VeilError("--port must be between 0 and 65535")
    from veil.review.app import serve
    from veil.review.pick import TaggerScorer
    from veil.review.session import ReviewSession

    session = ReviewSession(args.masked, args.original, sample=args.sample, seed=args.seed, reviewer=args.reviewer,
                            review_file=args.review_file, fields=_fields(args), masked_format=args.input_format,
                            original_format=args.original_format, pick=args.pick,
                            scorer=TaggerScorer(progress=sys.stderr.isatty()) if args.pick == "uncertain" else None)
    with session:
        summary = session.summary()

        def ready(url: str) -> None:
            if session.grouped:
                calls = summary["pages"]
                print(f"reviewing {len(calls)} calls ({summary['total']} documents, {sum(c['done'] for c in calls)} "
                      f"calls done) by {session.fields.group!r} into {session.path}", flush=True)
            else:
                print(f"reviewing {summary['total']} documents ({summary['done']} done) into {session.path}",
                      flush=True)
            print(url, flush=True)
            print("every decision is saved at once; Ctrl-C stops the server (run the same command to resume)",
                  file=sys.stderr, flush=True)

        if args.host not in ("127.0.0.1", "localhost", "::1"):
            print(f"warning: listening on {args.host}: anyone who can reach it and has the URL can read the "
                  "documents", file=sys.stderr)
        try:
            serve(session, args.host, args.port, on_ready=ready)
        except KeyboardInterrupt:  # the way to stop it: nothing is lost, so not an error
            pass
        done = session.summary()["done"]
    print(f"stopped: {done} of {summary['total']} documents done, saved in {session.path}", file=sys.stderr)
    return 0
