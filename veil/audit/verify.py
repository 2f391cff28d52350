"""Audit stage: ``veil verify`` -- no value the masking removed survives in a filled corpus.

**Which values.** With the masked corpus (``--masked``), the removed values are exact: each
placeholder's original text, found by aligning the masked record with its original
(:mod:`veil.mask.align`). Without it, the original corpus is masked again with the given maskers
(default: veil's) and what they find is taken as removed: a check that does not trust the run that
wrote FILLED, but only as good as those maskers (values another run's maskers removed and these miss
are not looked for; values those excluded are reported). Documents pair by id.

**Where.** Every field of every filled record (the text, and any other field copied through), the
substitutions file beside it (``FILLED.substitutions.jsonl``) and the files veil writes next to an
output (``.veil.json``, ``.progress.json``, an unfinished run's ``.partial`` files): document by
document, a value is looked for in its own document only (a record with an id in a side file), and
in a manifest against every document's values.

**How.** Texts and values are compared as runs of letters and digits, case-folded, at word
boundaries: "Maria Lopez" is found as "maria-lopez", "MARIA  LOPEZ" and, spelled, as "m a r i a
l o p e z" or "M-A-R-I-A"; "maria.lopez@example.com" as "Maria Lopez Example com"; a word of a longer value alone (``part``),
when it has three letters or more and the value is a person's name ("Lopez" or "L-O-P-E-Z" of "Maria
Lopez") or the word is rare (:data:`RARE_ZIPF`: "Northwind" of "Northwind Bank", not "Bank"). Spoken forms of
values with digits or symbols come from :mod:`veil.textforms` (its speech-recognition form):
"(415) 555-0199" is also looked for as "four one five five five five zero one nine nine" (and with
"oh" for zero), an e-mail as "maria dot lopez at example dot com", a year as "nineteen ninety"; a
value written in digit words is also looked for in digits. Values with fewer than ``min_chars``
letters and digits are not looked for (counted as skipped). Each survivor is reported with its
document, field, offsets, type and form (``verbatim``, ``normalised``, ``spelled``, ``spoken``, ``part``),
and whether it lies inside a substitute; separately, every substitute equal to an original value
of its document (a fill that drew the real value back).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from veil.errors import VeilError
from veil.textforms import DIGIT_WORDS

_TOKEN_RE = re.compile(r"[^\W_]+")
_DIGIT_WORD = {w: str(i) for i, w in enumerate(DIGIT_WORDS)} | {"oh": "0"}


def canonical(text: str) -> str:
    return "".join(m.group().casefold() for m in _TOKEN_RE.finditer(text))


def _digit_words_to_digits(value: str) -> str:
    """"five five five oh one" -> "555 01" (digit words only; other words kept)."""
    return " ".join(_DIGIT_WORD.get(w.casefold(), w) for w in _TOKEN_RE.findall(value))


#: types whose every word is identifying alone (a first or last name): each is looked for on its own
NAME_LABELS = frozenset({"PERSON_NAME", "PERSON", "PER"})
#: a word of another multi-word value is looked for alone when rarer than this (wordfreq's Zipf scale:
#: "northwind" 1.6, "mifflin" 3.0 and "lopez" 3.8 are; "abc" 4.2, "fund" 4.8 and "bank" 5.2 are not)
RARE_ZIPF = 4.0


def value_keys(value: str, label: str = "") -> list[tuple[str, str]]:
    """``(key, kind)`` pairs a value is looked for as: its letters and digits (``text``), spoken forms."""
    plain = canonical(value)
    keys = [(plain, "text")]
    spoken: list[str] = []
    if any(c.isdigit() for c in value) or any(not c.isalnum() and not c.isspace() for c in value):
        from veil.textforms import transform

        spoken.append(canonical(transform(value, [], "asr")[0]))
    if any(c.isdigit() for c in value):
        one_by_one = re.sub(r"\d", lambda m: f" {DIGIT_WORDS[int(m.group())]} ", value)
        spoken += [canonical(one_by_one), canonical(one_by_one.replace(" zero ", " oh "))]
    words = _TOKEN_RE.findall(value.casefold())
    if any(w in _DIGIT_WORD for w in words):
        spoken.append(canonical(_digit_words_to_digits(value)))
    for k in spoken:
        if k and all(k != x for x, _ in keys):
            keys.append((k, "spoken"))
    if len(words) > 1:  # a name's word, or a rare word of a longer value, alone ("Lopez" of "Maria Lopez")
        from wordfreq import zipf_frequency

        from veil.gazetteer import NAME_SUFFIXES, TITLES

        for w in words:
            if len(w) < 3 or w.isdigit() or any(w == x for x, _ in keys):
                continue
            if label in NAME_LABELS and (w in TITLES or w in NAME_SUFFIXES):
                continue  # "Governor" of "Governor Mario": the fill keeps a title, it names no one
            if label in NAME_LABELS or zipf_frequency(w, "en") < RARE_ZIPF:
                keys.append((w, "part"))
    return keys


@dataclass(frozen=True, slots=True)
class Removed:
    """One value the masking removed from a document, and the keys it is looked for as."""

    label: str
    value: str
    keys: tuple[tuple[str, str], ...]


def removed(values: Iterable[tuple[str, str]], min_chars: int = 2) -> tuple[list[Removed], int]:
    """``(label, value)`` pairs -> (the values to look for, one per letters-and-digits form; number skipped)."""
    out: dict[str, Removed] = {}
    skipped = 0
    for label, value in values:
        plain = canonical(value)
        if len(plain) < min_chars:
            skipped += 1
            continue
        if plain not in out:
            out[plain] = Removed(label, value, tuple(value_keys(value, label)))
    return list(out.values()), skipped


class TextIndex:
    """A text's letter-and-digit runs, case-folded and joined, for word-boundary look-ups of keys."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = [(m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]
        parts = [text[s:e].casefold() for s, e in self.tokens]
        self.joined = "".join(parts)
        self.starts: dict[int, int] = {}
        self.ends: dict[int, int] = {}
        pos = 0
        for i, p in enumerate(parts):
            self.starts[pos] = i
            pos += len(p)
            self.ends[pos] = i

    def find(self, key: str) -> Iterator[tuple[int, int]]:
        """(first token, last token) of every match of ``key`` that starts and ends at a token boundary."""
        if not key:
            return
        i = self.joined.find(key)
        while i >= 0:
            a, b = self.starts.get(i), self.ends.get(i + len(key))
            if a is not None and b is not None:
                yield a, b
            i = self.joined.find(key, i + 1)


