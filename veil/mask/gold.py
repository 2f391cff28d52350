"""Detect and mask stage: readers for gold (human-annotated) spans, used to score maskers.

The formats of ``veil.registry.gold_formats``, each read into :class:`GoldDocument` (a ``veil.types.Document`` plus its gold
spans, offsets on ``document.text``):

- ``tab``: the Text Anonymization Benchmark JSONL (one case per line: ``metadata.provenance``,
  ``text``, ``entities`` with ``start_offset``, ``end_offset``, ``entity_type``, ``entity_id``,
  ``identifier_type`` DIRECT / QUASI / NO_MASK). Every mention is kept, NO_MASK included.
- ``presidio``: the Presidio synthetic JSON list (``full_text`` and ``spans`` with
  ``entity_type``, ``start_position``, ``end_position``).
- ``conll``: CoNLL-2003 (``word POS chunk TAG``, IOB1) and WNUT-17 (``token<TAB>TAG``, BIO) files;
  the tag is the last column. Tokens are joined by one space and sentences by a newline;
  ``-DOCSTART-`` lines split documents (files without them give one document per sentence).
- ``switchboard_pii``: personal information annotated in real telephone conversations (JSON lines
  ``{id: "<conversation>-<line>", text, spans: [{start, end, type, class, value}]}``); ``class`` is
  DIRECT or QUASI (to be masked) or OPTIONAL (public names and topics: a masker may mask them or
  not). One document per utterance; ``doc.group`` is the conversation; mentions of one conversation
  with the same type and surface share an ``entity_id``.
- ``sgd``: the Schema-Guided Dialogue turns (JSON lines, plain or gzip, ``{id, dialogue, services, speaker, text,
  slots: [{start, end, slot, service}]}``), each slot typed and classed by the ``slot_classes.json`` beside the
  file (switchboard_pii types and classes; a slot mapped to null is not personal and not gold). One document
  per turn, ``doc.group`` the dialogue; text outside every slot holds no personal information.
- ``review``: what ``veil review --export gold`` writes from a human review of a user's own corpus,
  JSONL ``{id, text, spans: [{start, end, label, identifier_type, entity_id}], rejected: [...]}``:
  the masks a reviewer kept and the PI they found missed, each DIRECT or QUASI (scored as TAB's
  identifiers); ``rejected`` (masks that were not PI) is not gold, so masking it costs precision.

Gold data is read whole (these sets are a few MB); bad input raises ``InputError`` with the line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from veil.errors import InputError, VeilError
from veil.types import Document

#: identifier types (TAB, switchboard_pii, review) that must be masked
TO_MASK = ("DIRECT", "QUASI")
#: identifier types a masker may mask without a false positive (switchboard_pii's OPTIONAL: public names, topics)
MAY_MASK = ("DIRECT", "QUASI", "OPTIONAL")


@dataclass(frozen=True, slots=True)
class GoldSpan:
    """One annotated mention: ``text[start:end]`` of type ``label`` (the gold set's own label)."""

    start: int
    end: int
    label: str
    identifier_type: str | None = None  # TAB: DIRECT, QUASI or NO_MASK; switchboard_pii: DIRECT, QUASI or OPTIONAL
    entity_id: str | None = None  # TAB, switchboard_pii: mentions sharing an id are the same entity


@dataclass(slots=True)
class GoldDocument:
    doc: Document
    spans: list[GoldSpan] = field(default_factory=list)


def read_gold(path: str | Path, fmt: str) -> list[GoldDocument]:
    """Read a gold file in one of the formats of ``veil.registry.gold_formats`` (``tab``, ``presidio``, ``conll``, ``review``)."""
    from veil.registry import gold_formats

    if fmt not in gold_formats:
        raise VeilError(f"unknown gold format {fmt!r}; choose from {', '.join(gold_formats.names())}")
    reader = gold_formats.get(fmt)
    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), None, "no such file")
    docs = reader(path)
    if not docs:
        raise InputError(str(path), None, "no documents found")
    return docs


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        line = path.read_bytes()[: e.start].count(b"\n") + 1
        raise InputError(str(path), line, f"not valid UTF-8 ({e.reason})") from None


def _check_offsets(path: Path, where: int, text: str, start: object, end: object) -> tuple[int, int]:
    if not isinstance(start, int) or not isinstance(end, int) or not (0 <= start < end <= len(text)):
        raise InputError(str(path), where, f"span offsets [{start}, {end}) do not fit a text of "
                                           f"length {len(text)}")
    return start, end


