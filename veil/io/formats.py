"""Corpus I/O stage: streaming readers for plain text, JSONL, CSV, Parquet and Switchboard transcripts.

Every reader yields ``Document`` objects one at a time (memory does not grow with corpus size)
and reports bad input as ``InputError`` naming the file and line. No record is ever dropped,
merged or truncated: an empty line of a text file is a document with empty text.
"""

from __future__ import annotations

import csv
import gzip
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, TypeVar

from veil.errors import InputError, VeilError
from veil.types import Document

log = logging.getLogger(__name__)
T = TypeVar("T")

FORMATS = ("txt", "jsonl", "csv", "parquet", "switchboard")
_EXTENSIONS = {".txt": "txt", ".text": "txt", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
               ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def detect_format(path: str | Path, fmt: str | None = None) -> str:
    """The format named by ``fmt``, else guessed from the extension (a directory is Switchboard; ``.gz`` is the
    format of the name under it, ``corpus.txt.gz`` a gzipped text)."""
    if fmt:
        if fmt not in FORMATS:
            raise VeilError(f"unknown corpus format {fmt!r}; choose from {', '.join(FORMATS)}")
        return fmt
    p = Path(path)
    if p.is_dir():
        return "switchboard"
    suffix = Path(p.stem).suffix if p.suffix.lower() == ".gz" else p.suffix
    try:
        return _EXTENSIONS[suffix.lower()]
    except KeyError:
        raise VeilError(f"{path}: cannot tell the format from the extension {p.suffix!r}; "
                        f"pass --format / --output-format ({', '.join(FORMATS)})") from None


@dataclass
class Fields:
    """Which record fields hold the id, text, person and group (JSONL, CSV, Parquet)."""

    text: str = "text"
    id: str | None = "id"  # None: the 1-based record number is the id
    person: str | None = None
    group: str | None = None


def iter_lines(path: str | Path, keep_ends: bool = False) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its end-of-line) of a UTF-8 file (gzipped: ``.gz``), strictly decoded.

    ``keep_ends``: the line with its end-of-line (CRLF or LF), for the CSV reader, where a
    line break inside a quoted cell is part of the cell."""
    path = Path(path)
    if path.is_dir():
        raise InputError(str(path), None, "is a folder; give a corpus file")
    try:
        f = gzip.open(path, "rb") if path.suffix.lower() == ".gz" else open(path, "rb")
    except FileNotFoundError:
        raise InputError(str(path), None, "no such file") from None
    except OSError as e:
        raise InputError(str(path), None, f"cannot open: {e.strerror}") from None
    with f:
        n = 0
        for n, raw in enumerate(f, 1):
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte-order mark (spreadsheet exports) is not part of the first field
            if raw.endswith(b"\n") and not keep_ends:
                raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
            try:
                yield n, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(str(path), n, f"invalid UTF-8 at byte {e.start} of the line "
                                 f"({raw[max(0, e.start - 10):e.start + 10]!r}); re-encode the file as UTF-8") from None
        if n == 0:
            raise InputError(str(path), None, "empty file: no records to read")


def read_text(path: str | Path, what: str = "file") -> str:
    """A whole UTF-8 text file (a word list, a score table); a missing, unreadable or non-UTF-8 file is one
    located line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(str(path), None, f"no such {what}") from None
    except IsADirectoryError:
        raise InputError(str(path), None, f"is a folder; give a {what}") from None
    except OSError as e:
        raise InputError(str(path), None, f"cannot read: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(str(path), data[:e.start].count(b"\n") + 1, f"not valid UTF-8 ({e.reason}); re-encode "
                         "the file as UTF-8") from None


def _check_nonempty_path(path: Path) -> None:
    if not path.exists():
        raise InputError(str(path), None, "no such file")


#: fields veil writes into a masked record; an input field of that name would be overwritten
RESERVED_FIELDS = ("placeholders", "style")


