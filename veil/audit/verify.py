"""Audit stage: ``veil verify`` -- no value the masking removed survives in a filled corpus.

**Which values.** With the masked corpus (``--masked``), the removed values are exact: each
placeholder's original text, found by aligning the masked record with its original
(:mod:`veil.mask.align`). Without it, the original corpus is masked again with the given maskers
(default: veil's) and what they find is taken as removed: a check that does not trust the run that
wrote FILLED, but only as good as those maskers. Documents pair by id.

**Where.** Every field of every filled record but its id (the text, any other field copied through), the
substitutions file beside it (``FILLED.substitutions.jsonl``; its ``start`` and ``end`` are veil's offsets,
not text) and the files veil writes next to an output (``.veil.json``, ``.progress.json``, an unfinished
run's ``.partial`` files). A value is
looked for wherever the run treated it as one document: its own record, or with a group field
(``--group-field``, else the one ``veil mask`` recorded in ``MASKED.veil.json`` or the fill in
``FILLED.veil.json``) every record of its group: a name masked in one utterance of a call and left
in another is found. In a manifest, which belongs to no document, every value is looked for.

**How** (:mod:`veil.audit.verify_match`). Texts and values are compared in one normal form
(compatibility forms, accents, digits of every script, Cyrillic and Greek look-alikes, case, spoken
digits), as runs of letters and digits at word boundaries: "Maria Lopez" is found as
"maria-lopez", "MARIA  LOPEZ", "M-A-R-I-A L-O-P-E-Z", "Mаria Lоpez" (Cyrillic) and "María
López"; "(415) 555-0199" as "(４１５) ５５５-０１９９", "four 1 five 555 0199" and "four one five
...". A word of a longer value alone (``part``) when it identifies: a word of a person's name, the
user part of an e-mail address (never its provider: "gmail", "yahoo"), a rare word of another value
("Northwind" of "Northwind Bank", not "Bank"). A match made of everyday words only ("mark", "hope",
"ski resorts") counts only where it reads as the name it was: capitalised inside a sentence in cased text, after a
naming cue ("my name is mark") in uncased text. One scan of each text over a table of every key's
prefixes: linear in the text's length. Values with fewer than ``min_chars`` letters and digits are
not looked for (counted as skipped). Each survivor is reported with its document, field, offsets,
type and form (``verbatim``, ``normalised``, ``spelled``, ``spoken``, ``part``).

**By chance** (:mod:`veil.audit.verify_chance`). A substitute that holds a removed value of its
document (the fill drew the real value back) is reported apart, with the pool it was drawn from,
and fails the run only when such matches are more frequent than the pools explain.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from veil.audit.verify_chance import ALPHA, Chance, SubstituteHit, judge
from veil.audit.verify_match import (NAME_LABELS, RARE_ZIPF, Matcher, Removed, TextIndex, canonical,  # noqa: F401
                                     everyday, everyday_phrase, is_cased, norm_tokens, reads_as_name, removed,
                                     value_keys)
from veil.errors import VeilError
from veil.mask.propagation import WHOLE_LABELS


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
class Report:
    documents: int = 0
    values: int = 0
    skipped_short: int = 0
    values_from: str = ""
    group_field: str | None = None
    files: list[str] = field(default_factory=list)
    survivors: list[Survivor] = field(default_factory=list)
    substitutes: list[SubstituteHit] = field(default_factory=list)
    chance: Chance = field(default_factory=Chance)

    @property
    def clean(self) -> bool:
        return not self.survivors and self.chance.explained

    def to_dict(self, show_values: bool = False) -> dict[str, Any]:
        def strip(d: dict[str, Any]) -> dict[str, Any]:
            return d if show_values else {k: v for k, v in d.items() if k not in ("value", "found")}

        return {"clean": self.clean, "documents": self.documents, "values": self.values,
                "skipped_short": self.skipped_short, "values_from": self.values_from, "files": self.files,
                "group_field": self.group_field,
                "survivors": [strip(asdict(s)) for s in self.survivors],
                "substitutes_equal_original": [strip(asdict(s)) for s in self.substitutes],
                "chance": self.chance.to_dict()}


def find_survivors(text: str, values: Sequence[Removed] | Matcher, doc: str, field_name: str,
                   substitutes: Sequence[tuple[int, int]] = (), line: int | None = None,
                   cased: bool = True) -> list[Survivor]:
    """Every removed value found in ``text`` (one report per stretch of text). A match wholly inside one of
    ``substitutes`` is the substitute's own (judged as a chance match), not a survivor; ``cased``: the text
    is written in mixed case (an everyday word is a name only capitalised)."""
    matcher = values if isinstance(values, Matcher) else Matcher(values)
    if not matcher.keys or not text:
        return []
    idx = TextIndex(text)
    subs = sorted(substitutes)
    sub_starts = [x[0] for x in subs]
    out: dict[tuple[int, int], Survivor] = {}
    for a, b, entries in matcher.scan(idx):
        s, e = idx.tokens[a][0], idx.tokens[b][1]
        if (s, e) in out:
            continue
        near = subs[max(0, bisect.bisect_right(sub_starts, s) - 1):bisect.bisect_left(sub_starts, e)]
        if any(ss <= s and e <= se for ss, se in near):
            continue
        if b > a and not _word_aligned(idx, a, b, entries):
            continue  # "a, my" is no "Amy": a word of the match is no word of the value
        v, kind = entries[0]
        # a person's whole name ("mark smith"), an e-mail or phone said ("maria dot lopez at ..."), an
        # e-mail's user part ("maria lopez"): that one anywhere; a plain phrase ("taxi driver") by its reading
        whole = b > a and (kind != "text" or v.label in NAME_LABELS or not _plain_phrase(v.value))
        everyday_match = not whole and everyday_phrase(idx, a, b)
        if everyday_match and not reads_as_name(idx, a, cased):
            continue  # "mark my words" is not the caller Mark; "a taxi driver" is not the caller's job
        if everyday_match and cased and v.label in WHOLE_LABELS and v.value.islower():
            continue  # the date "night", said in lower case, is not the "Night" of "Saturday Night Alive"
        if a == b and cased and not text[s].isupper() and _capitalised_in(v.value, idx.words[a]):
            continue  # "symphony" is not the "Symphony" of "Nitny Valley Symphony", nor "metroplex" "Metroplex"
        found = text[s:e]
        spelled = b > a and all(t[1] - t[0] == 1 for t in idx.tokens[a:b + 1]) \
            and not all(len(t) == 1 for t in value_tokens(v.value))
        if kind == "spoken" or (kind == "text" and found != v.value and _spoken_digits(idx, a, b, v.value)):
            form = "spoken"
        elif kind == "part":
            form = "part, spelled" if spelled else "part"
        elif found == v.value:
            form = "verbatim"
        else:
            form = "spelled" if spelled else "normalised"
        inside = any(ss < e and s < se for ss, se in near)
        out[(s, e)] = Survivor(doc, field_name, s, e, v.label, form, line, inside, v.value, found)
    kept: list[Survivor] = []  # a part inside a whole match ("Lopez" in "Maria Lopez") is that match
    reach = -1  # the furthest end of the matches starting at or before this one (sorted: longest first)
    for x in sorted(out.values(), key=lambda x: (x.start, -x.end)):
        if x.end > reach:
            kept.append(x)
            reach = x.end
    return kept


def _plain_phrase(value: str) -> bool:
    return all(c.isalpha() or c.isspace() or c in "'’-" for c in value)


def _capitalised_in(value: str, word: str) -> bool:
    """Whether ``word`` (normal form) is written with a capital in ``value``."""
    from veil.audit.verify_match import fold

    return any(fold(t)[0] == word and t[:1].isupper() for t in value_tokens(value))


def _word_aligned(idx: TextIndex, a: int, b: int, entries: Sequence[tuple[Removed, str]]) -> bool:
    """Whether a match of several tokens reads as the value: each token a digit run, a single letter (spelled),
    or a word of the value as written or said ("maria-lopez" for "Maria Lopez"; not "a, my" for "Amy")."""
    return any(all(len(t) == 1 or t.isdigit() or t in _value_words(v.value, kind == "spoken")
                   for t in idx.norm[a:b + 1]) for v, kind in entries)


@lru_cache(maxsize=65536)
def _value_words(value: str, spoken: bool) -> frozenset[str]:
    """The value's normal-form tokens, and with ``spoken`` those of its speech-recognition form."""
    words = set(norm_tokens(value))
    if spoken:
        from veil.textforms import transform

        words.update(norm_tokens(transform(value, [], "asr")[0]))
    return frozenset(words)


