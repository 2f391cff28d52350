"""Review stage: what a finished review becomes (documents marked done only).

- :func:`export_gold` -- gold spans on the *original* texts, for ``veil eval-detect GOLD --format
  review`` (``veil.mask.gold.read_review``): every mask the reviewer kept (with the type they gave it)
  and every missed piece they tagged, each DIRECT or QUASI; rejected masks are listed apart (not PI,
  so a masker that masks them loses precision). Needs the original (the review's, or ``--original``).
- :func:`export_missed` -- the Dialpad paper's files: one ``<n>.txt`` per document, the masked text
  with each missed piece written ``(text)[MISSED_TAG]``, and ``manifest.jsonl``, as
  ``veil audit review export`` writes them after a reviewer's edit: ``veil audit review import DIR``
  scores them (Table 4's residual risk). A type maps to a score-table tag by :data:`INFOTYPES`, then
  by the table's own names and aliases; a type with neither stays unannotated (unscored) and is
  counted, as the risk audit leaves TAB's DATETIME unscored.
- :func:`export_terms` -- the missed pieces as ``term<TAB>TYPE`` lines: ``veil mask --add-terms FILE``
  masks them on the next run.
- :func:`export_exclude` -- the original text of rejected masks that the reviewer kept nowhere else in
  the review, one a line: ``veil mask --exclude FILE`` never masks them again.

Each export is written atomically and never through a link (:mod:`veil.io.atomic`), and never over a file
it did not write: :func:`check_export` refuses the review's inputs (the masked file, the original, the
review file: by resolved path or by inode, so a link or a hard link to one counts) and any existing file
unless ``OUT.veil.json`` says an earlier export wrote it and its fingerprint still matches (then
``overwrite`` replaces it) -- as ``veil mask`` and ``veil fill`` decide, with the same side file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Mapping, Sequence

from veil.errors import VeilError
from veil.review.session import ReviewDoc, _current
from veil.review.store import DocState
from veil.textutil import normalise_surface

#: veil's masker types -> the paper's infoType tags where the score table's own names and aliases do not
#: reach them. A reviewer tags an organisation as missed PI only when it points at a speaker (the paper
#: scores only those), hence the _SPEAKER tag.
INFOTYPES = {"ORGANIZATION_NAME": "ORGANIZATION_NAME_SPEAKER", "ORG": "ORGANIZATION_NAME_SPEAKER",
             "FACILITY": "LOCATION", "GPE": "LOCATION", "LOC": "LOCATION", "STREET_ADDRESS": "ADDRESS",
             "PHONE_NUMBER": "PHONE", "EMAIL_ADDRESS": "EMAIL", "USERNAME": "USER_NAME",
             "US_SOCIAL_SECURITY_NUMBER": "SSN", "PRODUCT": "PRODUCT_SPEAKER"}


#: what an export writes into its ``OUT.veil.json`` (and a folder's manifest as ``source``)
WRITER = "veil review"


def check_export(out: str | Path, inputs: Sequence[str | Path | None] = (), overwrite: bool = False) -> None:
    """Refuse, before any work, an export over an input or over a file an earlier export did not write."""
    from veil.io.atomic import open_read
    from veil.io.output import STDIO, check_output_path, companion, recorded

    if str(out) == STDIO:
        raise VeilError("--export writes a file: give -o PATH (standard output is not supported)")
    check_output_path(out, [p for p in inputs if p is not None])
    out = Path(out)
    mark = recorded(out)
    ours = mark.get("written_by") == WRITER
    if out.exists():
        with open_read(out) as f:  # (not a link: check_output_path refused one)
            sha = hashlib.sha256(f.read()).hexdigest()
        if not ours or mark.get("sha256") != sha:
            raise VeilError(f"{out} exists and was not written by veil review --export (or changed since); veil "
                            "never replaces it: choose another -o")
        if not overwrite:
            raise VeilError(f"{out} exists (an earlier veil review --export {mark.get('export', '')}); pass "
                            "--overwrite to replace it, or choose another -o")
    elif companion(out, ".veil.json").exists() and not ours:
        raise VeilError(f"{companion(out, '.veil.json')} belongs to another output; choose another -o")


def _write_export(out: str | Path, text: str, kind: str, inputs: Sequence[str | Path | None],
                  overwrite: bool) -> None:
    from veil.io.atomic import write_json_atomic, write_text_atomic
    from veil.io.output import companion

    check_export(out, inputs, overwrite)
    write_text_atomic(out, text)
    data = text.encode("utf-8")
    write_json_atomic(companion(out, ".veil.json"), {"written_by": WRITER, "export": kind, "size": len(data),
                                                     "sha256": hashlib.sha256(data).hexdigest()})


def check_export_folder(out: str | Path, inputs: Sequence[str | Path | None] = (),
                        overwrite: bool = False) -> list[Path]:
    """Refuse a folder that holds anything an earlier ``--export missed`` did not write (``overwrite``: the
    files it did write are returned, for removal); an input inside it counts as not written by it."""
    import json
    import os
    import stat

    from veil.audit.review import MANIFEST

    out = Path(out)
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        return []
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise VeilError(f"{out} is not a folder (a file or a link); --export missed writes a folder: choose a new one")
    entries = sorted(p.name for p in out.iterdir())
    if not entries:
        return []
    head: object = None
    listed: set[str] = set()
    try:
        lines = (out / MANIFEST).read_text(encoding="utf-8").splitlines()
        head = json.loads(lines[0])
        listed = {json.loads(x)["file"] for x in lines[1:] if x.strip()}
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass
    if not (isinstance(head, dict) and head.get("source") == WRITER):
        raise VeilError(f"{out} already holds files veil review did not write; choose a new folder")
    stray = [n for n in entries if (n != MANIFEST and n not in listed) or (out / n).is_symlink()
             or not (out / n).is_file()]
    if stray:
        raise VeilError(f"{out} already holds a review sample and {len(stray)} other file(s) (e.g. {stray[0]}); "
                        "choose a new folder")
    if not overwrite:
        raise VeilError(f"{out} already holds a review sample ({MANIFEST}); pass --overwrite to replace it, "
                        "or choose another folder")
    for p in inputs:
        if p is not None and Path(p).exists() and any(os.path.samefile(out / n, p) for n in entries):
            raise VeilError(f"{out} holds the input {p}; choose a new folder")
    return [out / n for n in entries]


def done_docs(docs: Sequence[ReviewDoc], states: Mapping[str, DocState]) -> list[tuple[ReviewDoc, DocState]]:
    out = [(d, states[d.masked.id]) for d in docs if d.masked.id in states and states[d.masked.id].done]
    if not out:
        raise VeilError("no document of this review is marked done yet (Enter on the page marks one)")
    return out


def _entity(label: str, text: str) -> str:
    return f"{label}:{normalise_surface(text) or text}"


def gold_record(d: ReviewDoc, st: DocState, reviewer: str | None = None) -> dict[str, Any]:
    """One document's gold record (offsets on the original text)."""
    if d.original is None or d.alignment is None:
        raise VeilError("gold spans need the original texts: review with --original, or pass it to the export")
    text, a = d.original, d.alignment
    spans: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    seen: set[tuple[int, int]] = set()
    for i, p in enumerate(d.masked.placeholders):
        s, e = a.spans[i]
        if (s, e) in seen:  # placeholders that share one stretch of the original (see veil.mask.align)
            continue
        seen.add((s, e))
        label, itype = _current(d, st, i)
        if i in st.rejected:
            rejected.append({"start": s, "end": e, "label": p.label})
        else:
            spans.append({"start": s, "end": e, "label": label, "identifier_type": itype,
                          "entity_id": _entity(label, text[s:e]), "origin": "mask"})
    for m in st.missed.values():
        s, e = a.to_original(m.start), a.to_original(m.end)
        spans.append({"start": s, "end": e, "label": m.label, "identifier_type": m.itype,
                      "entity_id": _entity(m.label, text[s:e]), "origin": "missed", "partial": m.partial})
    spans.sort(key=lambda x: (x["start"], x["end"]))
    rec = {"id": d.masked.id, "text": text, "spans": spans, "rejected": rejected}
    if d.masked.group is not None:
        rec["group"] = d.masked.group
    if reviewer:
        rec["reviewer"] = reviewer
    return rec


