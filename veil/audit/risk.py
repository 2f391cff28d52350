"""Audit stage: residual-risk scoring of the PI a masking missed (Dialpad paper §4, Table 6).

Every missed piece of personal information (PI) carries an infoType tag (``PERSON_NAME``,
``EMAIL``, ``ORGANIZATION_NAME_SPEAKER``, ...) scored 0–5 by :data:`SCORES_FILE` (the paper's
Table 6); ``TAG_PARTIAL`` (only part of the PI left unmasked) halves the score, rounded as the data
file says (PERSON_NAME 5 -> 3, EMAIL -> 1). A document's score sums its missed PI, each *piece*
of PI counted once however often it is mentioned (the highest score among its mentions). A corpus
passes when the mean plus one standard deviation of its document scores is below 5 (§4.3).

Two ways to get the missed PI:

- **automatic** (:func:`audit_against_gold`): compare the spans a masking produced with gold spans
  (TAB, Presidio synthetic, CoNLL); ``veil.mask.coverage`` decides whether a gold mention is
  covered, *partial* (something identifying left visible) or *missed* (nothing of it masked). Gold entity types map to infoTypes by
  :data:`GOLD_TYPE_MAPS` (documented there; overridable).
- **manual** (``veil.audit.review``): humans annotate masked documents with ``(text)[MISSED_TAG]``.

Statistics follow the columns of the paper's Table 4 (count, mean, std, P95, max, mean + std),
with the sample standard deviation and linearly interpolated percentile (as pandas ``describe``).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from veil.errors import InputError, VeilError
from veil.mask.coverage import COVERED, PARTIAL, Coverage
from veil.numeric import sample_std
from veil.textutil import normalise_surface
from veil.types import Span

SCORES_FILE = Path(__file__).resolve().parent / "data" / "infotype_scores.csv"
#: the paper's threshold: a corpus passes when mean + std of document scores is below it
THRESHOLD = 5.0
MISSED_PREFIX = "MISSED_"
PARTIAL_SUFFIX = "_PARTIAL"


# --- the score table -----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class InfoTypeScore:
    tag: str
    google_info_type: str
    category: str
    score: int
    partial_score: int


class ScoreTable:
    """Tag -> score, read from a CSV in the format of :data:`SCORES_FILE` (``#`` lines are comments)."""

    def __init__(self, rows: Iterable[InfoTypeScore], aliases: Mapping[str, str] | None = None) -> None:
        self.rows: dict[str, InfoTypeScore] = {}
        for r in rows:
            self.rows[r.tag] = r
        self._names: dict[str, str] = {t: t for t in self.rows}
        for r in self.rows.values():
            if r.google_info_type:
                self._names.setdefault(r.google_info_type, r.tag)
        for alias, tag in (aliases or {}).items():
            self._names.setdefault(alias, tag)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "ScoreTable":
        path = Path(path) if path is not None else SCORES_FILE
        from veil.io.formats import read_text

        lines = read_text(path, "score table").splitlines()
        body = [(i, ln) for i, ln in enumerate(lines, 1) if ln.strip() and not ln.lstrip().startswith("#")]
        if not body:
            raise InputError(str(path), None, "empty score table")
        reader = csv.DictReader(io.StringIO("\n".join(ln for _, ln in body)))
        need = {"tag", "score"}
        if not need <= set(reader.fieldnames or ()):
            raise InputError(str(path), body[0][0], f"header must have columns {sorted(need)}")
        rows, aliases = [], {}
        for (lineno, _), rec in zip(body[1:], reader):
            try:
                tag = rec["tag"].strip().upper()
                score = int(rec["score"])
                rounding = (rec.get("partial_rounding") or "down").strip().lower()
                if rounding not in ("up", "down"):
                    raise ValueError(f"partial_rounding must be up or down, not {rounding!r}")
                explicit = (rec.get("partial_score") or "").strip()
                partial = int(explicit) if explicit else (math.ceil(score / 2) if rounding == "up" else score // 2)
                if not (0 <= partial <= score <= 5) or not tag:
                    raise ValueError("need a tag and 0 <= partial_score <= score <= 5")
            except (ValueError, TypeError, AttributeError) as e:
                raise InputError(str(path), lineno, str(e)) from None
            rows.append(InfoTypeScore(tag, (rec.get("google_info_type") or "").strip().upper(),
                                      (rec.get("category") or "").strip(), score, partial))
            for a in (rec.get("aliases") or "").split("|"):
                if a.strip():
                    aliases[a.strip().upper()] = tag
        return cls(rows, aliases)

    def resolve(self, tag: str) -> tuple[str, bool]:
        """``MISSED_PERSON_NAME_PARTIAL`` -> (``PERSON_NAME``, True); accepts Google names and aliases."""
        name = tag.strip().upper().replace(" ", "_")
        if name.startswith(MISSED_PREFIX):
            name = name[len(MISSED_PREFIX):]
        partial = name.endswith(PARTIAL_SUFFIX)
        if partial:
            name = name[: -len(PARTIAL_SUFFIX)]
        try:
            return self._names[name], partial
        except KeyError:
            raise VeilError(f"unknown infoType tag {tag!r}; known: {', '.join(sorted(self.rows))}") from None

    def __contains__(self, tag: str) -> bool:
        try:
            self.resolve(tag)
            return True
        except VeilError:
            return False

    def score(self, tag: str, partial: bool = False) -> int:
        """The score of one missed piece of PI; ``partial`` (or a ``_PARTIAL`` tag) halves it."""
        name, tag_partial = self.resolve(tag)
        row = self.rows[name]
        return row.partial_score if (partial or tag_partial) else row.score


@lru_cache(maxsize=1)
def default_table() -> ScoreTable:
    return ScoreTable.load()


# --- scoring documents ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class MissedPI:
    """One mention of PI left (wholly or partly) unmasked.

    ``entity`` groups mentions of the same piece of PI (spelling variants, TAB's entity ids); when
    absent the normalised surface text groups them. ``text`` is what a reader of the masked
    document can still see (for a partial mention, the unmasked part).
    """

    text: str
    tag: str
    partial: bool = False
    entity: str | None = None
    start: int | None = None
    end: int | None = None
    gold_label: str | None = None

    @property
    def key(self) -> str:
        return self.entity if self.entity else normalise_surface(self.text) or self.text


@dataclass(slots=True)
class ScoredPiece:
    """One piece of PI in a document, however often it was missed: scored once."""

    key: str
    text: str
    tag: str
    partial: bool
    score: int
    mentions: int


@dataclass(slots=True)
class DocumentRisk:
    doc_id: str
    score: int
    pieces: list[ScoredPiece] = field(default_factory=list)
    group: str | None = None
    unscored: list[MissedPI] = field(default_factory=list)  # missed gold mentions with no infoType

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.doc_id, "group": self.group, "score": self.score,
                "missed": [{"text": p.text, "tag": p.tag + (PARTIAL_SUFFIX if p.partial else ""),
                            "score": p.score, "mentions": p.mentions} for p in self.pieces],
                "unscored": [{"text": m.text, "gold_label": m.gold_label, "partial": m.partial}
                             for m in self.unscored]}


def score_document(doc_id: str, missed: Iterable[MissedPI], table: ScoreTable | None = None,
                   group: str | None = None) -> DocumentRisk:
    """Sum the scores of a document's missed PI, each piece (``MissedPI.key``) counted once.

    A piece mentioned several times scores its highest-scoring mention (a name missed whole once
    and partly elsewhere counts as missed whole).
    """
    table = table or default_table()
    pieces: dict[str, ScoredPiece] = {}
    for m in missed:
        tag, tag_partial = table.resolve(m.tag)
        partial = m.partial or tag_partial
        s = table.score(tag, partial)
        p = pieces.get(m.key)
        if p is None:
            pieces[m.key] = ScoredPiece(m.key, m.text, tag, partial, s, 1)
        else:
            p.mentions += 1
            if s > p.score:
                p.text, p.tag, p.partial, p.score = m.text, tag, partial, s
    ordered = sorted(pieces.values(), key=lambda p: (-p.score, p.key))
    return DocumentRisk(doc_id, sum(p.score for p in ordered), ordered, group)


# --- corpus statistics (Table 4) -----------------------------------------------------------------------

def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default, pandas ``describe``), ``q`` in [0, 100]."""
    if not values:
        return 0.0
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def describe(scores: Sequence[float], threshold: float = THRESHOLD) -> dict[str, Any]:
    """``{"documents", "mean", "std", "p95", "max", "mean_plus_std", "pass"}`` of document scores.

    ``std`` is the sample standard deviation (0 for a single document); ``pass`` is the paper's
    criterion mean + std < ``threshold`` (5).
    """
    n = len(scores)
    if n == 0:
        raise VeilError("no documents to score")
    mean = sum(scores) / n
    std = sample_std(scores) or 0.0  # 0 for a single document
    return {"documents": n, "mean": mean, "std": std, "p95": percentile(scores, 95),
            "max": float(max(scores)), "mean_plus_std": mean + std, "pass": mean + std < threshold}


def group_table(risks: Sequence[DocumentRisk], threshold: float = THRESHOLD) -> list[dict[str, Any]]:
    """One row per group (in order of first appearance) and a final ``Total`` row, as Table 4."""
    groups: dict[str, list[float]] = {}
    for r in risks:
        groups.setdefault("all" if r.group is None else str(r.group), []).append(r.score)
    rows = []
    if len(groups) > 1:
        rows = [{"group": g, **describe(s, threshold)} for g, s in groups.items()]
    rows.append({"group": "Total", **describe([r.score for r in risks], threshold)})
    return rows


def format_table(rows: Sequence[Mapping[str, Any]], title: str = "Context") -> str:
    """A markdown table in the layout of the paper's Table 4 (one decimal, as the paper)."""
    head = f"| {title} | Count | Mean | STD | P95 | Max | μ+σ | pass (μ+σ<5) |"
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|:---:|"]
    for r in rows:
        lines.append(f"| {r['group']} | {r['documents']} | {r['mean']:.1f} | {r['std']:.1f} | {r['p95']:.1f} | "
                     f"{r['max']:.0f} | {r['mean_plus_std']:.1f} | {'yes' if r['pass'] else 'no'} |")
    return "\n".join(lines)