def value_tokens(value: str) -> list[str]:
    from veil.audit.verify_match import _TOKEN_RE

    return _TOKEN_RE.findall(value)


def _spoken_digits(idx: TextIndex, a: int, b: int, value: str) -> bool:
    """Digits said as words on one side only ("four 1 five" for 415, "55501" for "five five five oh one")."""
    from veil.audit.verify_match import DIGIT_WORD

    return any(idx.spoken[a:b + 1]) or any(t.lower() in DIGIT_WORD for t in value_tokens(value))


def _field_texts(rec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for k, v in rec.items():
        if isinstance(v, str):
            yield k, v
        elif isinstance(v, (list, dict)):
            yield k, json.dumps(v, ensure_ascii=False)
        elif v is not None and not isinstance(v, bool):
            yield k, str(v)


#: the fields of a side file's records that hold veil's offsets into a text, never text
_OFFSETS = frozenset({"start", "end"})


def side_files(filled: str | Path) -> list[Path]:
    """The files veil writes beside an output, that exist."""
    from veil.io.output import companion
    from veil.io.records import substitutions_path

    subs = substitutions_path(filled)
    cands = [subs, companion(filled, ".veil.json"), companion(filled, ".progress.json"),
             companion(filled, ".partial"), companion(subs, ".partial")]
    return [p for p in cands if p.is_file()]


def _check_side_file(path: Path, matchers: dict[str, Matcher], everything: Matcher, id_field: str,
                     report: Report, cased: bool, judged: set[tuple[str, Any, Any, Any]]) -> None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as e:
        raise VeilError(f"{path}: cannot read ({e.strerror})") from None
    whole_json = path.name.endswith((".veil.json", ".progress.json"))
    if whole_json:  # one JSON object over several lines: every document's values
        for n, line in enumerate(lines, 1):
            report.survivors += find_survivors(line, everything, "*", path.name, line=n, cased=cased)
        return
    for n, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            rec = None
        if isinstance(rec, dict):
            doc = str(rec.get(id_field, rec.get("id", "")))
            mine = matchers.get(doc)
            matcher, doc_name = (mine, doc) if mine is not None else (everything, "*")
            for k, text in _field_texts(rec):
                if k == id_field or k in _OFFSETS and type(rec[k]) is int:
                    continue  # veil's own offsets: an end at 111 is no value "one, one, one"
                if k == "substitute" and (doc, rec.get("start"), rec.get("end"), text) in judged:
                    continue  # a substitute of the filled corpus: judged with the chance matches
                report.survivors += find_survivors(text, matcher, doc_name, f"{path.name}:{k}", line=n, cased=cased)
        else:
            report.survivors += find_survivors(line, everything, "*", path.name, line=n, cased=cased)


def group_field_of(fields: Any, masked: str | Path | None, filled: str | Path) -> str | None:
    """The group field: the one given, else the one the masking (or filling) run recorded beside its output."""
    if fields.group is not None:
        return fields.group
    from veil.run.corpus import recorded_fields

    for path in (masked, filled):
        rec = recorded_fields(path) if path is not None else None
        if rec is not None and rec.group:
            return rec.group
    return None


def _merged(lists: Iterable[list[Removed]]) -> list[Removed]:
    return list({canonical(v.value): v for vs in lists for v in vs}.values())


def verify(original: str | Path, filled: str | Path, masked: str | Path | None = None, *, fields: Any = None,
           original_format: str | None = None, filled_format: str | None = None, masked_format: str | None = None,
           engine: Any = None, engine_name: str = "", min_chars: int = 2, skip_labels: Iterable[str] = (),
           batch_size: int = 256, alpha: float = ALPHA) -> Report:
    """Check FILLED against ORIGINAL (see the module docstring). ``engine`` re-masks when ``masked`` is None.
    ``fields.group`` None: the group field the run recorded, if any."""
    from dataclasses import replace

    from veil.io.formats import read_documents
    from veil.io.records import VEIL_FIELDS, read_filled, read_masked
    from veil.mask.align import original_values

    fields = fields or replace(VEIL_FIELDS, group=None)
    skip = set(skip_labels)
    for p, what in ((original, "original"), (filled, "filled"), (masked, "masked")):
        if p is not None and not Path(p).exists():
            raise VeilError(f"{p}: no such {what} file")
    group = group_field_of(fields, masked, filled)
    fields = replace(fields, group=group)
    docs = list(read_documents(original, original_format, fields))
    originals = {d.id: d.text for d in docs}
    # a group's records are one document, as veil mask and fill treated them; else each record alone
    group_of = {d.id: ("group", str(d.group)) if group is not None and d.group is not None else ("doc", d.id)
                for d in docs}
    report = Report(files=[Path(filled).name], group_field=group)
    values: dict[str, list[Removed]] = {}
    shapes: dict[tuple[str, str], str | None] = {}
    if masked is not None:
        report.values_from = f"{Path(masked).name} (placeholders aligned to the original)"
        for md in read_masked(masked, masked_format, fields):
            if md.id not in originals:
                raise VeilError(f"{masked}: document {md.id!r} has no record with the same id in {original}")
            pairs = [(label, v) for _, _, label, v in original_values(originals[md.id], md) if label not in skip]
            values[md.id], skipped = removed(pairs, min_chars)
            report.skipped_short += skipped
            shapes.update(((md.id, p.key), p.shape) for p in md.placeholders)
    else:
        if engine is None:
            raise VeilError("without --masked, verify masks the original again: give the maskers")
        report.values_from = f"masking {Path(original).name} again with {engine_name or 'the given maskers'}"
        from veil.run.detect import iter_spans  # the detect stage on the one corpus loop

        for d, spans in zip(docs, iter_spans(docs, engine, batch_size=batch_size, desc="verify: masking again")):
            pairs = [(s.label, d.text[s.start:s.end]) for s in spans if s.label not in skip]
            values[d.id], skipped = removed(pairs, min_chars)
            report.skipped_short += skipped
    filled_docs = []
    for fd in read_filled(filled, filled_format, fields):
        if fd.id not in originals:
            raise VeilError(f"{filled}: document {fd.id!r} has no record with the same id in {original}")
        if fd.id not in values:
            raise VeilError(f"{filled}: document {fd.id!r} is not in {masked}")
        filled_docs.append(fd)
    members: dict[tuple[str, str], list[str]] = {}
    for d in docs:
        members.setdefault(group_of[d.id], []).append(d.id)
    texts: dict[tuple[str, str], list[str]] = {}
    for fd in filled_docs:
        texts.setdefault(group_of[fd.id], []).append(fd.text)
    matchers = {g: Matcher(_merged(values.get(i, []) for i in ids)) for g, ids in members.items()}
    cased = {g: is_cased(t) for g, t in texts.items()}
    doc_matchers = {i: matchers[group_of[i]] for i in values}
    entities: dict[tuple[str, str], list[tuple[str, Any, str | None, bool]]] = {}
    seen: set[tuple[tuple[str, str], str]] = set()
    judged: set[tuple[str, Any, Any, Any]] = set()
    for fd in filled_docs:
        g = group_of[fd.id]
        matcher = matchers[g]
        report.documents += 1
        report.values += len(values[fd.id])
        subs = [(s.start, s.end) for s in fd.substitutions]
        # not the id: verify pairs records by it, and it is the original's, which the masking never changes
        rec = {fields.text: fd.text,
               **({fields.person: fd.person} if fields.person and fd.person is not None else {}),
               **({fields.group: fd.group} if fields.group and fd.group is not None else {}), **fd.meta}
        for name, text in _field_texts(rec):
            report.survivors += find_survivors(text, matcher, fd.id, name, subs if name == fields.text else (),
                                               cased=cased[g])
        for s in fd.substitutions:
            judged.add((fd.id, s.start, s.end, s.substitute))
            if (g, s.key) in seen:  # a repeated mention reuses its entity's substitute: one draw
                continue
            seen.add((g, s.key))
            entities.setdefault(g, []).append((fd.id, s, shapes.get((fd.id, s.key)),
                                               any(matcher.scan(TextIndex(s.substitute)))))
    report.chance, report.substitutes = judge([(matchers[g], subs) for g, subs in entities.items()], alpha)
    everything = Matcher(_merged(values.values()))
    any_cased = any(cased.values())
    for path in side_files(filled):
        report.files.append(path.name)
        _check_side_file(path, doc_matchers, everything, fields.id or "id", report, any_cased, judged)
    return report


def format_report(r: Report, show_values: bool = False) -> str:
    lines = [f"values from: {r.values_from}",
             f"{r.documents} documents, {r.values} removed values looked for"
             + (f" in the whole of each {r.group_field!r} group" if r.group_field else "")
             + (f" ({r.skipped_short} shorter than the minimum skipped)" if r.skipped_short else "")
             + f"; files: {', '.join(r.files)}"]
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
    c = r.chance
    verdict = ("explained by the pools" if c.explained else f"MORE than the pools explain (below {c.alpha:g}): "
               "the fill copies originals")
    lines.append(f"chance: {c.observed} of {c.substitutes} substitutes hold a removed value of their document, "
                 f"{c.expected:.2f} expected from their pools, P(this many or more) = {c.p_value:.3g}: {verdict}")
    if r.substitutes:
        lines.append(f"{len(r.substitutes)} substitute(s) equal an original value of their document (by chance "
                     "unless the count above says otherwise; pool: one draw in N holds one):")
        head = ["document", "placeholder", "start", "end", "type", "pool"] + (["value"] if show_values else [])
        rows = [[s.doc, s.placeholder, str(s.start), str(s.end), s.label,
                 f"1 in {s.pool:g}" + (" or more" if not s.hits else "")] + ([s.value] if show_values else [])
                for s in r.substitutes]
        lines += _table(head, rows)
    if r.clean:
        lines.append("CLEAN: no removed value survives")
    return "\n".join(lines)


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(c.replace("\n", " ").ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    return out
