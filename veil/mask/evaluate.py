"""Detect and mask stage: score detected spans against gold spans (recall, precision, share of words masked).

Whether a gold mention counts as masked is decided by ``veil.mask.coverage`` (the same rule as the
risk audit): all its letters and digits masked except honorifics and a few function words that
annotators disagree about including (TAB's ``evaluation.py``, Pilán et al. 2022). Tokens are
``\\w+`` runs of a mention, each scored the same way.

TAB (``tab``), per identifier type (DIRECT, QUASI; NO_MASK mentions are not scored):

- mention recall: share of mentions masked;
- token recall: share of the mentions' tokens masked;
- entity recall: share of entities (same ``entity_id``) with *all* their DIRECT/QUASI mentions
  masked. An entity counts as DIRECT if any of its mentions is DIRECT.

Real telephone conversation (``switchboard_pii``) is scored like TAB (DIRECT, QUASI, per type over
those two classes; an entity is one conversation's mentions of one type and surface); its OPTIONAL
mentions (public names, topics) are allowed, not required: masking one is no false positive,
leaving it is no miss. It also reports ``type_accuracy``: of the pairs (masked span, DIRECT or QUASI
gold mention) that overlap in a letter or digit, the share whose masked label maps to the gold type
under :data:`LABEL_TO_GOLD_TYPE` (the one label map; a label it does not list is a wrong type).

A human review of the user's own corpus (``review``, ``veil review --export gold``) is scored the same
way (its spans are DIRECT or QUASI); the reviewer's types are veil's masker labels, so its type
accuracy compares labels as they are.

Other formats report mention and token recall per gold type and overall. Every result carries
``masked_token_share`` (masked words / all words, ``veil.textutil`` words, over the whole gold set:
the price paid for the recall) and ``precision``: the share of masked words that touch a gold
mention a masker may mask (TAB: DIRECT or QUASI; switchboard_pii: DIRECT, QUASI or OPTIONAL; other
formats: any gold mention).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Sequence

from veil.mask.coverage import Coverage, spans_of, word_counts
from veil.mask.gold import MAY_MASK, TO_MASK, GoldDocument, GoldSpan
from veil.types import Span

_TOKEN_RE = re.compile(r"\w+")


def _ratio(hit: int, n: int) -> float | None:
    return hit / n if n else None


#: masked label (veil's infoTypes, spaCy's through ``entity_tagger``, Presidio's) -> the switchboard_pii type it
#: stands for. Type accuracy counts a masked span as right when its label maps to the gold mention's type.
LABEL_TO_GOLD_TYPE: dict[str, str] = {
    # names (a spelled name is a name; a title with its name is the name)
    "PERSON_NAME": "PERSON", "SPELLED_WORD": "PERSON", "NON_LATIN_NAME": "PERSON", "PERSON": "PERSON",
    "LOCATION": "LOCATION", "FACILITY": "LOCATION", "GPE": "LOCATION", "LOC": "LOCATION",
    "ORGANIZATION_NAME": "ORGANIZATION", "ORGANIZATION": "ORGANIZATION", "ORG": "ORGANIZATION",
    "DATE": "DATE_TIME", "DATE_TIME": "DATE_TIME", "TIME": "DATE_TIME", "DURATION": "DATE_TIME",
    "AGE": "AGE",
    "OCCUPATION": "OCCUPATION",
    "DEMOGRAPHIC": "DEMOGRAPHIC", "NATIONALITY": "DEMOGRAPHIC", "GROUP": "DEMOGRAPHIC", "NRP": "DEMOGRAPHIC",
    "HEALTH": "DEMOGRAPHIC", "RELIGION": "DEMOGRAPHIC",
    "MONEY": "MONEY",
    # numbers that identify: phone, ids, cards, pinpointing counts
    "NUMBER": "NUMBER", "QUANTITY": "NUMBER", "PHONE_NUMBER": "NUMBER", "GENERIC_ID": "NUMBER",
    "CREDIT_CARD_NUMBER": "NUMBER", "US_SOCIAL_SECURITY_NUMBER": "NUMBER", "IP_ADDRESS": "NUMBER",
    "US_DRIVER_LICENSE": "NUMBER", "US_SSN": "NUMBER", "CREDIT_CARD": "NUMBER", "US_BANK_NUMBER": "NUMBER",
    "IBAN_CODE": "NUMBER", "US_PASSPORT": "NUMBER", "US_ITIN": "NUMBER",
    "EMAIL_ADDRESS": "EMAIL",
    "STREET_ADDRESS": "ADDRESS",
    "MISC": "MISC", "PRODUCT": "MISC", "QUASI_ID": "MISC", "WORK_OF_ART": "MISC", "EVENT": "MISC",
}


def _to_mask(gd: GoldDocument) -> list[GoldSpan]:
    return [g for g in gd.spans if g.identifier_type is None or g.identifier_type in TO_MASK]


def _may_mask(gd: GoldDocument) -> list[GoldSpan]:
    return [g for g in gd.spans if g.identifier_type is None or g.identifier_type in MAY_MASK]


def masked_token_share(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]]) -> dict[str, Any]:
    """``masked_token_share``, ``precision`` and the word counts behind them, over all documents."""
    words = masked = in_gold = 0
    for gd, spans in zip(golds, detected):
        w, m, g = word_counts(gd.doc.text, Coverage(gd.doc.text, spans),
                              Coverage(gd.doc.text, spans_of(_may_mask(gd))))
        words, masked, in_gold = words + w, masked + m, in_gold + g
    return {"masked_token_share": masked / words if words else 0.0, "precision": _ratio(in_gold, masked),
            "masked_words": masked, "words": words, "masked_words_in_gold": in_gold}


class _Counts:
    __slots__ = ("mentions", "mentions_hit", "tokens", "tokens_hit")

    def __init__(self) -> None:
        self.mentions = self.mentions_hit = self.tokens = self.tokens_hit = 0

    def add(self, cov: Coverage, g: GoldSpan) -> bool:
        hit = cov.is_covered(g.start, g.end)
        self.mentions += 1
        self.mentions_hit += hit
        for m in _TOKEN_RE.finditer(cov.text, g.start, g.end):
            self.tokens += 1
            self.tokens_hit += cov.is_covered(m.start(), m.end())
        return hit

    def result(self) -> dict[str, Any]:
        return {"mention_recall": _ratio(self.mentions_hit, self.mentions),
                "token_recall": _ratio(self.tokens_hit, self.tokens),
                "mentions": self.mentions, "tokens": self.tokens}


def _check_lengths(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]]) -> None:
    if len(golds) != len(detected):
        raise ValueError(f"{len(golds)} gold documents but spans for {len(detected)}")


def evaluate_tab(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]]) -> dict[str, Any]:
    """TAB recalls for DIRECT and QUASI identifiers, per entity type, and the masked share."""
    _check_lengths(golds, detected)
    by_itype = {t: _Counts() for t in TO_MASK}
    by_type: dict[str, _Counts] = defaultdict(_Counts)
    entities = {t: [0, 0] for t in TO_MASK}  # [entities fully masked, entities]
    for gd, spans in zip(golds, detected):
        cov = Coverage(gd.doc.text, spans)
        per_entity: dict[str, list[tuple[str, bool]]] = defaultdict(list)
        for i, g in enumerate(gd.spans):
            if g.identifier_type not in TO_MASK:
                continue
            hit = by_itype[g.identifier_type].add(cov, g)
            by_type[g.label].add(cov, g)
            per_entity[g.entity_id or f"#{i}"].append((g.identifier_type, hit))
        for mentions in per_entity.values():
            itype = "DIRECT" if any(t == "DIRECT" for t, _ in mentions) else "QUASI"
            entities[itype][1] += 1
            entities[itype][0] += all(hit for _, hit in mentions)
    out: dict[str, Any] = {}
    for t in TO_MASK:
        out[t] = by_itype[t].result()
        out[t]["entity_recall"] = _ratio(*entities[t])
        out[t]["entities"] = entities[t][1]
    out["per_type"] = {k: by_type[k].result() for k in sorted(by_type)}
    out.update(masked_token_share(golds, detected))
    return out


def evaluate_types(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]]) -> dict[str, Any]:
    """Mention and token recall per gold type and overall (Presidio synthetic, CoNLL, WNUT)."""
    _check_lengths(golds, detected)
    overall = _Counts()
    by_type: dict[str, _Counts] = defaultdict(_Counts)
    for gd, spans in zip(golds, detected):
        cov = Coverage(gd.doc.text, spans)
        for g in gd.spans:
            overall.add(cov, g)
            by_type[g.label].add(cov, g)
    return {"overall": overall.result(), "per_type": {k: by_type[k].result() for k in sorted(by_type)},
            **masked_token_share(golds, detected)}


def _overlap(text: str, a0: int, a1: int, b0: int, b1: int) -> bool:
    """Whether two character ranges share a letter or digit."""
    return any(c.isalnum() for c in text[max(a0, b0):min(a1, b1)])


def type_accuracy(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]],
                  label_map: dict[str, str] | None = None) -> dict[str, Any]:
    """Of the (masked span, DIRECT/QUASI gold mention) pairs sharing a letter or digit, the share typed right.

    ``label_map``: masked label -> gold type (default :data:`LABEL_TO_GOLD_TYPE`; ``{}``: the gold types are
    veil's labels, compared as they are). ``confusions``: gold type -> masked label -> pairs.
    """
    same = label_map == {}
    label_map = LABEL_TO_GOLD_TYPE if label_map is None else label_map
    right = pairs = 0
    confusions: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for gd, spans in zip(golds, detected):
        text = gd.doc.text
        for g in _to_mask(gd):
            for s in spans:
                if s.start < g.end and g.start < s.end and _overlap(text, s.start, s.end, g.start, g.end):
                    pairs += 1
                    right += (s.label if same else label_map.get(s.label)) == g.label
                    confusions[g.label][s.label] += 1
    return {"type_accuracy": _ratio(right, pairs), "typed_pairs": pairs, "typed_right": right,
            "type_confusions": {k: dict(sorted(v.items(), key=lambda kv: -kv[1])) for k, v in sorted(confusions.items())}}


def evaluate_switchboard_pii(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]]) -> dict[str, Any]:
    """TAB's keys (DIRECT, QUASI, per_type over them, precision with OPTIONAL allowed) and type accuracy."""
    out = evaluate_tab(golds, detected)
    out.update(type_accuracy(golds, detected))
    return out


def evaluate(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]], fmt: str) -> dict[str, Any]:
    if fmt == "tab":
        return evaluate_tab(golds, detected)
    if fmt in ("switchboard_pii", "sgd"):  # sgd's slots carry switchboard_pii's types and classes
        return evaluate_switchboard_pii(golds, detected)
    if fmt == "review":
        return {**evaluate_tab(golds, detected), **type_accuracy(golds, detected, label_map={})}
    return evaluate_types(golds, detected)