def tag_table(risks: Sequence[DocumentRisk]) -> list[dict[str, Any]]:
    """Per tag (with ``_PARTIAL``): documents it occurs in, pieces, mentions, total score."""
    acc: dict[str, dict[str, Any]] = {}
    for r in risks:
        seen = set()
        for p in r.pieces:
            t = p.tag + (PARTIAL_SUFFIX if p.partial else "")
            row = acc.setdefault(t, {"tag": t, "documents": 0, "pieces": 0, "mentions": 0, "score": 0})
            row["pieces"] += 1
            row["mentions"] += p.mentions
            row["score"] += p.score
            if t not in seen:
                row["documents"] += 1
                seen.add(t)
    return sorted(acc.values(), key=lambda r: (-r["score"], r["tag"]))


# --- automatic mode: masking against gold spans ----------------------------------------------------------

#: Gold entity type -> infoType tag (None: PI the paper's Table 6 does not score; listed, scored 0).
#:
#: TAB (court cases; only mentions marked DIRECT or QUASI must be masked, NO_MASK are ignored):
#: PERSON -> PERSON_NAME; ORG -> ORGANIZATION_NAME_SPEAKER, because TAB marks an organisation as
#: an identifier only when it points at the applicant (their employer, their company, the
#: hospital that treated them), which is the paper's "_SPEAKER" sense; LOC -> LOCATION; CODE
#: (application, case and ID numbers) -> GENERIC_ID. DATETIME, DEM (nationality, job, ethnicity),
#: QUANTITY and MISC have no Table 6 infoType (the paper excluded DATE, TIME, ETHNIC_GROUP and
#: GENDER from DLP for their false positives): they are listed as unscored.
#:
#: Presidio synthetic: one-to-one where Table 6 has the type; ORGANIZATION ->
#: ORGANIZATION_NAME_SPEAKER (the templates tie organisations to the person: "I work at ..."),
#: GPE and ZIP_CODE -> LOCATION, US_DRIVER_LICENSE -> GENERIC_ID; DATE_TIME, NRP and TITLE unscored.
#:
#: CoNLL-2003 / WNUT-17 (news and social media, no speaker to tie organisations to):
#: PER/person -> PERSON_NAME, LOC/location -> LOCATION, ORG/corporation/group -> ORGANIZATION_NAME
#: (score 0), product -> PRODUCT (0), MISC/creative-work unscored.
#:
#: switchboard_pii (real telephone conversations; DIRECT and QUASI mentions scored, OPTIONAL ones, public
#: names and topics, ignored like TAB's NO_MASK): PERSON -> PERSON_NAME, LOCATION -> LOCATION,
#: ORGANIZATION -> ORGANIZATION_NAME_SPEAKER (marked only when tied to a speaker: employer, school,
#: church), AGE -> AGE, NUMBER -> GENERIC_ID, EMAIL, ADDRESS; DATE_TIME, OCCUPATION, DEMOGRAPHIC,
#: MONEY and MISC unscored, as TAB's DATETIME / DEM / QUANTITY / MISC.
GOLD_TYPE_MAPS: dict[str, dict[str, str | None]] = {
    "tab": {"PERSON": "PERSON_NAME", "ORG": "ORGANIZATION_NAME_SPEAKER", "LOC": "LOCATION",
            "CODE": "GENERIC_ID", "DATETIME": None, "DEM": None, "QUANTITY": None, "MISC": None},
    "presidio": {"PERSON": "PERSON_NAME", "STREET_ADDRESS": "ADDRESS", "GPE": "LOCATION",
                 "ZIP_CODE": "LOCATION", "ORGANIZATION": "ORGANIZATION_NAME_SPEAKER",
                 "CREDIT_CARD": "CREDIT_CARD_NUMBER", "PHONE_NUMBER": "PHONE", "EMAIL_ADDRESS": "EMAIL",
                 "AGE": "AGE", "DOMAIN_NAME": "DOMAIN", "IBAN_CODE": "IBAN_CODE", "US_SSN": "SSN",
                 "IP_ADDRESS": "IP_ADDRESS", "US_DRIVER_LICENSE": "GENERIC_ID", "US_PASSPORT": "PASSPORT",
                 "URL": "URL", "DATE_TIME": None, "NRP": None, "TITLE": None},
    "conll": {"PER": "PERSON_NAME", "LOC": "LOCATION", "ORG": "ORGANIZATION_NAME", "MISC": None,
              "person": "PERSON_NAME", "location": "LOCATION", "corporation": "ORGANIZATION_NAME",
              "group": "ORGANIZATION_NAME", "product": "PRODUCT", "creative-work": None},
    "switchboard_pii": {"PERSON": "PERSON_NAME", "LOCATION": "LOCATION", "ORGANIZATION": "ORGANIZATION_NAME_SPEAKER",
                        "AGE": "AGE", "NUMBER": "GENERIC_ID", "EMAIL": "EMAIL", "ADDRESS": "ADDRESS",
                        "DATE_TIME": None, "OCCUPATION": None, "DEMOGRAPHIC": None, "MONEY": None, "MISC": None},
}
#: TAB identifier types that must be masked (NO_MASK mentions are not PI to protect)
TAB_TO_MASK = ("DIRECT", "QUASI")


