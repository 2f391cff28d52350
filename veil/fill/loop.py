"""Fill stage: the filler of every model back-end (:class:`CandidateFiller`).

A back-end implements only ``propose_batch`` (ranked whole-word candidates for one marker of each
of many texts). The loop (slots, typed draws, numbered keys: :class:`veil.fill.draws.DrawFiller`)
hands it the open slots, one step at a time: step *t* asks the back-end for the next open marker of
every document of the group at once, so the model runs batched across documents; the back-end is
shown the text as filled so far, up to :data:`veil.fill.state.WINDOW` characters either side of the
marker (every back-end reads less: ``llm`` 64 words left and up to the next marker right, ``mlm`` 512
tokens), so a fill costs the same at the start and at the end of a long document and the loop is
linear in a document's length. It chooses among the candidates with the strategy (``top1``;
``topk``: uniform among the top K, re-drawn while the word is on the allow / vocabulary list of the
technique that masked it; ``sample``: the same avoidance, then a draw with the model's probabilities,
see :mod:`veil.fill.strategies`), from the document's own RNG.
"""

from __future__ import annotations

import logging
import re
from typing import AbstractSet, Any, Mapping, Sequence

from veil.errors import VeilError
from veil.fill import strategies, typed
from veil.fill.base import AVOID_TECHNIQUES, CANDIDATE_MARGIN, Slot, default_avoid
from veil.fill.draws import DrawFiller
from veil.fill.state import WINDOW, DocState, _forges_marker  # noqa: F401  (WINDOW re-exported)

log = logging.getLogger(__name__)

_BAD_CANDIDATE_RE = re.compile(r"[\[\]\s]|^$")  # brackets could forge a marker; a word has no spaces


