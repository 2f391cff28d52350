"""Fill stage: the ``faker`` filler, realistic typed substitutes without any language model.

Every typed placeholder gets a generated value of its type: formats (phone, card, date, zip,
spelled letters, ...) keep the shape the mask stage recorded (:mod:`veil.shapes`,
:func:`veil.fill.typed.shaped_value`), names, places and organisations come from Faker. A numbered
placeholder (``[PERSON_NAME_1]``) gets one value per document at every occurrence, different from
the document's other keys of its type, and a new one in every other document (each document draws
from its own RNG seeded by ``(seed, id)``).

It is the filler of ``veil.anonymize``: fast (no model, no spaCy) and never leaves a marker. What it
cannot do is guess a word from its context: untyped markers (``[MASK]``, ``[WORD]``) get a common
English word drawn without looking at the sentence; for those, use a model filler (``llm``, ``mlm``).
"""

from __future__ import annotations

import re

from veil.errors import VeilError
from veil.fill import typed
from veil.fill.draws import DrawFiller
from veil.fill.state import DocState
from veil.markers import MARKER_RE

#: the candidate count every filler is built with unless told otherwise (the experiment runner passes it to all)
_DEFAULT_K = 10


class FakerFiller(DrawFiller):
    """``FakerFiller(seed=0)``: typed placeholders by generators, plain markers by a context-free word.

    It has no model: ``model`` must be None, ``strategy`` ``top1`` (or ``sample`` with ``rank_types``: the
    ranked draw is drawn with the scores' softmax instead of the best taken), ``k`` its default; anything
    else is an error, not ignored. The other options are :class:`veil.fill.draws.DrawFiller`'s.
    """

    name = "faker"
    description = "generated values of each placeholder's type"  # the report's legend

    def __init__(self, model: str | None = None, strategy: str = "top1", k: int = _DEFAULT_K, seed: int = 0, *,
                 types: str = "on", match_case: bool | str = True, entities: str = "draw", **options) -> None:
        if model is not None:
            raise VeilError("the faker filler uses no model; drop --model, or choose a model filler (llm, mlm)")
        if entities != "draw":
            raise VeilError("the faker filler draws entities (it has no model to propose them)")
        if strategy not in ("top1", "sample") or (strategy == "sample" and not options.get("rank_types")):
            raise VeilError(f"the faker filler draws one value per placeholder: strategy {strategy!r} needs a model "
                            "filler (llm, mlm); faker takes sample only with rank_types")
        if k != _DEFAULT_K:
            raise VeilError("the faker filler has no candidate list to take K from; drop k "
                            "(type_candidates is how many draws rank_types compares)")
        # types="on": the labels the mask stage recorded for [MASK] markers are used too;
        # match_case: a lower-cased transcript ("hi this is [PERSON_NAME_1]") gets lower-case names
        super().__init__(seed, types=types, match_case=match_case, rank_sample=strategy == "sample", **options)

    def _start(self, doc):
        st = super()._start(doc)
        if st.lowercase and self.match_case is True and not _lowercased(doc.text):
            st.lowercase = False  # "[PERSON_NAME_1], my name is ...": the capital was masked, not absent
        return st

    def _open_step(self, pending: list[DocState]) -> None:
        for st in pending:
            slot = st.slot
            if self._kind(st, slot) != "word" and typed.has_fallback(slot.label):
                self._assign(st, slot, self._format_value(st, slot))
            else:
                self.stats["plain_word"] += 1
                self._assign(st, slot, typed.plain_word(st.rng))


_SENTENCE_START_RE = re.compile(r"(?:^|[.!?]\s+)([^\W\d_])")


def _lowercased(text: str) -> bool:
    """Positive evidence of a lower-cased transcript: a sentence that starts with a small letter, or "i"."""
    plain = MARKER_RE.sub("", text)
    return any(c.islower() for c in _SENTENCE_START_RE.findall(text)) or re.search(r"\bi\b", plain) is not None
