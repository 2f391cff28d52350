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

A human review of the user's own corpus (``review``, ``veil review --export gold``) is scored as TAB
(its spans are DIRECT or QUASI) plus ``type_accuracy``: of the gold mentions masked, the share whose
masking span (the one overlapping it most) has the reviewed type; the reviewer's types are veil's
masker labels, so the comparison is exact.

Other formats report mention and token recall per gold type and overall. Every result carries
``masked_token_share`` (masked words / all words, ``veil.textutil`` words, over the whole gold set:
the price paid for the recall) and ``precision``: the share of masked words that touch a gold
mention to be masked (TAB: DIRECT or QUASI; other formats: any gold mention).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Sequence

from veil.mask.coverage import Coverage, spans_of, word_counts
from veil.mask.gold import TO_MASK, GoldDocument, GoldSpan
from veil.types import Span

_TOKEN_RE = re.compile(r"\w+")


def _ratio(hit: int, n: int) -> float | None:
    return hit / n if n else None


def _to_mask(gd: GoldDocument) -> list[GoldSpan]:
    return [g for g in gd.spans if g.identifier_type is None or g.identifier_type in TO_MASK]


def masked_token_share(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]]) -> dict[str, Any]:
    """``masked_token_share``, ``precision`` and the word counts behind them, over all documents."""
    words = masked = in_gold = 0
    for gd, spans in zip(golds, detected):
        w, m, g = word_counts(gd.doc.text, Coverage(gd.doc.text, spans),
                              Coverage(gd.doc.text, spans_of(_to_mask(gd))))
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


def type_accuracy(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]]) -> dict[str, Any]:
    """Of the gold mentions to mask that are masked, the share masked with the gold type (see the module doc)."""
    _check_lengths(golds, detected)
    masked = same = 0
    for gd, spans in zip(golds, detected):
        cov = Coverage(gd.doc.text, spans)
        for g in _to_mask(gd):
            if not cov.is_covered(g.start, g.end):
                continue
            masked += 1
            best = max((s for s in spans if s.start < g.end and g.start < s.end),
                       key=lambda s: min(s.end, g.end) - max(s.start, g.start), default=None)
            same += best is not None and best.label == g.label
    return {"type_accuracy": _ratio(same, masked), "typed_mentions": masked}


def evaluate(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]], fmt: str) -> dict[str, Any]:
    if fmt == "review":
        return {**evaluate_tab(golds, detected), **type_accuracy(golds, detected)}
    return evaluate_tab(golds, detected) if fmt == "tab" else evaluate_types(golds, detected)


def missed_mentions(golds: Sequence[GoldDocument], detected: Sequence[Sequence[Span]],
                    limit: int | None = None, context: int = 30) -> list[dict[str, Any]]:
    """Gold mentions (DIRECT/QUASI for TAB) left (partly) unmasked, with masked context, for error analysis."""
    out: list[dict[str, Any]] = []
    for gd, spans in zip(golds, detected):
        cov = Coverage(gd.doc.text, spans)
        for g in gd.spans:
            if g.identifier_type == "NO_MASK" or cov.is_covered(g.start, g.end):
                continue
            text = gd.doc.text
            lo, hi = max(0, g.start - context), min(len(text), g.end + context)
            shown = "".join("*" if cov.covered[i] else text[i] for i in range(lo, hi))
            out.append({"doc": gd.doc.id, "mention": text[g.start:g.end], "label": g.label,
                        "identifier_type": g.identifier_type, "context": " ".join(shown.split())})
            if limit is not None and len(out) >= limit:
                return out
    return out