def export_gold(out: str | Path, docs: Sequence[ReviewDoc], states: Mapping[str, DocState],
                reviewer: str | None = None, *, inputs: Sequence[str | Path | None] = (),
                overwrite: bool = False) -> dict[str, int]:
    import json

    check_export(out, inputs, overwrite)
    records = [gold_record(d, st, reviewer) for d, st in done_docs(docs, states)]
    _write_export(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "gold", inputs, overwrite)
    return {"documents": len(records), "spans": sum(len(r["spans"]) for r in records),
            "missed": sum(x["origin"] == "missed" for r in records for x in r["spans"]),
            "rejected": sum(len(r["rejected"]) for r in records)}


def infotype(label: str, table: Any, type_map: Mapping[str, str | None] | None = None) -> str | None:
    """The score-table tag of a reviewed type, or None (unscored)."""
    if type_map and label in type_map:
        return type_map[label]
    name = INFOTYPES.get(label, label)
    return table.resolve(name)[0] if name in table else None


def _digest(text: str) -> str:  # the same digest `veil audit review export` writes into its manifest
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def annotated_text(d: ReviewDoc, st: DocState, table: Any, type_map: Mapping[str, str | None] | None,
                   unscored: dict[str, int]) -> str:
    """The masked text with each missed piece as ``(text)[MISSED_TAG]`` (one annotation per line it spans)."""
    text = d.masked.text
    parts: list[str] = []
    pos = 0
    for m in sorted(st.missed.values(), key=lambda m: m.start):
        tag = infotype(m.label, table, type_map)
        if tag is None:
            unscored[m.label] = unscored.get(m.label, 0) + 1
            continue
        full = tag + ("_PARTIAL" if m.partial else "")
        pieces = [(m.start, m.end)]
        if "\n" in text[m.start:m.end]:  # an annotation stays on one line: one per line, linked by #key
            pieces, s = [], m.start
            for line in text[m.start:m.end].split("\n"):
                if line.strip():
                    lead = len(line) - len(line.lstrip())
                    pieces.append((s + lead, s + len(line.rstrip())))
                s += len(line) + 1
        key = f"#r{m.n}" if len(pieces) > 1 else ""
        for s, e in pieces:
            parts.append(text[pos:s])
            parts.append(f"({text[s:e]})[MISSED_{full}{key}]")
            pos = e
    parts.append(text[pos:])
    return "".join(parts)


