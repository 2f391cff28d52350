"""Corpus I/O stage: JSONL records of masked and filled documents (what `veil mask` writes, `veil fill` reads).

Masked record: ``{id, text, placeholders: [{start, end, label, key, technique}], style, person?,
group?, ...other input fields}``. Without ``placeholders`` the unescaped markers of the text are the
placeholders (technique ``unknown``), and without ``style`` it is inferred from the marker names.

Filled record: ``{id, text, person?, group?, ...other fields}``; its substitutions
``{id, placeholder, key, label, substitute, start, end}`` live in ``FILE.substitutions.jsonl``
beside it, one line per substitution, in document order (the layout ``veil fill`` writes).

Readers stream (one record in memory at a time) and report bad records as ``InputError`` with
file and line; writers are atomic (temporary file, then rename).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from veil.errors import InputError
from veil.mask.placeholders import STYLES, find_markers, parse_marker_name
from veil.types import FilledDocument, MaskedDocument, Placeholder, Substitution

#: record fields with a place in the types; every other field is metadata, carried through unchanged
CORE_FIELDS = ("id", "text", "placeholders", "style", "person", "group")
_SUB_FIELDS = ("placeholder", "key", "label", "substitute", "start", "end")


def substitutions_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".substitutions.jsonl")


# --- masked documents -------------------------------------------------------------------------
def masked_to_record(md: MaskedDocument, drop: frozenset[str] = frozenset()) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": md.id, "text": md.text,
                           "placeholders": [p.to_dict() for p in md.placeholders], "style": md.style}
    if md.person is not None:
        rec["person"] = md.person
    if md.group is not None:
        rec["group"] = md.group
    for k, v in md.meta.items():
        if k not in drop:
            rec.setdefault(k, v)
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


def infer_style(text: str) -> str:
    names = [n for _, _, n in find_markers(text)]
    if all(n.upper() == "MASK" for n in names):
        return "mask"
    return "numbered" if any(parse_marker_name(n)[1] is not None for n in names) else "typed"


def _opt_str(v: Any) -> str | None:
    return None if v is None else str(v)


def record_to_masked(rec: Any, path: str = "<record>", line: int | None = None) -> MaskedDocument:
    if not isinstance(rec, dict):
        raise InputError(path, line, f"expected a JSON object, got {type(rec).__name__}")
    for name in ("id", "text"):
        if name not in rec:
            raise InputError(path, line, f"missing field {name!r} of a masked record")
    text = rec["text"]
    if not isinstance(text, str):
        raise InputError(path, line, f"field 'text' must be a string, got {type(text).__name__}")
    if rec.get("placeholders") is None:
        phs = placeholders_from_markers(text)
    else:
        try:
            phs = tuple(Placeholder.from_dict(p) for p in rec["placeholders"])
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(path, line, f"bad 'placeholders' entry ({type(e).__name__}: {e}); "
                             "each needs start, end, label, key, technique") from None
        for p in phs:
            if not (0 <= p.start < p.end <= len(text)):
                raise InputError(path, line, f"placeholder [{p.start}, {p.end}) is outside the text "
                                 f"(length {len(text)})")
    style = rec.get("style") or infer_style(text)
    if style not in STYLES:
        raise InputError(path, line, f"unknown placeholder style {style!r}; expected one of {', '.join(STYLES)}")
    meta = {k: v for k, v in rec.items() if k not in CORE_FIELDS}
    return MaskedDocument(str(rec["id"]), text, phs, style, _opt_str(rec.get("person")),
                          _opt_str(rec.get("group")), meta)


def _iter_json_records(path: str | Path) -> Iterator[tuple[int, Any]]:
    from veil.io.formats import iter_lines

    for n, line in iter_lines(path):
        if not line.strip():
            raise InputError(str(path), n, "empty line: every line of a JSONL file must be a JSON object")
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(str(path), n, f"invalid JSON ({e.msg} at column {e.colno})") from None


def read_masked(path: str | Path) -> Iterator[MaskedDocument]:
    """Stream the ``MaskedDocument`` objects of a masked JSONL file."""
    for n, rec in _iter_json_records(path):
        yield record_to_masked(rec, str(path), n)


def write_masked(path: str | Path, docs: Iterable[MaskedDocument], batch_size: int = 1024) -> int:
    """Write masked documents as JSONL, atomically; returns the number written."""
    return _write_jsonl(path, (masked_to_record(d) for d in docs), batch_size)


# --- filled documents -------------------------------------------------------------------------
def filled_to_record(d: FilledDocument) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": d.id, "text": d.text}
    if d.person is not None:
        rec["person"] = d.person
    if d.group is not None:
        rec["group"] = d.group
    rec.update({k: v for k, v in d.meta.items() if k not in rec})
    return rec


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


def read_filled(path: str | Path) -> Iterator[FilledDocument]:
    """Stream ``FilledDocument`` objects; substitutions come from ``FILE.substitutions.jsonl`` if present.

    The substitutions file is consumed in step with the documents (both are in document order), so
    memory does not grow with the corpus; a substitution that matches no document is an error.
    """
    path = Path(path)
    subs_file = substitutions_path(path)
    subs = _iter_json_records(subs_file) if subs_file.exists() and subs_file.stat().st_size else iter(())
    pending: tuple[int, Substitution] | None = None

    def next_sub() -> tuple[int, Substitution] | None:
        for n, rec in subs:
            return n, _substitution(rec, str(subs_file), n)
        return None

    pending = next_sub()
    for n, rec in _iter_json_records(path):
        if not isinstance(rec, dict):
            raise InputError(str(path), n, f"expected a JSON object, got {type(rec).__name__}")
        for name in ("id", "text"):
            if name not in rec:
                raise InputError(str(path), n, f"missing field {name!r} of a filled record")
        if not isinstance(rec["text"], str):
            raise InputError(str(path), n, "field 'text' must be a string")
        doc_id = str(rec["id"])
        mine: list[Substitution] = []
        while pending is not None and pending[1].doc_id == doc_id:
            mine.append(pending[1])
            pending = next_sub()
        meta = {k: v for k, v in rec.items() if k not in CORE_FIELDS}
        yield FilledDocument(doc_id, rec["text"], tuple(mine), _opt_str(rec.get("person")),
                             _opt_str(rec.get("group")), meta)
    if pending is not None:
        raise InputError(str(subs_file), pending[0], f"substitution for document {pending[1].doc_id!r}, which is "
                         f"not in {path} at this position (both files must be in the same document order)")


def write_filled(path: str | Path, docs: Iterable[FilledDocument], batch_size: int = 1024,
                 substitutions: bool = True) -> int:
    """Write filled documents as JSONL (and their substitutions beside them), atomically."""
    from veil.io.output import ResumableWriter

    path = Path(path)
    if not substitutions:
        return _write_jsonl(path, (filled_to_record(d) for d in docs), batch_size)
    with ResumableWriter(path, {}, resume=False) as w, \
            ResumableWriter(substitutions_path(path), {}, resume=False) as ws:
        batch: list[FilledDocument] = []
        for d in docs:
            batch.append(d)
            if len(batch) >= batch_size:
                ws.write(r for x in batch for r in substitution_records(x))
                w.write(filled_to_record(x) for x in batch)
                batch = []
        ws.write(r for x in batch for r in substitution_records(x))
        w.write(filled_to_record(x) for x in batch)
        return w.done


def _write_jsonl(path: str | Path, records: Iterable[dict[str, Any]], batch_size: int) -> int:
    from veil.io.output import ResumableWriter

    with ResumableWriter(path, {}, resume=False) as w:
        batch: list[dict[str, Any]] = []
        for r in records:
            batch.append(r)
            if len(batch) >= batch_size:
                w.write(batch)
                batch = []
        w.write(batch)
        return w.done
