"""Corpus I/O stage: what is checked before any model loads (the input, its format, the output's format).

``input_file`` gives standard input as a file (a copy that dies with the process) so it can be checked
and then read.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator

from veil.errors import InputError, VeilError
from veil.io.formats import RESERVED_FIELDS, Fields, detect_format, group_key, id_of, iter_records, text_of


@dataclass
class InputSummary:
    path: str
    format: str
    records: int
    fingerprint: dict[str, Any]
    fields: list[str] = field(default_factory=list)
    with_markers: int = 0  # records whose text holds placeholder-like text; masked input: records with placeholders


def check_input(path: str | Path, fmt: str, fields: Fields, limit: int | None = None,
                reserved: Iterable[str] = (), drop: Iterable[str] = (), masked: bool = False,
                grouped: bool = False) -> InputSummary:
    """Read the whole input once, cheaply, and refuse it (one located line) before any model loads.

    Checks: readable, UTF-8, valid records, a string text field in every record (``null`` is an
    error, never silently ""), unique ids (``1`` and ``"1"`` are the same id), no input field that
    the output would overwrite (``reserved``), for masked input valid placeholders, and with
    ``grouped`` a group value in every record and contiguous groups (a group is one document).
    """
    from veil.io.output import input_fingerprint

    reserved = set(reserved) - set(drop) - {fields.text, fields.id}
    if fmt == "switchboard":  # documents are built by the reader (its ids are unique by construction)
        from veil.io.formats import read_documents

        n = sum(1 for _ in islice(read_documents(path, fmt, fields), limit))
        return InputSummary(str(path), fmt, n, input_fingerprint(path))
    from veil.io.formats import check_columns

    check_columns(path, fmt, drop)  # Parquet dates, binary, decimals: refused before the work
    groups = _GroupCheck(path, fields) if grouped else None
    # 8-byte digests, not the ids: ~60 bytes a record while checking, freed before any model loads
    seen: set[int] = set()
    names: dict[str, None] = {}
    from veil.markers import MARKER_RE

    n = with_markers = 0
    if masked:
        from veil.io.records import masked_records

        records = masked_records(path, fmt)
    else:
        records = iter_records(path, fmt)
    for number, (line, rec) in enumerate(islice(records, limit), 1):
        if masked:
            from veil.io.records import record_to_masked

            with_markers += bool(record_to_masked(rec, fields, path, line, number).placeholders)
        else:
            text = text_of(rec, fields, path, line)
            with_markers += "[" in text and MARKER_RE.search(text) is not None
        for k in rec:
            if k not in names:
                names[k] = None
                if k in reserved:
                    already = all(r in rec for r in RESERVED_FIELDS)
                    raise InputError(str(path), line, (
                        "is already masked (it has veil's fields placeholders and style); mask the original "
                        "corpus, or pass --drop-field placeholders --drop-field style to mask this text again "
                        "(its markers then stay user text, restored verbatim by veil fill)") if already else (
                        f"input field {k!r} would be overwritten by veil's output field of that name; rename it "
                        f"in the input or leave it out with --drop-field {k}"))
        doc_id = id_of(rec, fields, number)
        if groups is not None:
            groups.check(rec, line, doc_id)
        digest = int.from_bytes(hashlib.blake2b(doc_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")
        if digest in seen:
            first = next((i for i, (_, r) in enumerate(iter_records(path, fmt), 1)
                          if i < number and id_of(r, fields, i) == doc_id), None)
            if first is not None:  # (else two ids that share a digest: not a duplicate)
                raise InputError(str(path), line, f"id {doc_id!r} is the id of record {first} too (ids are "
                                 "compared as text: 1 and \"1\" are the same); make ids unique, or pass "
                                 "--id-field '' to number the records")
        seen.add(digest)
        n = number
    if n == 0:
        raise InputError(str(path), None, "no records to read")
    return InputSummary(str(path), fmt, n, input_fingerprint(path), list(names), with_markers)


@contextmanager
def input_file(path: str | Path) -> Iterator[Path]:
    """The input as a file; ``-`` (standard input) is copied first, so it can be checked before the work
    and read again for it: into a nameless file that dies with the process, however it ends
    (:mod:`veil.io.scratch`; a private folder removed on exit where the system has no ``/proc/self/fd``)."""
    if str(path) != "-":
        p = Path(path)
        if not p.exists():
            raise InputError(str(p), None, "no such file")
        yield p
        return
    from veil.io.scratch import anonymous_copy, private_dir

    anonymous = anonymous_copy(sys.stdin.buffer)
    tmpdir = None if anonymous else private_dir("veil-stdin-")
    tmp = anonymous[1] if anonymous else Path(tmpdir, "stdin")
    try:
        if tmpdir is not None:
            with open(tmp, "wb") as f:
                shutil.copyfileobj(sys.stdin.buffer, f)
        yield tmp
    except InputError as e:  # name standard input, not the copy's path
        if e.path != str(tmp):
            raise
        raise InputError("<stdin>", e.line, e.message) from None
    finally:
        if anonymous:
            anonymous[0].close()
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)


def input_format(path: str | Path, fmt: str | None) -> str:
    if str(path) == "-" and not fmt:
        return "jsonl"
    return detect_format(path, fmt)


def output_format(path: str | Path, fmt: str | None, default: str) -> str:
    if fmt:
        out = detect_format(path, fmt)
    elif str(path) == "-":
        out = default
    else:
        out = detect_format(path)
    if out == "switchboard":
        raise VeilError("Switchboard is an input format; write jsonl, txt, csv or parquet")
    return out




class _GroupCheck:
    """Every record has a group value and each group's records are contiguous (8-byte digests of the groups seen)."""

    def __init__(self, path: str | Path, fields: Fields) -> None:
        self.path, self.field = str(path), fields.group
        self.seen: set[bytes] = set()
        self.current: Any = None

    def check(self, rec: dict[str, Any], line: int, doc_id: str) -> None:
        value = rec.get(self.field)
        if value is None:
            raise InputError(self.path, line, f"record {doc_id!r} has no group field {self.field!r}; with "
                             "--group-field every record needs one")
        key = group_key(value)
        if key == self.current:
            return
        digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        if digest in self.seen:
            raise InputError(self.path, line, f"record {doc_id!r}: group {value!r} appears again after other groups; "
                             "the records of a group must be contiguous (sort the input by the group field)")
        self.seen.add(digest)
        self.current = key