def parse_type_map(pairs: Iterable[str], table: ScoreTable | None = None) -> dict[str, str | None]:
    """``["DATETIME=DATE_OF_BIRTH", "MISC="]`` -> a mapping override (empty right side: unscored)."""
    table = table or default_table()
    out: dict[str, str | None] = {}
    for pair in pairs:
        gold, sep, tag = pair.partition("=")
        if not sep or not gold.strip():
            raise VeilError(f"type map entry {pair!r} is not GOLD_TYPE=INFOTYPE")
        tag = tag.strip()
        out[gold.strip()] = table.resolve(tag)[0] if tag else None
    return out


def missed_against_gold(text: str, gold_spans: Iterable[Any], masks: Sequence[Span],
                        type_map: Mapping[str, str | None], doc_id: str = "") -> tuple[list[MissedPI], list[MissedPI]]:
    """(scored, unscored) missed mentions of one document.

    ``gold_spans`` have ``start``, ``end``, ``label`` and optionally ``identifier_type`` (TAB:
    NO_MASK mentions are skipped) and ``entity_id`` (groups mentions of one entity). A mention
    with no letters or digits masked is missed; with some masked, partial; with all, protected.
    A gold label absent from ``type_map`` is an error (so a new gold set is mapped on purpose).
    """
    cov = Coverage(text, masks)
    scored, unscored = [], []
    for g in gold_spans:
        itype = getattr(g, "identifier_type", None)
        if itype is not None and itype not in TAB_TO_MASK:
            continue
        if g.label not in type_map:
            raise VeilError(f"gold type {g.label!r} (document {doc_id!r}) has no infoType mapping; "
                            f"add one with --type-map {g.label}=TAG (or {g.label}= for unscored)")
        c = cov.mention(g.start, g.end)
        if c.status == COVERED:
            continue
        partial, visible = c.status == PARTIAL, c.visible
        surface = text[g.start:g.end]
        entity = getattr(g, "entity_id", None)
        # mentions of one entity share the key; otherwise the whole gold surface (not the visible
        # part) identifies the piece of PI, so "Green" left of "[PERSON_NAME_1] Green" twice counts once
        key = f"{g.label}:{entity}" if entity else f"{g.label}:{normalise_surface(surface) or surface}"
        tag = type_map[g.label]
        m = MissedPI(visible if partial else surface, tag or g.label, partial, key, g.start, g.end, g.label)
        (scored if tag else unscored).append(m)
    return scored, unscored


