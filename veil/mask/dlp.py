"""Detect and mask stage: the DLP-style masker (the Dialpad paper's detectors, run locally).

Runs a set of small detectors (``veil.mask.detectors``): email, URL, IP address, phone number
(``phonenumbers``), credit card (Luhn-checked), US SSN, runs of 3+ digits written or spelled out,
dates, ages, spelled-out letters, usernames (with a hot-word window) and names after an honorific;
then applies the custom dictionary (always masked, with its type) and the exclusion list (never
masked). Hits below ``min_score`` are dropped (e.g. a bare nine-digit number with no "social
security" nearby is not reported as an SSN, though the number detector still masks it).

Names, organisations and places come from the separate ``entity_tagger`` masker; the paper's
"DLP" setting is ``MaskingEngine([EntityTaggerMasker(), DLPMasker()])``. Keeping them apart lets
this masker run at regex speed on its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping, Sequence

from veil.errors import VeilError
from veil.mask.base import Masker, choose
from veil.mask.detectors import DEFAULT_DETECTORS, Detector, DictionaryDetector
from veil.mask.detectors.base import check_register, written_in
from veil.mask.detectors.words import read_dictionary
from veil.textutil import normalise_surface
from veil.types import Span


def _read_list(path: str | Path) -> list[str]:
    from veil.mask.allow_list import read_word_list

    return read_word_list(path)


class DLPMasker(Masker):
    """``DLPMasker(detectors=("email", "phone"), exclude=["Dallas"], dictionary={"Acme": "ORGANIZATION_NAME"})``.

    ``exclude_file`` (one term a line) and ``dictionary_file`` (``term<TAB>TYPE`` lines) read the
    same from files. ``register`` (``detectors.base.REGISTERS``: auto, written, conversation) says where
    durations and counted quantities are masked: by default in written documents only (a court case's
    "14 years" is a sentence served, a caller's "two years" is how long they had a car).
    """

    name = "dlp"
    description = "masks numbers, phones, emails, dates, spelled letters and other formats by pattern"

    def __init__(self, detectors: Iterable[str] = DEFAULT_DETECTORS, exclude: Iterable[str] = (),
                 exclude_file: str | Path | None = None, dictionary: Mapping[str, str] | None = None,
                 dictionary_file: str | Path | None = None, min_score: float = 0.5, register: str = "auto") -> None:
        from veil.registry import detectors as registry

        self.register = check_register("dlp", register)
        names = choose("dlp", "detector", detectors, registry.names())
        self.detectors: list[Detector] = [registry.get(d)() for d in names]
        terms = dict(dictionary or {})
        if dictionary_file is not None:
            terms.update(read_dictionary(dictionary_file))
        if terms:
            self.detectors.append(DictionaryDetector(terms))
        if not self.detectors:
            raise VeilError("dlp: no detectors chosen")
        if isinstance(exclude, str):
            exclude = [exclude]
        excluded = list(exclude) + (_read_list(exclude_file) if exclude_file is not None else [])
        self.exclude = frozenset(normalise_surface(e) for e in excluded)
        self.min_score = min_score

    def detect(self, text: str) -> list[Span]:
        source, min_score = self.name, self.min_score
        written = None
        spans = []
        for det in self.detectors:
            if det.WRITTEN_ONLY:
                if written is None:
                    written = written_in(self.register, text)
                if not written:
                    continue
            spans += [s for s in det.find(text, source) if s.score >= min_score]
        if self.exclude and spans:
            spans = [s for s in spans if normalise_surface(text[s.start:s.end]) not in self.exclude]
        spans.sort(key=lambda s: (s.start, -s.end))
        return spans

    def detect_batch(self, texts: Sequence[str]) -> list[list[Span]]:
        return [self.detect(t) for t in texts]

    #: what it finds in one record of a group is masked in the group's others
    carries_groups = True

    def propagate_group(self, texts: Sequence[str], spans: Sequence[list[Span]],
                        groups: Sequence[object]) -> list[list[Span]]:
        """A name or a person's group (``DEMOGRAPHIC``: "the American people") found in one record of a group
        (a call's utterance) is masked where it is said again in the group's other records, as the tagger's are
        (:func:`veil.mask.propagation.propagate_group`); `veil verify` reads a call as one document."""
        from veil.mask.propagation import propagate_group

        return propagate_group(texts, spans, groups, self.name)