@dataclass(slots=True)
class Survivor:
    doc: str  # the document id ("*" in a manifest, which belongs to no document)
    field: str  # the record field, or FILE:field for a side file
    start: int  # offsets in that field's text (a side file: in its line)
    end: int
    label: str
    form: str  # verbatim, normalised, spelled, spoken, part (", spelled")
    line: int | None = None  # side files: the line
    in_substitute: bool = False
    value: str = ""
    found: str = ""


@dataclass(slots=True)
class SubstituteHit:
    doc: str
    placeholder: str
    label: str
    start: int
    end: int
    value: str = ""


@dataclass(slots=True)
class Report:
    documents: int = 0
    values: int = 0
    skipped_short: int = 0
    values_from: str = ""
    files: list[str] = field(default_factory=list)
    survivors: list[Survivor] = field(default_factory=list)
    substitutes: list[SubstituteHit] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.survivors and not self.substitutes

    def to_dict(self, show_values: bool = False) -> dict[str, Any]:
        def strip(d: dict[str, Any]) -> dict[str, Any]:
            return d if show_values else {k: v for k, v in d.items() if k not in ("value", "found")}

        return {"clean": self.clean, "documents": self.documents, "values": self.values,
                "skipped_short": self.skipped_short, "values_from": self.values_from, "files": self.files,
                "survivors": [strip(asdict(s)) for s in self.survivors],
                "substitutes_equal_original": [strip(asdict(s)) for s in self.substitutes]}


