"""veil: privacy-preserving masking and LLM-based filling of private text corpora.

>>> import veil
>>> veil.anonymize("Call me at (415) 555-0199.", maskers=["dlp"])  # doctest: +SKIP
'Call me at (563) 201-7728.'

Names are resolved on first use (PEP 562), so ``import veil`` imports no torch, spaCy or Faker.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS = {
    # the Python API
    # (``mask`` and ``fill`` are the stage packages made callable, see veil/_callable.py)
    "mask": None, "fill": None, "anonymize": "veil.api", "masking_engine": "veil.api",
    # core types
    "Document": "veil.types", "Span": "veil.types", "Placeholder": "veil.types",
    "MaskedDocument": "veil.types", "FilledDocument": "veil.types", "Substitution": "veil.types",
    # engines and plug-in interfaces
    "MaskingEngine": "veil.mask.engine", "Masker": "veil.mask.base",
    "Filler": "veil.fill.base", "CandidateFiller": "veil.fill.loop",
    "VeilError": "veil.errors", "InputError": "veil.errors",
    # registries (maskers, detectors, fillers, readers, gold formats, downstream LMs, PPMLM methods)
    "registry": None,
}
__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'veil' has no attribute {name!r}")
    module = _EXPORTS[name]
    value = import_module(f"veil.{name}") if module is None else getattr(import_module(module), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return list(__all__)