def audit_against_gold(gold_docs: Sequence[Any], masks: Sequence[Sequence[Span]], fmt: str,
                       table: ScoreTable | None = None, type_map: Mapping[str, str | None] | None = None,
                       group_by: str | None = None) -> list[DocumentRisk]:
    """Score each gold document (``veil.mask.gold.GoldDocument``) against the masking's spans.

    ``group_by``: a ``Document.meta`` key whose value names the document's group (e.g. TAB's
    ``dataset_type``); by default ``Document.group`` when set.
    """
    table = table or default_table()
    if fmt not in GOLD_TYPE_MAPS and type_map is None:
        raise VeilError(f"no infoType mapping for gold format {fmt!r}; known: {', '.join(GOLD_TYPE_MAPS)}")
    mapping = dict(GOLD_TYPE_MAPS.get(fmt, {}))
    mapping.update(type_map or {})
    for tag in filter(None, mapping.values()):
        table.resolve(tag)
    if len(masks) != len(gold_docs):
        raise VeilError(f"{len(masks)} span lists for {len(gold_docs)} gold documents")
    out = []
    for gd, spans in zip(gold_docs, masks):
        doc = gd.doc
        scored, unscored = missed_against_gold(doc.text, gd.spans, spans, mapping, doc.id)
        group = str(doc.meta.get(group_by)) if group_by and doc.meta.get(group_by) is not None else doc.group
        risk = score_document(doc.id, scored, table, group)
        risk.unscored = unscored
        out.append(risk)
    return out