def find_survivors(text: str, values: Sequence[Removed], doc: str, field_name: str,
                   substitutes: Sequence[tuple[int, int]] = (), line: int | None = None) -> list[Survivor]:
    """Every removed value found in ``text`` (one report per stretch of text)."""
    if not values or not text:
        return []
    idx = TextIndex(text)
    out: dict[tuple[int, int], Survivor] = {}
    for v in values:
        value_tokens = _TOKEN_RE.findall(v.value)
        for key, kind in v.keys:
            for a, b in idx.find(key):
                s, e = idx.tokens[a][0], idx.tokens[b][1]
                if (s, e) in out:
                    continue
                found = text[s:e]
                spelled = b > a and all(t[1] - t[0] == 1 for t in idx.tokens[a:b + 1]) \
                    and not all(len(t) == 1 for t in value_tokens)
                if kind == "spoken":
                    form = "spoken"
                elif kind == "part":
                    form = "part, spelled" if spelled else "part"
                elif found == v.value:
                    form = "verbatim"
                else:
                    form = "spelled" if spelled else "normalised"
                inside = any(ss < e and s < se for ss, se in substitutes)
                out[(s, e)] = Survivor(doc, field_name, s, e, v.label, form, line, inside, v.value, found)
    kept: list[Survivor] = []  # a part inside a whole match ("Lopez" in "Maria Lopez") is that match
    for x in sorted(out.values(), key=lambda x: x.start - x.end):
        if not any(k.start <= x.start and x.end <= k.end for k in kept):
            kept.append(x)
    return sorted(kept, key=lambda x: (x.start, x.end))


