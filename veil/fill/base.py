"""Fill stage: the filler plug-in interface, the slots of a masked document and the draws' seeding.

:class:`Filler` is the plug-in interface: ``fill`` accepts ``MaskedDocument`` objects only (a
``MaskedDocument`` has no field for the original text), so original text has no path into a model.
The loop every model back-end shares is :class:`veil.fill.loop.CandidateFiller`.

**How draws are seeded.** Every random choice of a fill (a Top-K draw, a name, a phone number) comes
from the document's own generator, :func:`doc_rng`, seeded by the run's ``seed`` and the document's
id, and from nothing else: not from the masked value (the fill stage never sees it), not from the
batch, the thread or the other documents. A substitute is therefore never a function of the
original value: the same original in two documents gets independent substitutes, and knowing the
seed and an original does not give its substitute without the document's id and its earlier draws.
"""

from __future__ import annotations

import hashlib
import random
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import AbstractSet, Any, Mapping, Sequence

from veil.errors import VeilError
from veil.markers import find_markers, parse_marker_name
from veil.types import FilledDocument, MaskedDocument, Placeholder

#: the techniques whose word lists Top-K keeps substitutes off by default (paper §3.2)
AVOID_TECHNIQUES = ("allow_list", "vocab_threshold")
CANDIDATE_MARGIN = 4  # spare candidates per request, for the ones the loop has to drop
#: held while a filler loads its model on first use, so threads sharing a filler load it once
LOAD_LOCK = threading.RLock()


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
                 progress: bool = True, fill: Any = None, **options: Any) -> dict[str, Any]:
        """Fine-tune this filler's model for a masked corpus into ``output_dir`` (then fill with
        ``model=output_dir``); returns a summary. The one hook the experiment runner and
        ``veil finetune`` call: a filler that can learn implements it, and nothing else changes.

        Training text: ``texts`` when given, else what ``data`` names (``mask-free``: the documents
        without placeholders; a filler may know more, see :attr:`finetune_data`). ``fill(filler, docs,
        progress)`` is the caller's in-memory corpus loop (:func:`veil.run.inmemory.fill_documents`), for a
        hook that fills the corpus itself (the MLM's fill -> fine-tune rounds). ``options`` are the
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
    """The RNG of one document: a function of the run's seed and the document id only (see the module
    docstring); a fill never shares it with another document or another call."""
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


def default_avoid(technique: str) -> AbstractSet[str]:
    """The word list Top-K keeps substitutes of ``technique``'s spans off by default: the vocabulary its
    masker masks outside of (the allow_list / vocab_threshold maskers: wordfreq's top 5,000 / 10,000
    words); empty for every other technique."""
    if technique not in AVOID_TECHNIQUES:
        return frozenset()
    from veil.registry import maskers

    return maskers.get(technique)().vocabulary