def export_missed(out_dir: str | Path, docs: Sequence[ReviewDoc], states: Mapping[str, DocState],
                  header: Mapping[str, Any], type_map: Mapping[str, str | None] | None = None,
                  table: Any = None, *, inputs: Sequence[str | Path | None] = (),
                  overwrite: bool = False) -> dict[str, Any]:
    """Write the paper's annotated files for ``veil audit review import``; returns counts."""
    from veil.audit.plots import write_jsonl, write_text
    from veil.audit.review import MANIFEST, parse_annotations
    from veil.audit.risk import default_table

    table = table or default_table()
    out = Path(out_dir)
    old = check_export_folder(out, inputs, overwrite)
    chosen = done_docs(docs, states)
    width = len(str(len(chosen)))
    unscored: dict[str, int] = {}
    records, files = [], []
    for k, (d, st) in enumerate(chosen, 1):
        body = annotated_text(d, st, table, type_map, unscored)
        expected = sum(1 for m in st.missed.values() if infotype(m.label, table, type_map) is not None)
        found, plain = parse_annotations(body, table, f"document {d.masked.id!r}")
        if len({a.key or a.start for a in found}) < expected or plain != d.masked.text:
            raise VeilError(f"document {d.masked.id!r}: a tagged piece cannot be written as (text)[MISSED_TAG] "
                            "(its text has nested or unbalanced parentheses); retag it without them")
        name = f"{k:0{width}d}.txt"
        files.append((name, body if body.endswith("\n") else body + "\n"))
        records.append({"file": name, "id": d.masked.id, "group": d.masked.group, "sha": _digest(d.masked.text),
                        "placeholders": len(d.masked.placeholders)})
    if old != check_export_folder(out, inputs, overwrite):
        raise VeilError(f"{out} changed while the export ran; run it again")
    for p in old:  # only what an earlier export listed (checked above); a smaller sample leaves none behind
        p.unlink()
    for name, body in files:
        write_text(out / name, body)
    write_jsonl(out / MANIFEST, [{"seed": header.get("seed"), "documents": len(records),
                                  "reviewer": header.get("reviewer"), "source": WRITER}] + records)
    return {"documents": len(records), "missed": sum(len(st.missed) for _, st in chosen), "unscored": unscored}


def export_terms(out: str | Path, docs: Sequence[ReviewDoc], states: Mapping[str, DocState], *,
                 inputs: Sequence[str | Path | None] = (), overwrite: bool = False) -> int:
    """Missed pieces as ``term<TAB>TYPE`` (``veil mask --add-terms``); returns the number of terms."""
    check_export(out, inputs, overwrite)
    terms: dict[str, tuple[str, str]] = {}  # casefolded term -> (term, type)
    for _, st in done_docs(docs, states):
        for m in sorted(st.missed.values(), key=lambda m: m.n):
            term = " ".join(m.text.replace("\t", " ").split())
            if term:
                terms.setdefault(term.casefold(), (term, m.label))
    lines = ["# veil review --export terms: missed PI, term<TAB>TYPE (veil mask --add-terms FILE)"]
    lines += [f"{t}\t{label}" for t, label in sorted(terms.values(), key=lambda x: x[0].casefold())]
    _write_export(out, "\n".join(lines) + "\n", "terms", inputs, overwrite)
    return len(terms)


def export_exclude(out: str | Path, docs: Sequence[ReviewDoc], states: Mapping[str, DocState], *,
                   inputs: Sequence[str | Path | None] = (), overwrite: bool = False) -> int:
    """Original text of rejected masks kept nowhere else (``veil mask --exclude``); returns the number of terms."""
    check_export(out, inputs, overwrite)
    rejected: dict[str, str] = {}
    kept: set[str] = set()
    for d, st in done_docs(docs, states):
        if d.original is None or d.alignment is None:
            raise VeilError("an exclusion list needs the original texts: review with --original, or pass it "
                            "to the export")
        for i, (s, e) in enumerate(d.alignment.spans):
            surface = " ".join(d.original[s:e].split())
            key = normalise_surface(surface)
            if not key:
                continue
            if i in st.rejected:
                rejected.setdefault(key, surface)
            else:
                kept.add(key)
        kept.update(normalise_surface(m.text) for m in st.missed.values())
    terms = sorted((v for k, v in rejected.items() if k not in kept), key=str.casefold)
    _write_export(out, "".join(t + "\n" for t in terms), "exclude", inputs, overwrite)
    return len(terms)
