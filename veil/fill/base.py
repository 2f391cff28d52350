"""Fill stage: the filler plug-in interface and the shared fill loop. The privacy boundary is enforced here.

:class:`Filler` is the plug-in interface: ``fill`` accepts ``MaskedDocument`` objects only (a
``MaskedDocument`` has no field for the original text), so original text has no path into a model.

:class:`CandidateFiller` is the loop every model back-end shares; a back-end implements only
``propose_batch`` (ranked whole-word candidates for one marker of each of many texts). The loop:

1. finds the markers of each document (its unescaped markers, checked against its placeholders)
   and merges consecutive ``[MASK]`` markers separated only by whitespace into one (paper §4.2.4);
2. fills them left to right, one at a time, re-encoding the text after each fill (Top-1 exactly
   as the paper describes); step *t* asks the back-end for the next remaining marker of every
   document of the group at once, so the model runs batched across documents;
3. chooses among the candidates with the strategy (``top1``; ``topk``: uniform among the top K,
   re-drawn while the word is on the allow / vocabulary list of the technique that masked it;
   ``sample``: the same avoidance, then a draw with the model's probabilities, see
   :mod:`veil.fill.strategies`);
   each document draws from its own RNG seeded from ``(seed, document id)``, so results do not
   depend on batch composition;
4. gives typed placeholders a substitute of their type (entity labels: model candidates that
   spaCy's NER tags with the type, else Faker; format labels such as emails and phone numbers:
   Faker, see :mod:`veil.fill.typed`), and numbered placeholders one substitute per key and
   document (``[PERSON_NAME_1]`` is the same name at every occurrence, drawn anew in every document,
   and different from the document's other ``PERSON_NAME`` keys);
5. checks that no marker is left, unescapes user look-alikes (``[\\MASK]`` -> ``[MASK]``) and
   returns ``FilledDocument`` objects with one ``Substitution`` per (merged) marker.
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import AbstractSet, Any, Mapping, Sequence

from veil.errors import VeilError
from veil.fill import strategies
from veil.fill import typed
from veil.markers import MARKER_RE, find_markers, parse_marker_name, unescape
from veil.types import FilledDocument, MaskedDocument, Placeholder, Substitution

log = logging.getLogger(__name__)

#: the techniques whose word lists Top-K keeps substitutes off by default (paper §3.2)
AVOID_TECHNIQUES = ("allow_list", "vocab_threshold")
CANDIDATE_MARGIN = 4  # spare candidates per request, for the ones the loop has to drop
_BAD_CANDIDATE_RE = re.compile(r"[\[\]\s]|^$")  # brackets could forge a marker; a word has no spaces


class Filler:
    """Replaces every placeholder of masked documents. Register it in ``veil.registry.fillers``.

    Constructed as ``Filler(model=..., strategy="top1"|"topk"|"sample", k=10, seed=0, **options)``.
    Subclasses implement ``_fill``; ``fill`` refuses anything that is not a ``MaskedDocument``
    so that original text has no path into a model.
    """

    name: str = "filler"
    #: ``data`` values :meth:`finetune` turns into training text itself; for any other the caller
    #: passes ``texts`` (the experiment runner: another method's fill; ``veil finetune``: ``--filled``)
    finetune_data: tuple[str, ...] = ()
    #: what the experiment runner trains on when a method's ``finetune`` names no ``data``
    finetune_default_data: str = "mask-free"
    #: the filler whose Top-1 / Top-K fill ``veil finetune --data top1|topk`` trains on when
    #: :meth:`finetune` does not build it itself (None: this filler)
    finetune_fill_filler: str | None = None

    @classmethod
    def finetune(cls, docs: Sequence[MaskedDocument], output_dir: str | Path, *, texts: Sequence[str] | None = None,
                 data: str = "mask-free", model: str | None = None, rounds: int = 1, k: int = 10, seed: int = 0,
                 progress: bool = True, **options: Any) -> dict[str, Any]:
        """Fine-tune this filler's model for a masked corpus into ``output_dir`` (then fill with
        ``model=output_dir``); returns a summary. The one hook the experiment runner and
        ``veil finetune`` call: a filler that can learn implements it, and nothing else changes.

        Training text: ``texts`` when given, else what ``data`` names (``mask-free``: the documents
        without placeholders; a filler may know more, see :attr:`finetune_data`). ``options`` are the
        filler's training settings (``epochs``, ``max_steps``, ``batch_size``, ``lr``, ...): an
        option the filler does not know is an error."""
        raise VeilError(f"the {cls.name} filler cannot be fine-tuned")

    def load(self) -> "Filler":
        """Load what the filler needs (its model) now, so that a filler that cannot work fails before
        the work (``veil fill`` calls it before the first document) instead of falling back on every
        document. A filler with a model overrides it; errors are ``VeilError``."""
        return self

    def fill(self, docs: Sequence[MaskedDocument]) -> list[FilledDocument]:
        for d in docs:
            if not isinstance(d, MaskedDocument):
                raise TypeError(f"fillers accept MaskedDocument only, got {type(d).__name__}: "
                                "the fill stage must never see original text")
        return self._fill(docs)

    def _fill(self, docs: Sequence[MaskedDocument]) -> list[FilledDocument]:
        raise NotImplementedError


def finetune_texts(name: str, docs: Sequence[MaskedDocument], data: str, texts: Sequence[str] | None,
                   rounds: int) -> list[str]:
    """The training text of a one-round fine-tuning hook: ``texts``, or the mask-free documents."""
    if rounds != 1:
        raise VeilError(f"{name} fine-tuning runs one round; drop rounds")
    if texts is not None:
        return list(texts)
    if data != "mask-free":
        raise VeilError(f"the {name} filler trains on mask-free documents or on given texts, not {data!r}")
    from veil.fill.finetune import mask_free_texts

    return mask_free_texts(docs)


def lora_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The CLI's training-option names (``lr``, ``max_length``) as the LoRA recipes call them."""
    names = {"lr": "learning_rate", "max_length": "max_tokens"}
    return {names.get(k, k): v for k, v in options.items()}