def read_txt(path: str | Path, fields: Fields | None = None) -> Iterator[Document]:
    """One document per line; the id is the line number."""
    for n, line in iter_lines(path):
        yield Document(id=str(n), text=line)


def iter_records(path: str | Path, fmt: str) -> Iterator[tuple[int, Any]]:
    """(line or record number for messages, raw record) of a JSONL, CSV, Parquet or text file, streamed."""
    path = Path(path)
    if fmt == "txt":
        for n, line in iter_lines(path):
            yield n, {"id": n, "text": line}
    elif fmt == "jsonl":
        for n, line in iter_lines(path):
            if not line.strip():
                raise InputError(str(path), n, "empty line: every line of a JSONL file must be a JSON object")
            try:
                yield n, _JSON.decode(line)
            except json.JSONDecodeError as e:
                raise InputError(str(path), n, f"invalid JSON ({e.msg} at column {e.colno})") from None
            except _NotJSON as e:
                raise InputError(str(path), n, str(e)) from None
    elif fmt == "csv":
        yield from _csv_records(path)
    elif fmt == "parquet":
        yield from _parquet_records(path)
    else:
        raise VeilError(f"{path}: records cannot be read from format {fmt!r}")


class _NotJSON(ValueError):
    """What Python's JSON reader accepts and JSON does not: it could not be written back as read."""


def _no_constant(name: str) -> Any:
    raise _NotJSON(f"{name} is not valid JSON (JSON has no NaN or Infinity; write null or a string), so it "
                   "could not be written back as read")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _NotJSON(f"field {dup!r} appears twice in one object; only one value could be kept: rename one")
    return obj


#: the JSONL reader: refuses what it could not write back (NaN / Infinity, a key given twice)
_JSON = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=_no_constant)


