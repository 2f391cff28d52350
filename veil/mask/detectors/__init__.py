"""Detect and mask stage: the DLP-style detectors (one small class per infoType; by name in veil.registry.detectors).

A built-in detector is its class, in one module of this package, and its line in
:mod:`veil.registry`: the names below (``DEFAULT_DETECTORS``, the classes, ``__all__``) are read
from those lines.
"""

from __future__ import annotations

from veil.mask.detectors.base import Detector, PatternDetector
from veil.mask.detectors.lexicon import LexiconDetector
from veil.mask.detectors.words import DictionaryDetector
from veil.registry import detectors as _registry

#: the detectors the DLP masker runs unless told otherwise: every built-in, in the order of their registration
#: lines (the order the masker runs them); durations and counted or measured quantities run on written
#: documents only (``WRITTEN_ONLY``, ``base.is_written``): in conversation "two years", "ten minutes", "two dogs"
#: and "forty miles" are not personal
DEFAULT_DETECTORS: tuple[str, ...] = tuple(_registry.builtins)

_classes = {name: _registry.get(name) for name in DEFAULT_DETECTORS}
globals().update({cls.__name__: cls for cls in _classes.values()})

__all__ = ["DEFAULT_DETECTORS", "Detector", "PatternDetector", "LexiconDetector", "DictionaryDetector",
           *(cls.__name__ for cls in _classes.values())]