def _jsonl(path: Path, skip_blank: bool = False) -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` of a JSONL gold file; a blank line is an error unless ``skip_blank``."""
    for lineno, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip():
            if skip_blank:
                continue
            raise InputError(str(path), lineno, "empty line (expected one JSON object per line)")
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(str(path), lineno, f"invalid JSON ({e.msg})") from None


def read_tab(path: str | Path) -> list[GoldDocument]:
    """TAB JSONL: one ``GoldDocument`` per line; ``doc.id`` is the case id (``provenance.doc_id``)."""
    path = Path(path)
    out: list[GoldDocument] = []
    for lineno, rec in _jsonl(path):
        try:
            meta = rec.get("metadata") or {}
            prov = meta.get("provenance") or {}
            text = rec["text"]
            entities = rec["entities"]
        except (KeyError, AttributeError, TypeError) as e:
            raise InputError(str(path), lineno, f"missing field {e} (need text, entities)") from None
        if not isinstance(text, str):
            raise InputError(str(path), lineno, "field 'text' is not a string")
        doc_id = str(prov.get("doc_id") or meta.get("data_id") or f"line{lineno}")
        spans = []
        for ent in entities:
            try:
                start, end = _check_offsets(path, lineno, text, ent["start_offset"], ent["end_offset"])
                itype = ent["identifier_type"]
                if itype not in ("DIRECT", "QUASI", "NO_MASK"):
                    raise InputError(str(path), lineno, f"unknown identifier_type {itype!r}")
                spans.append(GoldSpan(start, end, str(ent["entity_type"]), itype, str(ent["entity_id"])))
            except KeyError as e:
                raise InputError(str(path), lineno, f"entity without field {e}") from None
        meta_out = {k: prov[k] for k in ("applicant", "dataset_type", "annotator", "countries", "year")
                    if k in prov}
        out.append(GoldDocument(Document(id=doc_id, text=text, meta=meta_out), spans))
    return out


def read_presidio(path: str | Path) -> list[GoldDocument]:
    """Presidio synthetic JSON: a list of records; ``doc.id`` is the record's index."""
    path = Path(path)
    try:
        records = json.loads(_read_text(path))
    except json.JSONDecodeError as e:
        raise InputError(str(path), e.lineno, f"invalid JSON ({e.msg})") from None
    if not isinstance(records, list):
        raise InputError(str(path), None, "expected a JSON list of records")
    out: list[GoldDocument] = []
    for i, rec in enumerate(records):
        try:
            text = rec["full_text"]
            spans = [GoldSpan(*_check_offsets(path, i + 1, text, s["start_position"], s["end_position"]),
                              str(s["entity_type"]))
                     for s in rec["spans"]]
        except (KeyError, TypeError) as e:
            raise InputError(str(path), i + 1, f"record without field {e} (need full_text, spans)") from None
        meta = {"template_id": rec["template_id"]} if "template_id" in rec else {}
        out.append(GoldDocument(Document(id=str(i), text=text, meta=meta), sorted(spans, key=lambda s: s.start)))
    return out


def _conll_sentences(path: Path, raw: str) -> Iterator[tuple[int, list[tuple[str, str]] | None]]:
    """(line number, [(token, tag)]) per sentence; ``None`` marks a ``-DOCSTART-`` line."""
    sent: list[tuple[str, str]] = []
    start_line = 1
    for lineno, line in enumerate(raw.splitlines(), 1):
        cols = line.split()
        if not cols:
            if sent:
                yield start_line, sent
            sent, start_line = [], lineno + 1
            continue
        if cols[0] == "-DOCSTART-":
            if sent:
                yield start_line, sent
            sent, start_line = [], lineno + 1
            yield lineno, None
            continue
        if len(cols) < 2:
            raise InputError(str(path), lineno, "expected 'token ... TAG' (at least two columns)")
        tag = cols[-1]
        if tag != "O" and not (len(tag) > 2 and tag[:2] in ("B-", "I-")):
            raise InputError(str(path), lineno, f"tag {tag!r} is not O, B-TYPE or I-TYPE")
        sent.append((cols[0], tag))
    if sent:
        yield start_line, sent


def read_conll(path: str | Path) -> list[GoldDocument]:
    """CoNLL-2003 or WNUT-17 BIO/IOB1 file; spans carry the tag's type (PER, LOC, person, ...)."""
    path = Path(path)
    out: list[GoldDocument] = []
    texts: list[str] = []
    spans: list[GoldSpan] = []
    pos = 0
    first_line = 1

    def flush() -> None:
        nonlocal texts, spans, pos
        if texts:
            out.append(GoldDocument(Document(id=f"{path.name}:{first_line}", text="\n".join(texts)), spans))
        texts, spans, pos = [], [], 0

    raw = _read_text(path)
    # Sentences before the first -DOCSTART- (eng.testa has some) form one document too.
    has_docstart = "-DOCSTART-" in raw
    for lineno, sent in _conll_sentences(path, raw):
        if sent is None:
            flush()
            continue
        if not has_docstart:
            flush()
        if not texts:
            first_line = lineno
        if texts:
            pos += 1  # the newline between sentences
        cur: list | None = None  # [start, end, type]
        parts = []
        for j, (tok, tag) in enumerate(sent):
            if j:
                pos += 1
            start, end = pos, pos + len(tok)
            parts.append(tok)
            pos = end
            kind = tag[2:] if tag != "O" else None
            # IOB1 and BIO both: B- always starts; I- continues only an entity of the same type
            if kind is not None and cur is not None and tag.startswith("I-") and cur[2] == kind:
                cur[1] = end
                continue
            if cur is not None:
                spans.append(GoldSpan(cur[0], cur[1], cur[2]))
                cur = None
            if kind is not None:
                cur = [start, end, kind]
        if cur is not None:
            spans.append(GoldSpan(cur[0], cur[1], cur[2]))
        texts.append(" ".join(parts))
    flush()
    return out


SWITCHBOARD_PII_CLASSES = ("DIRECT", "QUASI", "OPTIONAL")
#: the types of switchboard_pii's GUIDELINES.md
SWITCHBOARD_PII_TYPES = ("PERSON", "LOCATION", "ORGANIZATION", "DATE_TIME", "AGE", "OCCUPATION", "DEMOGRAPHIC",
                         "MONEY", "NUMBER", "EMAIL", "ADDRESS", "MISC")


def read_switchboard_pii(path: str | Path) -> list[GoldDocument]:
    """switchboard_pii JSONL: one ``GoldDocument`` per utterance, its ``group`` the conversation."""
    from veil.textutil import normalise_surface

    path = Path(path)
    out: list[GoldDocument] = []
    for lineno, rec in _jsonl(path):
        try:
            doc_id, text, raw = str(rec["id"]), rec["text"], rec["spans"]
        except (KeyError, TypeError) as e:
            raise InputError(str(path), lineno, f"missing field {e} (need id, text, spans)") from None
        if not isinstance(text, str) or not isinstance(raw, list):
            raise InputError(str(path), lineno, "field 'text' must be a string and 'spans' a list")
        conversation = doc_id.rsplit("-", 1)[0]
        spans = []
        for sp in raw:
            try:
                start, end = _check_offsets(path, lineno, text, sp["start"], sp["end"])
                kind, cls = sp["type"], sp["class"]
            except (KeyError, TypeError) as e:
                raise InputError(str(path), lineno, f"span without field {e} (need start, end, type, class)") from None
            if cls not in SWITCHBOARD_PII_CLASSES:
                raise InputError(str(path), lineno, f"unknown class {cls!r} (DIRECT, QUASI or OPTIONAL)")
            if kind not in SWITCHBOARD_PII_TYPES:
                raise InputError(str(path), lineno, f"unknown type {kind!r}; choose from {', '.join(SWITCHBOARD_PII_TYPES)}")
            entity = f"{conversation}:{kind}:{normalise_surface(text[start:end]) or text[start:end]}"
            spans.append(GoldSpan(start, end, kind, cls, entity))
        out.append(GoldDocument(Document(id=doc_id, text=text, group=conversation, meta={"conversation": conversation}),
                                sorted(spans, key=lambda s: s.start)))
    return out


def read_review(path: str | Path) -> list[GoldDocument]:
    """``veil review --export gold`` JSONL: one ``GoldDocument`` per reviewed document."""
    path = Path(path)
    out: list[GoldDocument] = []
    for lineno, rec in _jsonl(path, skip_blank=True):
        try:
            text, raw = rec["text"], rec["spans"]
        except (KeyError, TypeError) as e:
            raise InputError(str(path), lineno, f"missing field {e} (need id, text, spans)") from None
        if not isinstance(text, str) or not isinstance(raw, list):
            raise InputError(str(path), lineno, "'text' must be a string and 'spans' a list")
        spans = []
        for s in raw:
            try:
                start, end = _check_offsets(path, lineno, text, s["start"], s["end"])
                itype = s["identifier_type"]
                if itype not in TO_MASK:
                    raise InputError(str(path), lineno, f"identifier_type {itype!r} is not DIRECT or QUASI")
                spans.append(GoldSpan(start, end, str(s["label"]), itype, str(s.get("entity_id") or "") or None))
            except (KeyError, TypeError) as e:
                raise InputError(str(path), lineno, f"span without field {e} (need start, end, label, "
                                                    "identifier_type)") from None
        meta = {k: rec[k] for k in ("reviewer",) if k in rec}
        group = rec.get("group")
        out.append(GoldDocument(Document(id=str(rec.get("id", lineno)), text=text,
                                         group=None if group is None else str(group), meta=meta),
                                sorted(spans, key=lambda g: (g.start, g.end))))
    return out


def sgd_family(service: str) -> str:
    """An SGD service's family: ``Restaurants_2`` -> ``Restaurants``."""
    return service.rsplit("_", 1)[0]


def read_sgd(path: str | Path, services: Any = None, classes: str | Path | None = None) -> list[GoldDocument]:
    """SGD turns: one ``GoldDocument`` per turn, its ``group`` the dialogue.

    ``services``: keep only the dialogues whose every service is of these families or names ("Restaurants",
    "Music_1"; a comma-separated string or a list). ``classes``: the slot table (default ``slot_classes.json``
    beside the file).
    """
    import gzip

    from veil.textutil import normalise_surface

    path = Path(path)
    table_path = Path(classes) if classes is not None else path.parent / "slot_classes.json"
    if not table_path.is_file():
        raise InputError(str(table_path), None, "no slot table (slot_classes.json: slot -> [type, class] or null)")
    table = json.loads(table_path.read_text(encoding="utf-8"))
    if isinstance(services, str):
        services = [x.strip() for x in services.split(",") if x.strip()]
    wanted = set(services or ())
    raw = gzip.decompress(path.read_bytes()).decode("utf-8") if path.suffix == ".gz" else _read_text(path)
    out: list[GoldDocument] = []
    for lineno, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            text, slots, dialogue = rec["text"], rec["slots"], str(rec["dialogue"])
            names = list(rec.get("services") or [])
        except json.JSONDecodeError as e:
            raise InputError(str(path), lineno, f"invalid JSON ({e.msg})") from None
        except (KeyError, TypeError) as e:
            raise InputError(str(path), lineno, f"missing field {e} (need dialogue, text, slots)") from None
        if wanted and not all(n in wanted or sgd_family(n) in wanted for n in names):
            continue
        spans = []
        for sl in slots:
            try:
                start, end = _check_offsets(path, lineno, text, sl["start"], sl["end"])
                entry = table[sl["slot"]]
            except KeyError as e:
                raise InputError(str(path), lineno, f"slot without field or class {e}") from None
            if entry is None:
                continue
            kind, cls = entry
            spans.append(GoldSpan(start, end, kind, cls,
                                  f"{dialogue}:{kind}:{normalise_surface(text[start:end]) or text[start:end]}"))
        out.append(GoldDocument(Document(id=str(rec.get("id", f"{dialogue}-{lineno}")), text=text, group=dialogue,
                                         meta={"conversation": dialogue, "services": names,
                                               "speaker": rec.get("speaker")}),
                                sorted(spans, key=lambda g: (g.start, g.end))))
    return out


#: Presidio synthetic records are held out from detector training (and evaluated on) by template:
#: ``template_id % PRESIDIO_TEMPLATE_BUCKETS < PRESIDIO_HELD_OUT_BUCKETS`` (a fifth: 141 of 750 records).
#: Splitting by template, not by record, keeps one sentence pattern from being seen in both. The one
#: place this split is defined: the detector's training data and the benchmarks import it. The shipped
#: neural detector (veil/data/detector) was trained on the other templates: a changed rule needs a
#: retrained detector, or its scores here are on records it has seen.
PRESIDIO_TEMPLATE_BUCKETS = 5
PRESIDIO_HELD_OUT_BUCKETS = 1


def presidio_heldout(gd: GoldDocument) -> bool:
    """Whether a Presidio synthetic record is held out (by its template id, else its record index)."""
    tid = gd.doc.meta.get("template_id")
    key = int(tid) if tid is not None else int(gd.doc.id)
    return key % PRESIDIO_TEMPLATE_BUCKETS < PRESIDIO_HELD_OUT_BUCKETS


def presidio_split(golds: list[GoldDocument]) -> tuple[list[GoldDocument], list[GoldDocument]]:
    """(training records, held-out records) of the Presidio synthetic set."""
    return [g for g in golds if not presidio_heldout(g)], [g for g in golds if presidio_heldout(g)]


def presidio_held_out(golds: list[GoldDocument]) -> list[GoldDocument]:
    return presidio_split(golds)[1]
