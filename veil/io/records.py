"""Corpus I/O stage: masked and filled records in any format (what `veil mask` writes and `veil fill` reads).

Masked record: the input record with its text field replaced by the masked text, plus
``placeholders`` (``[{start, end, label, key, technique}]``) and ``style``; every other field keeps
its name, value and place. A CSV or Parquet file keeps exactly the input's columns: its records'
``placeholders`` and ``style`` go to ``FILE.placeholders.jsonl`` beside it, one line a record
(or into two more columns, as JSON text, on request). Without ``placeholders`` the unescaped
markers of the text are the placeholders (technique ``unknown``), and without ``style`` it is
inferred from the marker names.

Filled record: the masked record with its text filled, ``placeholders`` and ``style`` removed; the
substitutions ``{id, placeholder, key, label, substitute, start, end}`` live in
``FILE.substitutions.jsonl`` beside it, one line per substitution, in document order.

Readers stream (one record in memory at a time) and report bad records as ``InputError`` with
file and line; writers go through :class:`veil.io.output.ResumableWriter` (atomic, locked).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from veil.errors import InputError
from veil.io.formats import Fields, detect_format, id_of, iter_batches, iter_records, text_of
from veil.markers import STYLES, find_markers, infer_style, parse_marker_name
from veil.types import FilledDocument, MaskedDocument, Placeholder, Substitution

#: fields a masked record adds to the input record
MASK_FIELDS = ("placeholders", "style")
_SUB_FIELDS = ("placeholder", "key", "label", "substitute", "start", "end")


def substitutions_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".substitutions.jsonl")


def placeholders_path(path: str | Path) -> Path:
    """Where a masked CSV / Parquet file keeps its records' placeholders and style (its columns stay the input's)."""
    path = Path(path)
    return path.with_name(path.name + ".placeholders.jsonl")


def split_mask_fields(rec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the record without ``placeholders`` / ``style``, those two): a masked CSV's row and its sidecar line."""
    return ({k: v for k, v in rec.items() if k not in MASK_FIELDS},
            {k: rec[k] for k in MASK_FIELDS if k in rec})


def masked_records(path: str | Path, fmt: str) -> Iterator[tuple[int, Any]]:
    """The raw records of a masked corpus, each with its placeholders and style from the file beside it
    (``FILE.placeholders.jsonl``) when there is one; its lines must pair with the records one to one."""
    records = iter_records(path, fmt)
    side = placeholders_path(path)
    if str(path) == "-" or not side.is_file():
        yield from records
        return
    extra = iter_records(side, "jsonl")
    for n, rec in records:
        got = next(extra, None)
        if got is None:
            raise InputError(str(side), None, f"has fewer lines than {path} has records (record at line {n} has "
                             "none); it must be the file veil mask wrote beside it")
        if isinstance(rec, dict) and isinstance(got[1], dict):
            rec = {**rec, **{k: got[1][k] for k in MASK_FIELDS if k in got[1]}}
        yield n, rec
    if next(extra, None) is not None:
        raise InputError(str(side), None, f"has more lines than {path} has records; it must be the file veil mask "
                         "wrote beside it")


def _base_record(doc: Any, fields: Fields, drop: frozenset[str]) -> dict[str, Any]:
    # without an id field the ids are record numbers: a reader numbers the records the same way again
    rec: dict[str, Any] = {fields.id: doc.id} if fields.id else {}
    rec[fields.text] = doc.text
    if doc.person is not None:
        rec[fields.person or "person"] = doc.person
    if doc.group is not None:
        rec[fields.group or "group"] = doc.group
    for k, v in doc.meta.items():
        if k not in drop and k not in rec:
            rec[k] = v
    return rec


