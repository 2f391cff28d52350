"""Corpus I/O stage: a whole corpus in memory, for the stages that need every document at once.

The experiment's corpora, the audits' person corpora, a review sample and the MiniLM warm-up text
all load here. :func:`load_corpus` reads any registered corpus format (``veil.registry.readers``:
txt, jsonl, csv, parquet, switchboard; ``NAME.txt.gz`` is a gzipped text) or annotated format
(``veil.registry.gold_formats``: tab, presidio, conll; the documents without their gold spans).
The streaming readers themselves live in :mod:`veil.io.formats`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from veil.errors import InputError, VeilError
from veil.io.formats import Fields, read_documents
from veil.types import Document


def load_corpus(path: str | Path, fmt: str | None = None, fields: Fields | None = None, *,
                person_required: bool = False, speakers: str | Path | None = None) -> list[Document]:
    """Every document of a corpus file or folder, read in order; an empty corpus is an ``InputError``.

    ``fields`` names the record fields (JSONL, CSV, Parquet); in an annotated format its ``person`` and
    ``group`` name metadata keys (TAB: ``Fields(person="applicant")``). ``person_required`` (the
    per-person audits): a document without a person is an error, never audited as nobody's;
    Switchboard then needs its speakers table (``speakers``, else found beside the corpus).
    """
    from veil.registry import gold_formats

    if fmt in gold_formats:
        if not Path(path).is_file():
            raise InputError(str(path), None, "no such file")
        docs = [g.doc for g in gold_formats.get(fmt)(Path(path))]
        if fields is not None:
            for d in docs:
                if fields.person and d.person is None and d.meta.get(fields.person) is not None:
                    d.person = str(d.meta[fields.person])
                if fields.group and d.group is None and d.meta.get(fields.group) is not None:
                    d.group = str(d.meta[fields.group])
    else:
        options: dict[str, Any] = {}
        if fmt == "switchboard" or (fmt is None and Path(path).is_dir()):
            options = {"speakers": speakers, "require_person": person_required}
        elif speakers is not None:
            raise VeilError(f"a speakers table goes with the switchboard format, not {fmt!r}")
        docs = list(read_documents(path, fmt, fields, **options))
    if not docs:
        raise InputError(str(path), None, "no documents")
    if person_required:
        for d in docs:
            if d.person in (None, ""):
                where = f"metadata key {fields.person!r}" if fields and fields.person else "a person field"
                raise InputError(str(path), None, f"document {d.id} has no person ({where}); the audit is per person")
    return docs


def select_documents(docs: Iterable[Document], *, min_words: int = 1, exclude_containing: Iterable[str] = (),
                     skip: int = 0, limit: int | None = None) -> list[Document]:
    """The documents of at least ``min_words`` words holding none of ``exclude_containing``, after the first
    ``skip`` of them, at most ``limit`` (an experiment's ``train:`` / ``test:`` selection)."""
    from veil.textutil import count_words

    exclude = list(exclude_containing)
    out: list[Document] = []
    seen = 0
    for d in docs:
        if count_words(d.text) < min_words or any(x in d.text for x in exclude):
            continue
        seen += 1
        if seen <= skip:
            continue
        out.append(d)
        if limit is not None and len(out) >= limit:
            break
    return out


def read_lines(path: str | Path) -> list[str]:
    """The non-empty lines of a plain-text or gzipped (``.gz``) file, stripped."""
    return [t for t in (d.text.strip() for d in read_documents(path, "txt")) if t]