class CandidateFiller(DrawFiller):
    """Fills the open markers one at a time, left to right, choosing among a model's ranked whole-word candidates.

    Model back-ends (``mlm``, ``llm``) implement only ``propose_batch``; the Top-1 / Top-K strategies and
    avoidance of allow-listed words live here, the loop, typed and numbered consistency in
    :class:`veil.fill.draws.DrawFiller` (its options: ``types``, ``match_case``, ``rank_types``, ...), so every
    back-end behaves the same.

    Options: ``avoid={technique: words}`` replaces the default avoid-lists (the allow_list and
    vocab_threshold maskers' default vocabularies, loaded when first needed; ``avoid={}`` turns
    avoidance off); ``avoid_in_top1`` applies the lists to Top-1 as well (off: the paper's Top-1 is
    the plain best prediction); ``entity_candidates`` is how many candidates an entity-typed marker
    asks for before spaCy checks them; ``ner_model`` the spaCy model; ``faker_tries``: also the Faker
    draws checked by spaCy when no model candidate of an entity type passes; ``temperature``: the
    ``sample`` strategy's softmax temperature over the back-end's scores; ``avoid_proposals``: where the
    strategy avoids a word list, ask the back-end for candidates off that list in the first place
    (back-ends with ``supports_exclude``: ``llm``), instead of drawing among the model's top K and
    dropping the listed ones afterwards (the paper's Top-K), which for a name or a rare word often
    leaves only function words ("the", "and") to choose from; ``entities``: ``"draw"`` (default) gives
    names, places and organisations a draw of their type in the original's shape
    (:mod:`veil.fill.entities`), ``"propose"`` the back-end's words that spaCy tags with the type (the
    earlier behaviour: fluent, but often not a name: "Ke", "Remove Ad").
    """

    supports_exclude = False  # whether propose_batch takes ``exclude`` (see avoid_proposals)
    #: rankings shared with other fillers of the same model (``veil.experiment.rankings.SharedRankings``: an
    #: object whose ``propose(propose_batch, texts, targets, k, exclude=None)`` the loop asks instead of the
    #: back-end, answering from its memo where it can); None: the back-end ranks every marker itself
    rankings: Any = None
    #: part of the experiment runner's cache key: bumped when the same options give other fills
    #: (2: typed placeholders drawn by type and shape)
    version = 2

    def __init__(self, strategy: str = "top1", k: int = 10, seed: int = 0, batch_size: int = 64,
                 *, avoid: Mapping[str, AbstractSet[str]] | None = None, avoid_in_top1: bool = False,
                 entity_candidates: int = 20, merge_masks: bool = True, group_size: int = 1024,
                 ner_model: str | None = None, types: str = "auto", faker_tries: int = 12,
                 temperature: float = 1.0, avoid_proposals: bool = False, match_case: bool | str = False,
                 entities: str = "draw", rank_types: bool = False, type_candidates: int = 2,
                 rank_labels: Sequence[str] | None = None, gender_cues: bool = True,
                 **options) -> None:
        if strategy not in strategies.STRATEGIES:
            raise VeilError(f"unknown strategy {strategy!r}; choose from {', '.join(strategies.STRATEGIES)}")
        if entities not in ("draw", "propose"):
            raise VeilError(f"entities must be draw or propose, got {entities!r}")
        if k < 1 or batch_size < 1 or group_size < 1 or entity_candidates < 1:
            raise VeilError("k, batch_size, group_size and entity_candidates must be at least 1")
        if avoid_proposals and not self.supports_exclude:
            raise VeilError(f"the {self.name} filler cannot keep listed words out of its proposals "
                            "(avoid_proposals needs a back-end with supports_exclude, e.g. llm)")
        super().__init__(seed, types=types, match_case=match_case, rank_types=rank_types,
                         type_candidates=type_candidates, rank_labels=rank_labels, rank_sample=strategy != "top1",
                         temperature=temperature, gender_cues=gender_cues, faker_tries=faker_tries,
                         merge_masks=merge_masks, group_size=group_size)
        self.entities = entities
        self.strategy, self.k, self.batch_size = strategy, k, batch_size
        self.avoid_proposals = avoid_proposals
        self.options = options
        self._avoid_given = avoid is not None
        self._avoid = {} if avoid is None else {t: frozenset(w.lower() for w in ws) for t, ws in avoid.items()}
        self.avoid_in_top1 = avoid_in_top1
        self.entity_candidates = entity_candidates
        self.verifier = typed.EntityVerifier(ner_model)

    # --- the back-end's part -------------------------------------------------------------------
    def propose_batch(self, texts: Sequence[str], targets: Sequence[tuple[int, int]],
                      k: int) -> list[list[tuple[str, float]]]:
        """For each ``texts[i]``, up to ``k`` whole-word candidates ``(word, score)``, best first,
        for the marker at ``texts[i][targets[i][0]:targets[i][1]]``. Other markers in the text may
        still be present (they are filled later, left to right). A back-end with
        ``supports_exclude`` also takes ``exclude=`` (per text, a set of lower-cased words to keep
        out of the list, or None)."""
        raise NotImplementedError

    # --- avoid-lists ----------------------------------------------------------------------------
    def avoid_list(self, technique: str) -> AbstractSet[str]:
        if technique not in self._avoid:
            if technique not in AVOID_TECHNIQUES or self._avoid_given:
                return frozenset()
            self._avoid[technique] = default_avoid(technique)
        return self._avoid[technique]

    def _avoid_for(self, slot: Slot) -> AbstractSet[str]:
        if self.strategy == "top1" and not self.avoid_in_top1:
            return frozenset()
        lists = [self.avoid_list(t) for t in sorted(slot.techniques)]
        lists = [x for x in lists if x]
        if not lists:
            return frozenset()
        return lists[0] if len(lists) == 1 else frozenset().union(*lists)

    # --- the open slots: the back-end's words ----------------------------------------------------
    def _wanted(self, st: DocState, slot: Slot) -> int:
        n = self.k if (self.strategy in strategies.K_STRATEGIES or self.avoid_in_top1) else 1
        if self._kind(st, slot) == "entity":
            n = max(n, self.entity_candidates)
        if st.doc.style == "numbered":
            n += len(st.used.get(slot.label, ()))
        return n + CANDIDATE_MARGIN

    def _open_step(self, pending: list[DocState]) -> None:
        slots = [st.slot for st in pending]
        views = [st.view() for st in pending]
        k_req = max(self._wanted(st, s) for st, s in zip(pending, slots))
        extra = {"exclude": [self._avoid_for(s) or None for s in slots]} if self.avoid_proposals else {}
        texts, targets = [v[0] for v in views], [(v[1], v[2]) for v in views]
        proposals = (self.propose_batch(texts, targets, k_req, **extra) if self.rankings is None
                     else self.rankings.propose(self.propose_batch, texts, targets, k_req, **extra))
        if len(proposals) != len(pending):
            raise VeilError(f"{type(self).__name__}.propose_batch returned {len(proposals)} lists "
                            f"for {len(pending)} texts")
        self.stats["model_calls"] += 1
        self.stats["model_markers"] += len(pending)
        cands: list[list[str]] = []
        scores: list[dict[str, float]] = []  # each candidate's score (the first, i.e. best, for duplicates)
        for st, slot, view, props in zip(pending, slots, views, proposals):
            words = []
            score: dict[str, float] = {}
            taken = st.used.get(slot.label, set()) if st.doc.style == "numbered" else set()
            entity = self._kind(st, slot) == "entity"
            for w, sc in props:
                w = w.strip()
                if st.lowercase:
                    w = w.lower()
                if entity:
                    w = typed.as_entity(w)
                if _BAD_CANDIDATE_RE.search(w) or w in taken or w in words:
                    continue
                if _forges_marker(view[0], view[1], view[2], w):
                    continue
                words.append(w)
                score[w] = float(sc)
            cands.append(words)
            scores.append(score)
        # entity-typed markers: keep the candidates spaCy tags with the type, in one NER batch
        faker_pick: dict[int, str] = {}
        ent_idx = [i for i, (st, s) in enumerate(zip(pending, slots)) if self._kind(st, s) == "entity"]
        if ent_idx:
            items = []
            for i in ent_idx:
                text, start, end, nxt = views[i]
                left, right = typed.context_around(text, start, end, nxt)
                items.append((left, right, slots[i].label, cands[i]))
            for i, ok in zip(ent_idx, self.verifier.verify(items)):
                cands[i] = ok
            # no model candidate passed: Faker draws of the type, checked the same way
            need = [(j, i) for j, i in enumerate(ent_idx) if not cands[i] and typed.has_fallback(slots[i].label)]
            if need:
                drafts = {}
                for j, i in need:
                    st, s = pending[i], slots[i]
                    taken = st.used.get(s.label, set())
                    fakes = [typed.fake_value(s.label, st.rng) for _ in range(self.faker_tries)]
                    drafts[i] = [v for v in dict.fromkeys(fakes) if v not in taken
                                 and not _forges_marker(views[i][0], views[i][1], views[i][2], v)]
                    items[j] = (items[j][0], items[j][1], s.label, drafts[i])
                checked = self.verifier.verify([items[j] for j, _ in need])
                for (j, i), ok in zip(need, checked):
                    self.stats["entity_faker"] += 1
                    self.stats["entity_faker_unverified"] += not ok
                    if ok or drafts[i]:
                        faker_pick[i] = (ok or drafts[i])[0]
        for i, (st, slot) in enumerate(zip(pending, slots)):
            if i in faker_pick:
                self._assign(st, slot, faker_pick[i])
                continue
            value = strategies.choose(self.strategy, cands[i], self.k, st.rng, self._avoid_for(slot),
                                      self.avoid_in_top1, scores=[scores[i][w] for w in cands[i]],
                                      temperature=self.temperature)
            if value is None:
                value = self._fallback(st, slot, proposals[i], views[i])
            self._assign(st, slot, value)

    def _fallback(self, st: DocState, slot: Slot, props: Sequence[tuple[str, float]],
                  view: tuple[str, int, int, int | None]) -> str:
        """No acceptable candidate: Faker for an entity type it knows, else the best proposal."""
        if self._kind(st, slot) != "word" and typed.has_fallback(slot.label):
            self.stats["entity_fallback"] += 1
            for _ in range(20):
                v = typed.fake_value(slot.label, st.rng)
                if v not in st.used.get(slot.label, ()) and not _forges_marker(view[0], view[1], view[2], v):
                    return v
            return v.lower()
        for w, _ in props:
            w = w.strip()
            if w and not _BAD_CANDIDATE_RE.search(w) and not _forges_marker(view[0], view[1], view[2], w):
                self.stats["no_acceptable_candidate"] += 1
                return w
        raise VeilError(f"document {st.doc.id!r}: the model proposed no usable word for {slot.marker}")