# --- masked documents -------------------------------------------------------------------------
def masked_to_record(md: MaskedDocument, fields: Fields | None = None,
                     drop: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The output record of one masked document, its fields under the input's names."""
    rec = _base_record(md, fields or Fields(), drop | set(MASK_FIELDS))
    rec["placeholders"] = [p.to_dict() for p in md.placeholders]
    rec["style"] = md.style
    return rec


def placeholders_from_markers(text: str) -> tuple[Placeholder, ...]:
    """Placeholders rebuilt from the unescaped markers of a masked text (no technique is known)."""
    out = []
    for i, (s, e, name) in enumerate(find_markers(text)):
        label, n = parse_marker_name(name)
        if label.upper() == "MASK":
            out.append(Placeholder(s, e, "MASK", f"MASK#{i}", "unknown"))
        else:
            out.append(Placeholder(s, e, label, name if n is not None else f"{label}#{i}", "unknown"))
    return tuple(out)


def _opt_str(v: Any) -> str | None:
    return None if v is None else str(v)


def record_to_masked(rec: Any, fields: Fields | None = None, path: str | Path = "<record>",
                     line: int | None = None, number: int = 1) -> MaskedDocument:
    fields = fields or Fields()
    text = text_of(rec, fields, path, line)
    raw = rec.get("placeholders")
    if isinstance(raw, str):  # CSV / Parquet keep nested values as JSON text
        try:
            raw = json.loads(raw) if raw.strip() else None
        except json.JSONDecodeError as e:
            raise InputError(str(path), line, f"field 'placeholders' is not valid JSON ({e.msg})") from None
    if raw is None:
        phs = placeholders_from_markers(text)
    else:
        try:
            phs = tuple(Placeholder.from_dict(p) for p in raw)
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(str(path), line, f"bad 'placeholders' entry ({type(e).__name__}: {e}); "
                             "each needs start, end, label, key, technique") from None
        for p in phs:
            if not (0 <= p.start < p.end <= len(text)):
                raise InputError(str(path), line, f"placeholder [{p.start}, {p.end}) is outside the text "
                                 f"(length {len(text)})")
    style = rec.get("style") or infer_style(text)
    if style not in STYLES:
        raise InputError(str(path), line, f"unknown placeholder style {style!r}; expected one of {', '.join(STYLES)}")
    used = {fields.text, fields.id, fields.person, fields.group, *MASK_FIELDS}
    meta = {k: v for k, v in rec.items() if k not in used}
    return MaskedDocument(id_of(rec, fields, number), text, phs, style,
                          _opt_str(rec.get(fields.person)) if fields.person else None,
                          rec.get(fields.group) if fields.group else None, meta)


#: the field names veil itself writes (person / group too): what the record readers assume by default
VEIL_FIELDS = Fields(text="text", id="id", person="person", group="group")


def read_masked(path: str | Path, fmt: str | None = None, fields: Fields | None = None) -> Iterator[MaskedDocument]:
    """Stream the ``MaskedDocument`` objects of a masked corpus (JSONL, CSV, Parquet or text)."""
    fields = fields or VEIL_FIELDS
    for number, (n, rec) in enumerate(masked_records(path, detect_format(path, fmt)), 1):
        yield record_to_masked(rec, fields, path, n, number)


def write_masked(path: str | Path, docs: Iterable[MaskedDocument], batch_size: int = 1024,
                 fmt: str | None = None, fields: Fields | None = None) -> int:
    """Write masked documents, atomically; returns the number written."""
    return _write(path, (masked_to_record(d, fields or VEIL_FIELDS) for d in docs), batch_size, fmt)


# --- filled documents -------------------------------------------------------------------------
def filled_to_record(d: FilledDocument, fields: Fields | None = None) -> dict[str, Any]:
    return _base_record(d, fields or Fields(), frozenset(MASK_FIELDS))


def substitution_records(d: FilledDocument) -> list[dict[str, Any]]:
    return [{"id": s.doc_id, "placeholder": s.placeholder, "key": s.key, "label": s.label,
             "substitute": s.substitute, "start": s.start, "end": s.end} for s in d.substitutions]


def _substitution(rec: Any, path: str, line: int) -> Substitution:
    if not isinstance(rec, dict) or "id" not in rec or any(f not in rec for f in _SUB_FIELDS):
        raise InputError(path, line, f"a substitution record needs id, {', '.join(_SUB_FIELDS)}")
    try:
        return Substitution(str(rec["id"]), str(rec["placeholder"]), str(rec["key"]), str(rec["label"]),
                            str(rec["substitute"]), int(rec["start"]), int(rec["end"]))
    except (TypeError, ValueError) as e:
        raise InputError(path, line, f"bad substitution record: {e}") from None


def read_filled(path: str | Path, fmt: str | None = None, fields: Fields | None = None) -> Iterator[FilledDocument]:
    """Stream ``FilledDocument`` objects; substitutions come from ``FILE.substitutions.jsonl`` if present.

    The substitutions file is consumed in step with the documents (both are in document order), so
    memory does not grow with the corpus; a substitution that matches no document is an error.
    """
    fields = fields or VEIL_FIELDS
    path = Path(path)
    subs_file = substitutions_path(path)
    subs = (iter_records(subs_file, "jsonl") if subs_file.exists() and subs_file.stat().st_size else iter(()))
    pending: tuple[int, Substitution] | None = None

    def next_sub() -> tuple[int, Substitution] | None:
        for n, rec in subs:
            return n, _substitution(rec, str(subs_file), n)
        return None

    pending = next_sub()
    for number, (n, rec) in enumerate(iter_records(path, detect_format(path, fmt)), 1):
        text = text_of(rec, fields, path, n)
        doc_id = id_of(rec, fields, number)
        mine: list[Substitution] = []
        while pending is not None and pending[1].doc_id == doc_id:
            mine.append(pending[1])
            pending = next_sub()
        used = {fields.text, fields.id, fields.person, fields.group}
        meta = {k: v for k, v in rec.items() if k not in used}
        yield FilledDocument(doc_id, text, tuple(mine),
                             _opt_str(rec.get(fields.person)) if fields.person else None,
                             rec.get(fields.group) if fields.group else None, meta)
    if pending is not None:
        raise InputError(str(subs_file), pending[0], f"substitution for document {pending[1].doc_id!r}, which is "
                         f"not in {path} at this position (both files must be in the same document order)")


def write_filled(path: str | Path, docs: Iterable[FilledDocument], batch_size: int = 1024,
                 substitutions: bool = True, fmt: str | None = None, fields: Fields | None = None) -> int:
    """Write filled documents (and their substitutions beside them), atomically."""
    from veil.io.output import ResumableWriter

    path = Path(path)
    with ResumableWriter(path, {}, fmt or detect_format(path), resume=False, overwrite=True,
                         sidecar=substitutions_path(path) if substitutions else None) as w:
        for batch in iter_batches(docs, batch_size):
            w.write([filled_to_record(x, fields or VEIL_FIELDS) for x in batch],
                    [r for x in batch for r in substitution_records(x)])
        return w.done


def _write(path: str | Path, records: Iterable[dict[str, Any]], batch_size: int, fmt: str | None) -> int:
    from veil.io.output import ResumableWriter

    with ResumableWriter(path, {}, fmt or detect_format(path), resume=False, overwrite=True) as w:
        for batch in iter_batches(records, batch_size):
            w.write(batch)
        return w.done
