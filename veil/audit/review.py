"""Audit stage: manual residual-risk review (Dialpad paper §4.1): export a sample, import annotations.

**Export** masks a seeded random sample of documents (numbered placeholders, as the paper's
Table 2) and writes one ``<n>.txt`` file per document plus ``manifest.jsonl`` (document id, group,
file name, a hash of the exported text). Reviewers edit the ``.txt`` files and wrap every piece
of PI the masking missed in the paper's notation::

    (Dunder Mifflin)[MISSED_ORGANIZATION_NAME_SPEAKER], this is [PERSON_NAME_1] (Green)[MISSED_PERSON_NAME_PARTIAL]

The ``MISSED_`` prefix is optional (``(John)[PERSON_NAME]``); a tag written without it must follow
the closing parenthesis directly, so that ``(see) [EMAIL_ADDRESS]`` written with a space is never
taken for an annotation. Table 3's ``(IRS dot gov)(MISSED_URL)`` form is accepted too. The
annotated text stays on one line and may hold one level of parentheses; a ``MISSED_`` tag that is
not part of a readable annotation is an error (never a silent score of 0). Spelling
variants of one piece of PI (``Mark``, ``Marc``, ``M-A-R-K``) are linked with ``#key``:
``(M-A-R-K)[MISSED_PERSON_NAME_PARTIAL#mark]``; otherwise mentions with the same normalised text
are the same piece, scored once.

**Import** parses every reviewed file, checks that removing the annotations gives back the exported
text (a warning otherwise: the reviewer edited the document), and scores the documents with
:func:`veil.audit.risk.score_document`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from veil.audit.risk import DocumentRisk, MissedPI, ScoreTable, default_table, score_document
from veil.errors import InputError, VeilError
from veil.types import Document, MaskedDocument

log = logging.getLogger(__name__)

MANIFEST = "manifest.jsonl"
INSTRUCTIONS = "REVIEW_INSTRUCTIONS.md"

# (text)[TAG] or (text)(TAG); text has no line breaks and at most one level of inner parentheses
# ("(ABC (UK) Ltd)[MISSED_ORGANIZATION_NAME]"); TAG may carry #key.
_ANNOTATION_RE = re.compile(
    r"\(((?:[^()\n]|\([^()\n]*\))+)\)(\s*)([\[(])\s*((?:MISSED_)?[A-Z][A-Z0-9_]*)(?:\s*#\s*([^\])\n]+?))?\s*[\])]")
# an explicit tag anywhere: every one must belong to a parsed annotation
_MISSED_TAG_RE = re.compile(r"[\[(]\s*MISSED_[A-Z0-9_]*")


@dataclass(frozen=True, slots=True)
class Annotation:
    text: str
    tag: str  # as written, e.g. MISSED_PERSON_NAME_PARTIAL
    key: str | None
    start: int  # offsets of the whole annotation in the reviewed file
    end: int
    line: int


@dataclass(slots=True)
class ReviewedDocument:
    doc_id: str
    group: str | None
    annotations: list[Annotation] = field(default_factory=list)
    text: str = ""  # the reviewed text with annotations replaced by their inner text


def parse_annotations(text: str, table: ScoreTable | None = None, path: str = "<review>") -> tuple[list[Annotation], str]:
    """The ``(text)[TAG]`` annotations in a reviewed text, and the text with each replaced by its inner text.

    A parenthesised phrase followed by an unknown tag is left alone unless the tag starts with
    ``MISSED_`` (then it is an error, located by line). Bracket pairs must match: ``[...]`` or ``(...)``.
    """
    table = table or default_table()
    out: list[Annotation] = []
    parts: list[str] = []
    pos = 0
    at = 0
    while (m := _ANNOTATION_RE.search(text, at)) is not None:
        # a match that is no annotation is skipped by one character only, so that an annotation
        # inside it ("(the firm (Acme)[MISSED_ORGANIZATION_NAME]) (UK)") is still found
        at = m.start() + 1
        inner, gap, opener, tag, key = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)
        closer = m.group(0)[-1]
        explicit = tag.startswith("MISSED_")
        line = text.count("\n", 0, m.start()) + 1
        if (opener == "[") != (closer == "]"):
            if explicit:
                raise InputError(path, line, f"annotation {m.group(0)!r}: brackets do not match")
            continue
        if not explicit and (gap or opener == "("):
            continue  # "(see) [EMAIL_ADDRESS]" is a parenthesis before a placeholder, not an annotation
        if tag not in table:
            if explicit:
                raise InputError(path, line, f"unknown tag {tag!r} in {m.group(0)!r}")
            continue
        at = m.end()
        if not inner.strip():
            raise InputError(path, line, f"empty annotation {m.group(0)!r}")
        parts.append(text[pos:m.start()])
        parts.append(inner)
        pos = m.end()
        out.append(Annotation(inner.strip(), tag, key.strip().lower() if key else None, m.start(), m.end(), line))
    parts.append(text[pos:])
    for t in _MISSED_TAG_RE.finditer(text):
        if not any(a.start <= t.start() < a.end for a in out):
            line = text.count("\n", 0, t.start()) + 1
            raise InputError(path, line, f"annotation not understood near {text[max(0, t.start() - 40):t.end()]!r}: "
                                         f"write (text)[MISSED_TAG] with the text on one line, the tag closed, and "
                                         f"at most one level of parentheses inside the text")
    return out, "".join(parts)


def score_review(doc_id: str, annotations: Sequence[Annotation], table: ScoreTable | None = None,
                 group: str | None = None) -> DocumentRisk:
    missed = [MissedPI(a.text, a.tag, entity=a.key) for a in annotations]
    return score_document(doc_id, missed, table, group)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def sample(docs: Sequence[Document], n: int, seed: int = 0) -> list[Document]:
    """A seeded random sample of ``n`` documents (all of them, shuffled, when ``n`` >= their number)."""
    if n < 1:
        raise VeilError("the sample size must be at least 1")
    if not docs:
        raise VeilError("no documents to sample from")
    idx = random.Random(seed).sample(range(len(docs)), min(n, len(docs)))
    return [docs[i] for i in idx]


_INSTRUCTIONS_TEXT = """# Residual-risk review