# --- writing results ---------------------------------------------------------------------------------

def write_details(path: str | Path, risks: Sequence[DocumentRisk]) -> None:
    """One JSON line per document: id, group, score, missed pieces (text, tag, score, mentions), unscored."""
    from veil.audit.plots import write_jsonl

    write_jsonl(path, (r.to_dict() for r in risks))


def write_report(out_dir: str | Path, risks: Sequence[DocumentRisk], rows: Sequence[Mapping[str, Any]],
                 title: str = "", threshold: float = THRESHOLD) -> None:
    """``risk_table.md`` / ``.csv`` (Table 4 layout), ``risk_by_tag.csv``, ``details.jsonl``, ``risk_hist.png``."""
    from veil.audit import plots

    out = Path(out_dir)
    md = (f"### Residual risk{': ' + title if title else ''}\n\n" + format_table(rows) + "\n")
    plots.write_text(out / "risk_table.md", md)
    plots.write_csv(out / "risk_table.csv", rows, ["group", *[k for k in rows[0] if k != "group"]])
    plots.write_csv(out / "risk_by_tag.csv", tag_table(risks), ["tag", "documents", "pieces", "mentions", "score"])
    write_details(out / "details.jsonl", risks)
    by_group: dict[str, list[float]] = {}
    for r in risks:
        by_group.setdefault("all" if r.group is None else str(r.group), []).append(r.score)
    plots.plot_risk_histogram(by_group, threshold, out / "risk_hist.png", title)