def _csv_records(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """A header row, then one record per row (quoted cells may span lines; errors name the row's first line).

    A blank line is a record with empty text when the file has one column, otherwise an error:
    ``csv.DictReader`` would skip it silently, which would drop a record.
    """
    csv.field_size_limit(sys.maxsize)  # lines of several MB are legitimate documents
    # lines keep their ends: "\r\n" inside a quoted cell is the cell's, and comes back as it was
    reader = csv.reader(line if line.endswith("\n") else line + "\n" for _, line in iter_lines(path, keep_ends=True))
    header = next(reader, None)
    if not header or header == [""]:
        raise InputError(str(path), 1, "no header row (the first line must name the columns)")
    dup = _duplicate(header)
    if dup is not None:
        raise InputError(str(path), 1, f"column {dup!r} appears twice in the header; one of them would be lost: "
                         "rename it")
    last = reader.line_num
    for row in reader:
        first, last = last + 1, reader.line_num
        if not row and len(header) == 1:
            row = [""]
        if len(row) != len(header):
            what = "an empty line" if not row else f"{len(row)} cells"
            raise InputError(str(path), first, f"{what} for {len(header)} columns ({', '.join(header)})")
        yield first, dict(zip(header, row))


def _duplicate(names: Iterable[str]) -> str | None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def _parquet_file(path: Path) -> Any:
    import pyarrow.parquet as pq

    _check_nonempty_path(path)
    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises several types for a corrupt file
        raise InputError(str(path), None, f"not a readable Parquet file: {e}") from None
    dup = _duplicate(pf.schema_arrow.names)
    if dup is not None:
        raise InputError(str(path), None, f"column {dup!r} appears twice; one of them would be lost: rename it")
    return pf


def _writable_type(t: Any) -> bool:
    """Whether veil writes values of Arrow type ``t`` back as they were read: text, numbers, booleans,
    nulls, and lists / structs / maps of them (nested values: JSON text in CSV and Parquet)."""
    import pyarrow.types as pt

    if pt.is_dictionary(t):
        return _writable_type(t.value_type)
    if pt.is_list(t) or pt.is_large_list(t) or pt.is_fixed_size_list(t):
        return _writable_type(t.value_type)
    if pt.is_struct(t):
        return all(_writable_type(t.field(i).type) for i in range(t.num_fields))
    if pt.is_map(t):
        return _writable_type(t.key_type) and _writable_type(t.item_type)
    return (pt.is_string(t) or pt.is_large_string(t) or pt.is_integer(t) or pt.is_floating(t) or pt.is_boolean(t)
            or pt.is_null(t))


def check_columns(path: str | Path, fmt: str, skip: Iterable[str] = ()) -> None:
    """Refuse, before any work, columns whose values veil could not write back as read: Parquet
    timestamps, dates, times, durations, binary and decimal columns (``skip``: fields left out of the
    output, e.g. ``--drop-field``). CSV and JSONL hold only text, numbers and nested JSON."""
    if fmt != "parquet":
        return
    skip = set(skip)
    schema = _parquet_file(Path(path)).schema_arrow
    bad = [f"{f.name} ({f.type})" for f in schema if f.name not in skip and not _writable_type(f.type)]
    if bad:
        raise InputError(str(path), None, f"column(s) {', '.join(bad)} hold values veil cannot write back as read "
                         "(dates, times, binary, decimals); cast them to strings (e.g. with pyarrow or pandas), "
                         "or leave them out with --drop-field")


def _parquet_records(path: Path, batch_size: int = 1024) -> Iterator[tuple[int, dict[str, Any]]]:
    pf = _parquet_file(path)
    n = 0
    for batch in pf.iter_batches(batch_size=batch_size):
        for rec in batch.to_pylist():
            n += 1
            yield n, rec
    if n == 0:
        raise InputError(str(path), None, "empty file: no records to read")


def text_of(rec: Any, fields: Fields, path: str | Path, n: int | None) -> str:
    """The record's text field, or a located error: missing, null (never silently "") or not a string."""
    if not isinstance(rec, dict):
        raise InputError(str(path), n, f"expected a JSON object, got {type(rec).__name__}")
    if fields.text not in rec:
        raise InputError(str(path), n, f"missing text field {fields.text!r} (fields present: "
                         f"{', '.join(map(str, rec)) or 'none'}); choose it with --text-field")
    text = rec[fields.text]
    if text is None:
        raise InputError(str(path), n, f"field {fields.text!r} is null; give every record a string "
                         "(\"\" for an empty document) or drop the record")
    if not isinstance(text, str):
        raise InputError(str(path), n, f"field {fields.text!r} must be a string, got {type(text).__name__}")
    return text


def id_of(rec: dict[str, Any], fields: Fields, number: int) -> str:
    """The record's id; a record without one is numbered (1-based record number)."""
    if fields.id and rec.get(fields.id) is not None:
        return str(rec[fields.id])
    return str(number)


def group_key(value: Any) -> str:
    """What tells groups apart: a string group is itself, any other value (a number, a boolean) its JSON
    with a prefix no string has, so ``1`` and ``"1"`` are two groups and each is written back as it was read."""
    if isinstance(value, str):
        return value
    return "\x00" + json.dumps(value, sort_keys=True, default=str)


def record_to_document(rec: Any, fields: Fields, path: str | Path, n: int | None, number: int) -> Document:
    text = text_of(rec, fields, path, n)
    person = rec.get(fields.person) if fields.person else None
    group = rec.get(fields.group) if fields.group else None
    used = {fields.text, fields.id, fields.person, fields.group}
    meta = {k: v for k, v in rec.items() if k not in used}
    return Document(id=id_of(rec, fields, number), text=text, person=None if person is None else str(person),
                    group=group, meta=meta)


def _read_records(fmt: str) -> Any:
    def read(path: str | Path, fields: Fields | None = None) -> Iterator[Document]:
        fields = fields or Fields()
        for number, (n, rec) in enumerate(iter_records(path, fmt), 1):
            yield record_to_document(rec, fields, path, n, number)
    read.__name__ = f"read_{fmt}"
    read.__doc__ = f"Stream the documents of a {fmt.upper()} corpus (a record without an id is numbered)."
    return read


read_jsonl = _read_records("jsonl")
read_csv = _read_records("csv")
read_parquet = _read_records("parquet")


def _switchboard_callers(speakers: Path) -> dict[tuple[str, str], str]:
    """(conversation, side A/B) -> caller id, from the corpus documentation's ``call_con_tab.csv``."""
    callers: dict[tuple[str, str], str] = {}
    reader = csv.reader(line + "\n" for _, line in iter_lines(speakers))
    header = [h.strip() for h in next(reader, [])]
    cols = ("id_conv", "id_caller", "id_speaker")
    if any(c not in header for c in cols):
        raise InputError(str(speakers), 1, f"a Switchboard speakers table needs the columns {', '.join(cols)} "
                         f"(found: {', '.join(header) or 'none'})")
    idx = [header.index(c) for c in cols]
    for row in reader:
        if not row:
            continue  # a blank line in a lookup table is not a record of the corpus
        if len(row) <= max(idx):
            raise InputError(str(speakers), reader.line_num, f"{len(row)} cells, expected at least {max(idx) + 1}")
        conv, side, speaker = (row[i].strip() for i in idx)
        callers[(conv, side)] = speaker
    return callers


def read_switchboard(path: str | Path, fields: Fields | None = None,
                     speakers: str | Path | None = None, require_person: bool = False) -> Iterator[Document]:
    """SwDA transcripts: a directory of ``CONV.txt`` files of ``Speaker|Utterance|DA-tag`` lines.

    One document per utterance, id ``CONV:SIDE:LINE``, group = conversation, person = the caller
    from ``call_con_tab.csv`` (default: ``../speakers/call_con_tab.csv`` beside the directory).
    ``require_person`` (the per-person audits): a missing speakers table or a conversation side
    it does not list is an error, since an utterance without its caller would be audited wrongly.
    """
    path = Path(path)
    if path.is_dir() and not any(path.glob("*.txt")) and (path / "train").is_dir():
        path = path / "train"  # the corpus root (train/, val/, speakers/) means its training split
    files = sorted(path.glob("*.txt")) if path.is_dir() else [path]
    if not files:
        raise InputError(str(path), None, "no Switchboard *.txt files found")
    if speakers is None:
        guess = (path if path.is_dir() else path.parent).parent / "speakers" / "call_con_tab.csv"
        speakers = guess if guess.exists() else None
    if speakers:
        callers = _switchboard_callers(Path(speakers))
    elif require_person:
        raise InputError(str(path), None, "no speakers/call_con_tab.csv found beside the corpus; name it with --speakers")
    else:
        callers = {}
        log.warning("%s: no speakers/call_con_tab.csv found beside the corpus (give --speakers); "
                    "documents get no person", path)
    for file in files:
        conv = file.stem
        for n, line in iter_lines(file):
            if not line.strip():
                continue  # a blank line between utterances is no utterance
            parts = line.split("|")
            if len(parts) < 3:
                raise InputError(str(file), n, "expected 'Speaker|Utterance|DA-tag'")
            side, tag = parts[0].strip(), parts[-1].strip()
            if require_person and (conv, side) not in callers:
                raise InputError(str(file), n, f"conversation {conv} side {side!r} is not in {speakers}")
            text = "|".join(parts[1:-1])
            yield Document(id=f"{conv}:{side}:{n}", text=text, person=callers.get((conv, side)),
                           group=conv, meta={"speaker": side, "da_tag": tag})


def read_documents(path: str | Path, fmt: str | None = None, fields: Fields | None = None,
                   **options: Any) -> Iterator[Document]:
    """Stream the documents of a corpus file in any supported format."""
    from veil.registry import readers

    return readers.get(detect_format(path, fmt))(path, fields, **options)


def iter_batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of ``size`` items (the last may be shorter), streamed."""
    batch: list[T] = []
    for d in items:
        batch.append(d)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
