"""Python API plumbing: lets the ``veil.mask`` and ``veil.fill`` stage packages be called as functions.

``veil.mask`` is two things a user reaches by the same name: the detect-and-mask stage package
(``veil.mask.engine``, ``veil.mask.dlp``) and the API function ``veil.mask(texts)``. Python's import
system writes the package over any function of that name on ``veil`` as soon as a submodule is
imported, so the package itself is made callable: calling it calls ``veil.api.<name>``.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any


class _StageModule(ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from veil import api

        return getattr(api, self.__name__.rpartition(".")[2])(*args, **kwargs)


def make_callable(module_name: str) -> None:
    """Called by a stage package's ``__init__``: ``veil.mask(...)`` is then ``veil.api.mask(...)``."""
    sys.modules[module_name].__class__ = _StageModule
