"""Detect and mask stage: the masker plug-in interface."""

from __future__ import annotations

from typing import Iterable, Sequence

from veil.errors import VeilError
from veil.types import Span


def choose(masker: str, option: str, value: Iterable[str] | str, known: Sequence[str]) -> list[str]:
    """A masker option naming some of ``known`` (``"a,b"`` or a list); an unknown name is an error."""
    names = [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else list(value)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise VeilError(f"{masker}: unknown {option}(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    return names


class Masker:
    """A detector: given a text, return the spans to mask. Register it in ``veil.registry.maskers``.

    Subclasses implement ``detect``; override ``detect_batch`` when the back-end is faster in
    batches (spaCy's ``nlp.pipe``).
    """

    name: str = "masker"
    #: one sentence for the report's legend ("masks ..."); empty: the report points to ``veil ls``
    description: str = ""
    #: the technique's name in the paper's tables (``veil mask --stats``), when it has one
    paper_name: str = ""
    #: True when ``detect_batch`` spends its time in native code that releases the GIL (onnxruntime):
    #: the engine then runs it in a thread beside the other maskers, so two cores work at once
    releases_gil: bool = False

    def detect(self, text: str) -> list[Span]:
        raise NotImplementedError

    def detect_batch(self, texts: Sequence[str]) -> list[list[Span]]:
        return [self.detect(t) for t in texts]