def false_positive_words(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]]) -> dict[str, int]:
    """Masked words that touch no gold mention a masker may mask, lower-cased, with their counts (most first)."""
    from collections import Counter

    from veil.textutil import iter_words

    counts: Counter = Counter()
    for gd, spans in zip(golds, detected):
        text = gd.doc.text
        masked, allowed = Coverage(text, spans), Coverage(text, spans_of(_may_mask(gd)))
        for ws, we, w in iter_words(text):
            if masked.word_is_masked(ws, we) and not allowed.word_is_masked(ws, we):
                counts[w.lower()] += 1
    return dict(counts.most_common())


def missed_mentions(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]],
                    limit: int | None = None, context: int = 30) -> list[dict[str, Any]]:
    """Gold mentions (DIRECT/QUASI for TAB and switchboard_pii) left (partly) unmasked, with masked context."""
    out: list[dict[str, Any]] = []
    for gd, spans in zip(golds, detected):
        cov = Coverage(gd.doc.text, spans)
        for g in gd.spans:
            if g.identifier_type in ("NO_MASK", "OPTIONAL") or cov.is_covered(g.start, g.end):
                continue
            text = gd.doc.text
            lo, hi = max(0, g.start - context), min(len(text), g.end + context)
            shown = "".join("*" if cov.covered[i] else text[i] for i in range(lo, hi))
            out.append({"doc": gd.doc.id, "mention": text[g.start:g.end], "label": g.label,
                        "identifier_type": g.identifier_type, "context": " ".join(shown.split())})
            if limit is not None and len(out) >= limit:
                return out
    return out
