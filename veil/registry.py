"""Plug-in registries (maskers, fillers, corpus formats, downstream LMs), resolved lazily.

Built-ins register as ``"module:attr"`` strings so that importing veil never imports
torch or spaCy; the object is imported on first ``get``.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable


class Registry:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Any] = {}

    def register(self, name: str, target: Any = None) -> Any:
        """``register("x", "pkg.mod:Cls")`` (lazy), ``register("x", Cls)``, or ``@register("x")``."""
        if target is None:
            def deco(obj: Any) -> Any:
                self._entries[name] = obj
                return obj
            return deco
        self._entries[name] = target
        return target

    def get(self, name: str) -> Any:
        try:
            target = self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "(none)"
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}") from None
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            target = getattr(importlib.import_module(module), attr)
            self._entries[name] = target
        return target

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries


maskers = Registry("masker")
fillers = Registry("filler")
readers = Registry("corpus reader")
writers = Registry("corpus writer")
downstream_lms = Registry("downstream LM")

# --- built-in registrations: one line each -------------------------------------------------
maskers.register("allow_list", "veil.mask.allow_list:AllowListMasker")
maskers.register("vocab_threshold", "veil.mask.vocab_threshold:VocabThresholdMasker")
maskers.register("entity_tagger", "veil.mask.entity_tagger:EntityTaggerMasker")
maskers.register("dlp", "veil.mask.dlp:DLPMasker")
maskers.register("quasi", "veil.mask.quasi:QuasiIdentifierMasker")
maskers.register("neural_tagger", "veil.mask.neural.tagger:NeuralTaggerMasker")
maskers.register("deny_list", "veil.mask.deny_list:DenyListMasker")

fillers.register("mlm", "veil.fill.mlm:MLMFiller")
fillers.register("llm", "veil.fill.llm:LLMFiller")
fillers.register("llm-instruct", "veil.fill.llm_instruct:InstructLLMFiller")
fillers.register("faker", "veil.fill.faker:FakerFiller")

readers.register("txt", "veil.io.formats:read_txt")
readers.register("jsonl", "veil.io.formats:read_jsonl")
readers.register("csv", "veil.io.formats:read_csv")
readers.register("parquet", "veil.io.formats:read_parquet")
readers.register("switchboard", "veil.io.formats:read_switchboard")
downstream_lms.register("gpt2", "veil.downstream.lm:make_gpt2")

for _fmt in ("jsonl", "txt", "csv", "parquet"):
    writers.register(_fmt, "veil.io.output:ResumableWriter")


def create(registry: Registry, name: str, **kwargs: Any) -> Any:
    factory: Callable[..., Any] = registry.get(name)
    return factory(**kwargs)