def lora_finetune(name: str, train: Any, docs: Sequence[MaskedDocument], output_dir: Any, *,
                  texts: Sequence[str] | None, data: str, rounds: int, model: Any, seed: int, progress: bool,
                  options: Mapping[str, Any]) -> dict[str, Any]:
    """The one-round LoRA fine-tuning hook of the causal fillers: ``train(texts, output_dir, ...)`` on the
    texts :func:`finetune_texts` picks, the CLI's option names mapped; an unknown option is a ``VeilError``."""
    texts = finetune_texts(name, docs, data, texts, rounds)
    try:
        info = train(texts, output_dir, model=model, seed=seed, progress=progress, **lora_options(options))
    except TypeError as e:
        raise VeilError(f"{name} fine-tuning: {e}") from None
    return {"texts": len(texts), **(info or {})}


def doc_rng(seed: int, doc_id: str) -> random.Random:
    """The RNG of one document: a function of the run's seed and the document id only."""
    h = hashlib.sha256(f"{seed}\x00{doc_id}".encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


@dataclass
class Slot:
    """One marker to fill (possibly several merged ``[MASK]`` markers)."""

    index: int  # position among the document's slots, left to right
    start: int  # offsets in the document's *current* text
    end: int
    marker: str  # the masked text it replaces, e.g. "[MASK] [MASK]" or "[PERSON_NAME_1]"
    label: str
    key: str
    techniques: frozenset[str]
    shape: str | None = None  # the masked value's format (veil.shapes), for shape-keeping typed fills


@dataclass
class _DocState:
    doc: MaskedDocument
    text: str  # escaped masked text with the fills so far
    slots: list[Slot]  # remaining, left to right
    rng: random.Random
    initial: list[Slot]  # every slot, offsets in the masked text
    values: dict[int, str] = field(default_factory=dict)  # slot index -> substitute
    assigned: dict[str, str] = field(default_factory=dict)  # key -> substitute (numbered consistency)
    used: dict[str, set[str]] = field(default_factory=dict)  # label -> substitutes of other keys
    lowercase: bool = False  # substitutes are lower-cased (match_case and a text without capitals)


def document_slots(doc: MaskedDocument, merge_masks: bool = True) -> list[Slot]:
    """The markers of ``doc`` to fill, left to right, with consecutive ``[MASK]`` markers merged.

    Markers are the unescaped markers of the text; each must be one of ``doc.placeholders``
    (a corpus without placeholder records gets them from the marker names).
    """
    text = doc.text
    found = find_markers(text)
    by_start = {p.start: p for p in doc.placeholders}
    if doc.placeholders:
        if len(found) != len(doc.placeholders) or any(
                s not in by_start or by_start[s].end != e for s, e, _ in found):
            raise VeilError(f"document {doc.id!r}: its placeholders do not match the markers in its text "
                            f"({len(doc.placeholders)} placeholders, {len(found)} markers); "
                            "was the text edited after masking?")
        phs = [by_start[s] for s, _, _ in found]
    else:
        phs = []
        for i, (s, e, name) in enumerate(found):
            label, n = parse_marker_name(name)
            phs.append(Placeholder(s, e, "MASK" if label.upper() == "MASK" else label,
                                   name if n is not None else f"{label}#{i}", "unknown"))
    slots: list[Slot] = []
    for ph in phs:
        is_mask = text[ph.start:ph.end] == "[MASK]"
        prev = slots[-1] if slots else None
        if (merge_masks and is_mask and prev is not None and prev.marker.endswith("[MASK]")
                and text[prev.end:ph.start].strip() == ""):
            slots[-1] = Slot(prev.index, prev.start, ph.end, text[prev.start:ph.end], prev.label,
                             prev.key + "+" + ph.key, prev.techniques | {ph.technique})
            continue
        slots.append(Slot(len(slots), ph.start, ph.end, text[ph.start:ph.end], ph.label, ph.key,
                          frozenset({ph.technique}), ph.shape))
    return slots


def _forges_marker(text: str, start: int, end: int, value: str) -> bool:
    """Would ``value`` in place of ``text[start:end]`` form a marker with the brackets around it?"""
    window = text[max(0, start - 40):start] + value + text[end:end + 40]
    off = min(start, 40)
    return any(m.start() < off + len(value) and m.end() > off for m in MARKER_RE.finditer(window))


class CandidateFiller(Filler):
    """Fills markers one at a time, left to right, choosing among a model's ranked whole-word candidates.

    Model back-ends (``mlm``, ``llm``) implement only ``propose_batch``; the fill loop, the Top-1 /
    Top-K strategies, avoidance of allow-listed words, typed and numbered consistency live in this
    class so every back-end behaves the same.

    Options: ``avoid={technique: words}`` replaces the default avoid-lists (the allow_list and
    vocab_threshold maskers' default vocabularies, loaded when first needed; ``avoid={}`` turns
    avoidance off); ``avoid_in_top1`` applies the lists to Top-1 as well (off: the paper's Top-1 is
    the plain best prediction); ``entity_candidates`` is how many candidates an entity-typed marker
    asks for before spaCy checks them; ``merge_masks`` merges consecutive ``[MASK]`` markers;
    ``group_size`` is how many documents one batched step covers; ``ner_model`` the spaCy model;
    ``faker_tries``: Faker draws checked by spaCy when no model candidate of an entity type passes;
    ``types``: ``"auto"`` fills typed and numbered placeholders by type and ``[MASK]`` markers with
    plain words (the paper's setting, even where the mask stage recorded a label), ``"on"`` uses the
    recorded labels for ``[MASK]`` markers too, ``"off"`` fills everything with plain words;
    ``temperature``: the ``sample`` strategy's softmax temperature over the back-end's scores;
    ``avoid_proposals``: where the strategy avoids a word list, ask the back-end for candidates off
    that list in the first place (back-ends with ``supports_exclude``: ``llm``), instead of drawing
    among the model's top K and dropping the listed ones afterwards (the paper's Top-K), which for
    a name or a rare word often leaves only function words ("the", "and") to choose from;
    ``match_case``: in a document whose text has no capital letter (a lower-cased corpus such as
    PTB), substitutes are lower-cased too, so the filled corpus keeps the corpus's conventions.
    """

    supports_exclude = False  # whether propose_batch takes ``exclude`` (see avoid_proposals)

    def __init__(self, strategy: str = "top1", k: int = 10, seed: int = 0, batch_size: int = 64,
                 *, avoid: Mapping[str, AbstractSet[str]] | None = None, avoid_in_top1: bool = False,
                 entity_candidates: int = 20, merge_masks: bool = True, group_size: int = 1024,
                 ner_model: str | None = None, types: str = "auto", faker_tries: int = 12,
                 temperature: float = 1.0, avoid_proposals: bool = False, match_case: bool = False,
                 **options) -> None:
        if strategy not in strategies.STRATEGIES:
            raise VeilError(f"unknown strategy {strategy!r}; choose from {', '.join(strategies.STRATEGIES)}")
        if types not in ("auto", "on", "off"):
            raise VeilError(f"types must be auto, on or off, got {types!r}")
        self.types = types
        if k < 1 or batch_size < 1 or group_size < 1 or entity_candidates < 1:
            raise VeilError("k, batch_size, group_size and entity_candidates must be at least 1")
        if not temperature > 0:
            raise VeilError(f"temperature must be positive, got {temperature!r}")
        if avoid_proposals and not self.supports_exclude:
            raise VeilError(f"the {self.name} filler cannot keep listed words out of its proposals "
                            "(avoid_proposals needs a back-end with supports_exclude, e.g. llm)")
        self.strategy, self.k, self.seed, self.batch_size = strategy, k, seed, batch_size
        self.temperature = float(temperature)
        self.avoid_proposals = avoid_proposals
        self.match_case = match_case
        self.options = options
        self._avoid_given = avoid is not None
        self._avoid = {} if avoid is None else {t: frozenset(w.lower() for w in ws) for t, ws in avoid.items()}
        self.avoid_in_top1 = avoid_in_top1
        self.entity_candidates = entity_candidates
        self.faker_tries = max(1, faker_tries)
        self.merge_masks = merge_masks
        self.group_size = group_size
        self.verifier = typed.EntityVerifier(ner_model)
        self.stats: Counter[str] = Counter()

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
            self._avoid[technique] = _default_avoid(technique)
        return self._avoid[technique]

    def _avoid_for(self, slot: Slot) -> AbstractSet[str]:
        if self.strategy == "top1" and not self.avoid_in_top1:
            return frozenset()
        lists = [self.avoid_list(t) for t in sorted(slot.techniques)]
        lists = [x for x in lists if x]
        if not lists:
            return frozenset()
        return lists[0] if len(lists) == 1 else frozenset().union(*lists)

    # --- the loop -------------------------------------------------------------------------------
    def _fill(self, docs: Sequence[MaskedDocument]) -> list[FilledDocument]:
        out: list[FilledDocument] = []
        for g in range(0, len(docs), self.group_size):
            out.extend(self._fill_group(docs[g:g + self.group_size]))
        return out

    def _start(self, doc: MaskedDocument) -> _DocState:
        slots = document_slots(doc, self.merge_masks)
        st = _DocState(doc, doc.text, slots, doc_rng(self.seed, doc.id), list(slots))
        if self.match_case:
            st.lowercase = not any(c.isupper() for c in MARKER_RE.sub(" ", doc.text))
        return st

    def _fill_group(self, docs: Sequence[MaskedDocument]) -> list[FilledDocument]:
        states = [self._start(d) for d in docs]
        active = [st for st in states if st.slots]
        while active:
            pending: list[_DocState] = []
            for st in active:
                while st.slots and self._resolve_without_model(st):
                    pass
                if st.slots:
                    pending.append(st)
            if not pending:
                break
            self._model_step(pending)
            active = [st for st in pending if st.slots]
        return [self._finish(st) for st in states]

    def _kind(self, st: _DocState, slot: Slot) -> str:
        """How a slot is filled: ``word``, ``entity`` or ``format`` (see :mod:`veil.fill.typed`)."""
        if self.types == "off" or (self.types == "auto" and st.doc.style == "mask"):
            return "word"
        return typed.label_kind(slot.label)

    def _resolve_without_model(self, st: _DocState) -> bool:
        slot = st.slots[0]
        if slot.key in st.assigned:
            self._apply(st, slot, st.assigned[slot.key])
            return True
        if self._kind(st, slot) == "format":
            self._assign(st, slot, self._format_value(st, slot))
            return True
        return False

    def _format_value(self, st: _DocState, slot: Slot) -> str:
        """A generated value of the slot's type and shape, unlike the document's other keys of that type."""
        taken = st.used.get(slot.label, ())
        for _ in range(self.faker_tries):
            value = typed.fake_value(slot.label, st.rng, slot.shape)
            if value not in taken and not _forges_marker(st.text, slot.start, slot.end, value):
                break
        self.stats["faker"] += 1
        return value

    def _wanted(self, st: _DocState, slot: Slot) -> int:
        n = self.k if (self.strategy in strategies.K_STRATEGIES or self.avoid_in_top1) else 1
        if self._kind(st, slot) == "entity":
            n = max(n, self.entity_candidates)
        if st.doc.style == "numbered":
            n += len(st.used.get(slot.label, ()))
        return n + CANDIDATE_MARGIN

    def _model_step(self, pending: list[_DocState]) -> None:
        slots = [st.slots[0] for st in pending]
        k_req = max(self._wanted(st, s) for st, s in zip(pending, slots))
        extra = {"exclude": [self._avoid_for(s) or None for s in slots]} if self.avoid_proposals else {}
        proposals = self.propose_batch([st.text for st in pending], [(s.start, s.end) for s in slots], k_req, **extra)
        if len(proposals) != len(pending):
            raise VeilError(f"{type(self).__name__}.propose_batch returned {len(proposals)} lists "
                            f"for {len(pending)} texts")
        self.stats["model_calls"] += 1
        self.stats["model_markers"] += len(pending)
        cands: list[list[str]] = []
        scores: list[dict[str, float]] = []  # each candidate's score (the first, i.e. best, for duplicates)
        for st, slot, props in zip(pending, slots, proposals):
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
                if _forges_marker(st.text, slot.start, slot.end, w):
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
                st, s = pending[i], slots[i]
                nxt = st.slots[1].start if len(st.slots) > 1 else None
                left, right = typed.context_around(st.text, s.start, s.end, nxt)
                items.append((left, right, s.label, cands[i]))
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
                                 and not _forges_marker(st.text, s.start, s.end, v)]
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
                value = self._fallback(st, slot, proposals[i])
            self._assign(st, slot, value)

    def _fallback(self, st: _DocState, slot: Slot, props: Sequence[tuple[str, float]]) -> str:
        """No acceptable candidate: Faker for an entity type it knows, else the best proposal."""
        if self._kind(st, slot) != "word" and typed.has_fallback(slot.label):
            self.stats["entity_fallback"] += 1
            for _ in range(20):
                v = typed.fake_value(slot.label, st.rng)
                if v not in st.used.get(slot.label, ()) and not _forges_marker(st.text, slot.start, slot.end, v):
                    return v
            return v.lower()
        for w, _ in props:
            w = w.strip()
            if w and not _BAD_CANDIDATE_RE.search(w) and not _forges_marker(st.text, slot.start, slot.end, w):
                self.stats["no_acceptable_candidate"] += 1
                return w
        raise VeilError(f"document {st.doc.id!r}: the model proposed no usable word for {slot.marker}")

    def _assign(self, st: _DocState, slot: Slot, value: str) -> None:
        if st.lowercase:  # (Faker values too)
            value = value.lower()
        st.assigned[slot.key] = value
        st.used.setdefault(slot.label, set()).add(value)
        self._apply(st, slot, value)

    def _apply(self, st: _DocState, slot: Slot, value: str) -> None:
        """Put ``value`` in place of ``slot`` and of every later slot with the same key."""
        parts: list[str] = []
        remaining: list[Slot] = []
        pos = shift = 0
        for s in st.slots:
            if s is slot or s.key == slot.key:
                # the same entity written another way ("Maria" / "maria"): the same value, its case
                v = value if s is slot or s.shape == slot.shape else typed.restyle(value, s.shape)
                parts.append(st.text[pos:s.start])
                parts.append(v)
                pos = s.end
                st.values[s.index] = v
                shift += len(v) - (s.end - s.start)
            else:
                remaining.append(replace(s, start=s.start + shift, end=s.end + shift) if shift else s)
        parts.append(st.text[pos:])
        st.text = "".join(parts)
        st.slots = remaining
        self.stats["filled"] += 1

    def _finish(self, st: _DocState) -> FilledDocument:
        doc = st.doc
        left = find_markers(st.text)
        if left:
            raise VeilError(f"document {doc.id!r}: {len(left)} marker(s) left after filling "
                            f"(first {st.text[left[0][0]:left[0][1]]!r})")
        parts: list[str] = []
        subs: list[Substitution] = []
        pos = out_len = 0
        for s in st.initial:
            seg = unescape(doc.text[pos:s.start])
            parts.append(seg)
            out_len += len(seg)
            value = st.values[s.index]
            subs.append(Substitution(doc.id, s.marker, s.key, s.label, value, out_len, out_len + len(value)))
            parts.append(value)
            out_len += len(value)
            pos = s.end
        parts.append(unescape(doc.text[pos:]))
        return FilledDocument(doc.id, "".join(parts), tuple(subs), person=doc.person, group=doc.group,
                              meta=dict(doc.meta))


def _default_avoid(technique: str) -> AbstractSet[str]:
    """The word list the masker of ``technique`` uses by default (wordfreq top 5,000 / 10,000)."""
    if technique == "allow_list":
        from veil.mask.allow_list import AllowListMasker

        return AllowListMasker().vocabulary
    if technique == "vocab_threshold":
        from veil.mask.vocab_threshold import VocabThresholdMasker

        return VocabThresholdMasker().vocabulary
    return frozenset()
