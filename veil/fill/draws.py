"""Fill stage: the fill loop of every filler (:class:`DrawFiller`): slots, typed draws, numbered keys, ranking.

The loop:

1. finds the slots of each document (:func:`veil.fill.base.document_slots`: its unescaped markers,
   checked against its placeholders, consecutive ``[MASK]`` markers merged, paper §4.2.4);
2. fills them left to right, one at a time; step *t* handles the next remaining slot of every document of
   a group at once, so a model runs batched across documents. A slot whose key is already assigned gets
   the key's substitute (``[PERSON_NAME_1]`` is the same name at every occurrence of a document, drawn
   anew in every document and different from the document's other ``PERSON_NAME`` keys); a typed slot
   gets a draw of its type in the original's shape (:mod:`veil.fill.typed`), or with ``rank_types``
   the draw its sentence scores best (:mod:`veil.fill.ranking`); every other slot is *open* and goes to
   the subclass's :meth:`DrawFiller._open_step` (a model's word: :class:`veil.fill.loop.CandidateFiller`;
   a context-free word: :class:`veil.fill.faker.FakerFiller`);
3. each document draws from its own RNG seeded from ``(seed, document id)`` (:func:`veil.fill.base.doc_rng`),
   so results depend neither on batch composition nor on threads: all state of a fill lives in the call,
   one :class:`DocState` per document;
4. checks that no marker is left and assembles the ``FilledDocument`` (:func:`veil.fill.base.assemble`).
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from veil.errors import VeilError
from veil.fill import ranking, typed
from veil.fill.assemble import assemble
from veil.fill.base import Filler, Slot, doc_rng, document_slots
from veil.fill.state import DocState, _forges
from veil.markers import MARKER_RE, find_markers
from veil.shapes import PERSON_LABELS
from veil.types import FilledDocument, MaskedDocument


class DrawFiller(Filler):
    """The loop every filler shares; a subclass fills the open slots (:meth:`_open_step`).

    Options: ``types``: ``"auto"`` fills typed and numbered placeholders by type and ``[MASK]`` markers
    as open slots (the paper's setting, even where the mask stage recorded a label), ``"on"`` uses the
    recorded labels for ``[MASK]`` markers too, ``"off"`` leaves every slot open; ``match_case``: in a
    document whose text has no capital letter, substitutes are lower-cased too; ``"lower"``: in every
    document (a lower-cased corpus whose mark-up has capitals, such as PTB's number token ``N``); ``rank_types``: a language model picks among ``type_candidates`` draws the one that
    fits the sentence (``rank_labels``: which labels, by default persons whose gender the shape leaves
    open), the best (``rank_sample=False``) or a draw with the scores' softmax at ``temperature``;
    ``gender_cues``: without ranking, a person's first name takes the gender the words around it give
    ("my daughter", "she"), else a coin's; ``faker_tries``: draws tried for a value unlike the document's
    other keys of the type; ``merge_masks`` merges consecutive ``[MASK]`` markers; ``group_size`` is how
    many documents one batched step covers.
    """

    #: how an entity-typed slot is filled: ``draw`` (of its type and shape) or ``propose`` (a model's words)
    entities = "draw"

    def __init__(self, seed: int = 0, *, types: str = "auto", match_case: bool | str = False, rank_types: bool = False,
                 type_candidates: int = 2, rank_labels: Sequence[str] | None = None, rank_sample: bool = False,
                 temperature: float = 1.0, gender_cues: bool = True, faker_tries: int = 12, merge_masks: bool = True,
                 group_size: int = 1024) -> None:
        if types not in ("auto", "on", "off"):
            raise VeilError(f"types must be auto, on or off, got {types!r}")
        if match_case not in (True, False, "lower"):
            raise VeilError(f"match_case must be true, false or lower, got {match_case!r}")
        if not isinstance(rank_types, bool) or type_candidates < 1:
            raise VeilError("rank_types must be true or false and type_candidates at least 1")
        self.rank_labels = ranking.RANKED_LABELS if rank_labels is None else frozenset(rank_labels)
        if not self.rank_labels <= ranking.RANKABLE:
            raise VeilError(f"rank_labels: only {', '.join(sorted(ranking.RANKABLE))} can be ranked")
        if group_size < 1:
            raise VeilError("group_size must be at least 1")
        if not temperature > 0:
            raise VeilError(f"temperature must be positive, got {temperature!r}")
        self.seed, self.types, self.match_case = seed, types, match_case
        self.rank_types, self.type_candidates, self.rank_sample = rank_types, type_candidates, rank_sample
        self.temperature = float(temperature)
        self.gender_cues = gender_cues
        self.faker_tries = max(1, faker_tries)
        self.merge_masks = merge_masks
        self.group_size = group_size
        self.stats: Counter[str] = Counter()

    def _open_step(self, pending: list[DocState]) -> None:
        """Fill the current slot of every document of ``pending``: slots no draw or earlier key fills."""
        raise NotImplementedError

    # --- the loop -------------------------------------------------------------------------------
    def _fill(self, docs: Sequence[MaskedDocument]) -> list[FilledDocument]:
        out: list[FilledDocument] = []
        for g in range(0, len(docs), self.group_size):
            out.extend(self._fill_group(docs[g:g + self.group_size]))
        return out

    def _start(self, doc: MaskedDocument) -> DocState:
        st = DocState(doc, document_slots(doc, self.merge_masks), doc_rng(self.seed, doc.id))
        if self.match_case == "lower":
            st.lowercase = True
        elif self.match_case:
            st.lowercase = not any(c.isupper() for c in MARKER_RE.sub(" ", doc.text))
        return st

    def _fill_group(self, docs: Sequence[MaskedDocument]) -> list[FilledDocument]:
        states = [self._start(d) for d in docs]
        active = [st for st in states if st.slot is not None]
        while active:
            pending: list[DocState] = []
            to_rank: list[DocState] = []
            for st in active:
                while st.slot is not None and self._resolve_without_model(st):
                    pass
                if st.slot is not None:
                    (to_rank if self._ranked(st, st.slot) else pending).append(st)
            if to_rank:
                self._rank_step(to_rank)
            if pending:
                self._open_step(pending)
            active = [st for st in pending + to_rank if st.slot is not None]
        return [self._finish(st) for st in states]

    def _kind(self, st: DocState, slot: Slot) -> str:
        """How a slot is filled: ``word`` (an open slot), ``entity`` (a model's words that NER tags with the
        type: ``entities="propose"``) or ``format`` (drawn: formats, and entities by default)."""
        if self.types == "off" or (self.types == "auto" and st.doc.style == "mask"):
            return "word"
        kind = typed.label_kind(slot.label)
        if kind == "entity" and self.entities == "draw" and typed.has_fallback(slot.label):
            return "format"
        return kind

    def _ranked(self, st: DocState, slot: Slot) -> bool:
        return (self.rank_types and ranking.ranks(slot.label, slot.shape, self.rank_labels)
                and self._kind(st, slot) == "format")

    @property
    def type_scorer(self):
        """The sentence scorer that ranks typed draws (``rank_types``): SmolLM2 unless a back-end has its own."""
        return ranking.default_scorer()

    def _resolve_without_model(self, st: DocState) -> bool:
        slot = st.slot
        if slot.key in st.assigned:
            st.put(st.value_of(slot))
            return True
        if self._kind(st, slot) == "format" and not self._ranked(st, slot):
            self._assign(st, slot, self._format_value(st, slot))
            return True
        return False

    def _rank_step(self, pending: list[DocState]) -> None:
        """Typed slots of many documents at once: draws of the type, the one its sentence scores best."""
        cands = [ranking.draw_candidates(st.slot.label, st.slot.shape, st.rng, self.type_candidates,
                                         taken=st.used.get(st.slot.label, ()),
                                         lowercase=st.lowercase and st.slot.shape is None,
                                         forges=lambda v, st=st: _forges(st, v)) for st in pending]
        picks = ranking.choose(self.type_scorer, [st.view(512, 512) for st in pending], cands,
                               [st.rng for st in pending], sample=self.rank_sample, temperature=self.temperature)
        self.stats["ranked"] += len(pending)
        for st, pick in zip(pending, picks):
            self._assign(st, st.slot, pick if pick is not None else self._format_value(st, st.slot))

    def _format_value(self, st: DocState, slot: Slot) -> str:
        """A generated value of the slot's type and shape, unlike the document's other keys of that type."""
        taken = st.used.get(slot.label, ())
        gender = None
        if self.gender_cues and slot.label in PERSON_LABELS:
            gender = ranking.gender_cue(st.view(200, 200))
            self.stats["gender_cue"] += gender is not None
        shape = slot.shape
        if shape is None and slot.marker.startswith("[MASK]") and typed.entity_kind(slot.label):
            shape = " ".join(["W"] * slot.marker.count("[MASK]"))  # "[MASK] [MASK]" was two words
        for _ in range(self.faker_tries):
            value = typed.fake_value(slot.label, st.rng, shape, gender)
            if value not in taken and not _forges(st, value):
                break
        self.stats["faker"] += 1
        return value

    def _assign(self, st: DocState, slot: Slot, value: str) -> None:
        """``value`` becomes the substitute of the slot's key and fills the current slot."""
        if st.lowercase and slot.shape is None:  # (drawn values too; a shape already says the case)
            value = value.lower()
        st.assigned[slot.key] = (value, slot.shape)
        st.used.setdefault(slot.label, set()).add(value)
        st.put(value)
        self.stats["filled"] += 1

    def _finish(self, st: DocState) -> FilledDocument:
        doc = st.doc
        text = "".join(st.pieces) + doc.text[st.pos:]
        left = find_markers(text)
        if left:
            raise VeilError(f"document {doc.id!r}: {len(left)} marker(s) left after filling "
                            f"(first {text[left[0][0]:left[0][1]]!r})")
        return assemble(doc, st.slots, [st.values[s.index] for s in st.slots])