Each `.txt` file here is one masked document. Read it and wrap every piece of personal information
that the masking left visible in `(text)[MISSED_TAG]`, then save the file:

    (Dunder Mifflin)[MISSED_ORGANIZATION_NAME_SPEAKER], this is [PERSON_NAME_1] (Green)[MISSED_PERSON_NAME_PARTIAL]

- Tags are the infoTypes of the score table (the Dialpad paper's Table 6): PERSON_NAME, EMAIL,
  PHONE, ADDRESS, LOCATION, ORGANIZATION_NAME(_SPEAKER), PRODUCT(_SPEAKER), GENERIC_ID, SSN, ...
- Add `_PARTIAL` when only part of the PI is visible (a last name beside a masked first name).
- Add `_SPEAKER` to an organisation or product the speaker is tied to (their employer, what they
  sell); a company that is only a topic of conversation gets the plain tag (score 0).
- Only annotate what could help identify someone; an internal order number is not PI.
- Link spelling variants of the same PI with `#key`: `(M-A-R-K)[MISSED_PERSON_NAME#mark]`.
- Keep each annotation on one line; the wrapped text may hold one level of parentheses,
  `(ABC (UK) Ltd)[MISSED_ORGANIZATION_NAME_SPEAKER]`. A `MISSED_` tag that cannot be read is an error.
- Do not change the rest of the text.

Then run `veil audit review import THIS_FOLDER`.
"""


def export_sample(masked: Sequence[MaskedDocument], out_dir: str | Path, seed: int | None = None) -> Path:
    """Write the masked documents for review: ``<n>.txt`` each, ``manifest.jsonl``, instructions."""
    from veil.audit.plots import write_jsonl, write_text

    out = Path(out_dir)
    if (out / MANIFEST).exists():
        raise VeilError(f"{out} already holds a review sample ({MANIFEST}); choose another folder")
    width = len(str(len(masked)))
    records = []
    for i, d in enumerate(masked, 1):
        name = f"{i:0{width}d}.txt"
        write_text(out / name, d.text if d.text.endswith("\n") else d.text + "\n")
        records.append({"file": name, "id": d.id, "group": d.group, "sha": _digest(d.text),
                        "placeholders": len(d.placeholders)})
    write_text(out / INSTRUCTIONS, _INSTRUCTIONS_TEXT)
    write_jsonl(out / MANIFEST, [{"seed": seed, "documents": len(records)}] + records)
    return out


def read_reviews(folder: str | Path, table: ScoreTable | None = None) -> list[ReviewedDocument]:
    """Parse every reviewed file listed in the folder's manifest (or every ``*.txt`` without one)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(str(folder), None, "no such folder")
    table = table or default_table()
    manifest = folder / MANIFEST
    entries: list[tuple[str, int | None, Any]] = []  # (where it is listed, line, entry)
    if manifest.is_file():
        try:
            lines = manifest.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as e:
            raise InputError(str(manifest), None, f"not valid UTF-8 ({e.reason})") from None
        for lineno, line in enumerate(lines, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(str(manifest), lineno, f"invalid JSON ({e.msg})") from None
            if not isinstance(rec, dict):
                raise InputError(str(manifest), lineno, f"expected a JSON object, got {type(rec).__name__}")
            if "file" in rec:
                entries.append((str(manifest), lineno, rec))
    else:
        entries = [(str(folder), None, {"file": p.name, "id": p.stem, "group": None})
                   for p in sorted(folder.glob("*.txt"))]
    if not entries:
        raise InputError(str(folder), None, "no reviewed documents (no manifest entries or .txt files)")
    out = []
    for where, lineno, rec in entries:
        path = _confined(folder, rec, where, lineno)
        if not path.is_file():
            raise InputError(str(path), None, "listed in the manifest but missing")
        try:
            raw = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise InputError(str(path), None, f"not valid UTF-8 ({e.reason}); save the reviewed file as UTF-8") from None
        annotations, plain = parse_annotations(raw, table, str(path))
        if "sha" in rec and _digest(plain.rstrip("\n")) != rec["sha"] and _digest(plain) != rec["sha"]:
            log.warning("%s: the text differs from the exported one beyond the annotations", path)
        out.append(ReviewedDocument(str(rec["id"]), rec.get("group"), annotations, plain))
    return out


def _confined(folder: Path, rec: dict[str, Any], where: str, lineno: int | None) -> Path:
    """The review file a manifest entry names, which must be a plain file name inside ``folder``:
    a manifest naming ``../x``, an absolute path, or a link leading out would make the import read
    files outside the review folder."""
    name = rec.get("file")
    if not isinstance(name, str) or not name or "id" not in rec:
        raise InputError(where, lineno, "each entry needs \"file\" (a file name) and \"id\"")
    if Path(name).name != name or name in (".", "..") or "\\" in name or Path(name).is_absolute():
        raise InputError(where, lineno, f"file {name!r} is not a file name in the review folder; "
                         "the manifest may only name the folder's own files")
    path = folder / name
    root = folder.resolve()
    try:
        inside = path.resolve().is_relative_to(root)
    except OSError:
        inside = False
    if not inside:
        raise InputError(where, lineno, f"file {name!r} leads out of the review folder (a link?); "
                         "the manifest may only name the folder's own files")
    return path


def import_reviews(folder: str | Path, table: ScoreTable | None = None) -> list[DocumentRisk]:
    """Score every reviewed document of ``folder``."""
    table = table or default_table()
    return [score_review(r.doc_id, r.annotations, table, r.group) for r in read_reviews(folder, table)]