def _field_texts(rec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for k, v in rec.items():
        if isinstance(v, str):
            yield k, v
        elif isinstance(v, (list, dict)):
            yield k, json.dumps(v, ensure_ascii=False)
        elif v is not None and not isinstance(v, bool):
            yield k, str(v)


def side_files(filled: str | Path) -> list[Path]:
    """The files veil writes beside an output, that exist."""
    from veil.io.output import companion
    from veil.io.records import substitutions_path

    subs = substitutions_path(filled)
    cands = [subs, companion(filled, ".veil.json"), companion(filled, ".progress.json"),
             companion(filled, ".partial"), companion(subs, ".partial")]
    return [p for p in cands if p.is_file()]


def _check_side_file(path: Path, values: dict[str, list[Removed]], all_values: list[Removed], id_field: str,
                     report: Report) -> None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as e:
        raise VeilError(f"{path}: cannot read ({e.strerror})") from None
    whole_json = path.name.endswith((".veil.json", ".progress.json"))
    if whole_json:  # one JSON object over several lines: every document's values
        for n, line in enumerate(lines, 1):
            report.survivors += find_survivors(line, all_values, "*", path.name, line=n)
        return
    for n, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            rec = None
        if isinstance(rec, dict):
            doc = str(rec.get(id_field, rec.get("id", "")))
            mine = values.get(doc)
            doc_values, doc_name = (mine, doc) if mine is not None else (all_values, "*")
            for k, text in _field_texts(rec):
                report.survivors += find_survivors(text, doc_values, doc_name, f"{path.name}:{k}", line=n)
        else:
            report.survivors += find_survivors(line, all_values, "*", path.name, line=n)


def verify(original: str | Path, filled: str | Path, masked: str | Path | None = None, *, fields: Any = None,
           original_format: str | None = None, filled_format: str | None = None, masked_format: str | None = None,
           engine: Any = None, engine_name: str = "", min_chars: int = 2, skip_labels: Iterable[str] = (),
           batch_size: int = 256) -> Report:
    """Check FILLED against ORIGINAL (see the module docstring). ``engine`` re-masks when ``masked`` is None."""
    from veil.io.formats import iter_batches, read_documents
    from veil.io.records import VEIL_FIELDS, read_filled, read_masked
    from veil.mask.align import original_values

    fields = fields or VEIL_FIELDS
    skip = set(skip_labels)
    for p, what in ((original, "original"), (filled, "filled"), (masked, "masked")):
        if p is not None and not Path(p).exists():
            raise VeilError(f"{p}: no such {what} file")
    originals = {d.id: d.text for d in read_documents(original, original_format, fields)}
    report = Report(files=[Path(filled).name])
    values: dict[str, list[Removed]] = {}
    if masked is not None:
        report.values_from = f"{Path(masked).name} (placeholders aligned to the original)"
        for md in read_masked(masked, masked_format, fields):
            if md.id not in originals:
                raise VeilError(f"{masked}: document {md.id!r} has no record with the same id in {original}")
            pairs = [(label, v) for _, _, label, v in original_values(originals[md.id], md) if label not in skip]
            values[md.id], skipped = removed(pairs, min_chars)
            report.skipped_short += skipped
    else:
        if engine is None:
            raise VeilError("without --masked, verify masks the original again: give the maskers")
        report.values_from = f"masking {Path(original).name} again with {engine_name or 'the given maskers'}"
        docs = list(read_documents(original, original_format, fields))
        for batch in iter_batches(docs, batch_size):
            for d, spans in zip(batch, engine.detect(batch)):
                pairs = [(s.label, d.text[s.start:s.end]) for s in spans if s.label not in skip]
                values[d.id], skipped = removed(pairs, min_chars)
                report.skipped_short += skipped
    for fd in read_filled(filled, filled_format, fields):
        if fd.id not in originals:
            raise VeilError(f"{filled}: document {fd.id!r} has no record with the same id in {original}")
        if fd.id not in values:
            raise VeilError(f"{filled}: document {fd.id!r} is not in {masked}")
        mine = values[fd.id]
        report.documents += 1
        report.values += len(mine)
        subs = [(s.start, s.end) for s in fd.substitutions]
        rec = {fields.text: fd.text, **({fields.id: fd.id} if fields.id else {}),
               **({fields.person: fd.person} if fields.person and fd.person is not None else {}),
               **({fields.group: fd.group} if fields.group and fd.group is not None else {}), **fd.meta}
        for name, text in _field_texts(rec):
            report.survivors += find_survivors(text, mine, fd.id, name, subs if name == fields.text else ())
        plains = {canonical(v.value): v for v in mine}
        for s in fd.substitutions:
            hit = plains.get(canonical(s.substitute))
            if hit is not None:
                report.substitutes.append(SubstituteHit(fd.id, s.placeholder, s.label, s.start, s.end, hit.value))
    all_values = list({canonical(v.value): v for vs in values.values() for v in vs}.values())
    for path in side_files(filled):
        report.files.append(path.name)
        _check_side_file(path, values, all_values, fields.id or "id", report)
    return report


def format_report(r: Report, show_values: bool = False) -> str:
    lines = [f"values from: {r.values_from}",
             f"{r.documents} documents, {r.values} removed values looked for"
             + (f" ({r.skipped_short} shorter than the minimum skipped)" if r.skipped_short else "")
             + f"; files: {', '.join(r.files)}"]
    if r.clean:
        lines.append("CLEAN: no removed value survives")
        return "\n".join(lines)
    if r.survivors:
        docs = len({s.doc for s in r.survivors if s.doc != "*"})
        manifests = sum(s.doc == "*" for s in r.survivors)
        lines.append(f"FOUND {len(r.survivors)} surviving value(s) in {docs} document(s)"
                     + (f" and {manifests} in manifests" if manifests else "")
                     + ("" if show_values else " (values hidden; --show-values shows them)") + ":")
        head = ["document", "field", "line", "start", "end", "type", "form", "in substitute"]
        rows = [[s.doc, s.field, "" if s.line is None else str(s.line), str(s.start), str(s.end), s.label, s.form,
                 "yes" if s.in_substitute else ""] + ([s.value, s.found] if show_values else [])
                for s in r.survivors]
        lines += _table(head + (["value", "found"] if show_values else []), rows)
    if r.substitutes:
        lines.append(f"{len(r.substitutes)} substitute(s) equal an original value of their document:")
        head = ["document", "placeholder", "start", "end", "type"] + (["value"] if show_values else [])
        rows = [[s.doc, s.placeholder, str(s.start), str(s.end), s.label] + ([s.value] if show_values else [])
                for s in r.substitutes]
        lines += _table(head, rows)
    return "\n".join(lines)


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(c.replace("\n", " ").ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    return out
