"""Plug-in registries (maskers, DLP detectors, fillers, corpus and gold formats, downstream LMs, PPMLM methods),
resolved lazily.

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
detectors = Registry("DLP detector")  # the dlp masker's detectors (a class with find(text, source) -> spans)
fillers = Registry("filler")
readers = Registry("corpus reader")
gold_formats = Registry("gold format")  # annotated corpora: a reader path -> list of GoldDocument
downstream_lms = Registry("downstream LM")
ppmlm_methods = Registry("PPMLM method")  # veil audit ppmlm's fine-tuning methods (a Method)

# --- built-in registrations: one line each -------------------------------------------------
maskers.register("allow_list", "veil.mask.allow_list:AllowListMasker")
maskers.register("vocab_threshold", "veil.mask.vocab_threshold:VocabThresholdMasker")
maskers.register("entity_tagger", "veil.mask.entity_tagger:EntityTaggerMasker")
maskers.register("dlp", "veil.mask.dlp:DLPMasker")
maskers.register("quasi", "veil.mask.quasi:QuasiIdentifierMasker")
maskers.register("neural_tagger", "veil.mask.neural.tagger:NeuralTaggerMasker")
maskers.register("deny_list", "veil.mask.deny_list:DenyListMasker")

detectors.register("email", "veil.mask.detectors.contact:EmailDetector")
detectors.register("url", "veil.mask.detectors.contact:UrlDetector")
detectors.register("ip_address", "veil.mask.detectors.contact:IpAddressDetector")
detectors.register("phone", "veil.mask.detectors.contact:PhoneDetector")
detectors.register("credit_card", "veil.mask.detectors.numbers:CreditCardDetector")
detectors.register("us_ssn", "veil.mask.detectors.numbers:UsSsnDetector")
detectors.register("number", "veil.mask.detectors.numbers:NumberDetector")
detectors.register("case_code", "veil.mask.detectors.numbers:CaseCodeDetector")
detectors.register("date", "veil.mask.detectors.numbers:DateDetector")
detectors.register("age", "veil.mask.detectors.numbers:AgeDetector")
detectors.register("duration", "veil.mask.detectors.numbers:DurationDetector")
detectors.register("money", "veil.mask.detectors.numbers:MoneyDetector")
detectors.register("quantity", "veil.mask.detectors.numbers:QuantityDetector")
detectors.register("street_address", "veil.mask.detectors.numbers:StreetAddressDetector")
detectors.register("spelled_word", "veil.mask.detectors.words:SpelledWordDetector")
detectors.register("username", "veil.mask.detectors.words:UsernameDetector")
detectors.register("spelled_name", "veil.mask.detectors.spoken:SpelledNameDetector")
detectors.register("spoken_email", "veil.mask.detectors.spoken:SpokenEmailDetector")
detectors.register("spoken_address", "veil.mask.detectors.spoken:SpokenAddressDetector")
detectors.register("titled_name", "veil.mask.detectors.words:TitledNameDetector")
detectors.register("non_latin_name", "veil.mask.detectors.words:NonLatinNameDetector")
detectors.register("spoken_age", "veil.mask.detectors.personal:SpokenAgeDetector")
detectors.register("life_event_date", "veil.mask.detectors.personal:LifeEventDateDetector")
detectors.register("occupation", "veil.mask.detectors.personal:OccupationDetector")
detectors.register("health", "veil.mask.detectors.personal:HealthDetector")
detectors.register("nationality", "veil.mask.detectors.personal:NationalityDetector")
detectors.register("service", "veil.mask.detectors.personal:ServiceDetector")
detectors.register("spoken_price", "veil.mask.detectors.personal:SpokenPriceDetector")

fillers.register("mlm", "veil.fill.mlm:MLMFiller")
fillers.register("llm", "veil.fill.llm:LLMFiller")
fillers.register("llm-instruct", "veil.fill.llm_instruct:InstructLLMFiller")
fillers.register("faker", "veil.fill.faker:FakerFiller")

readers.register("txt", "veil.io.formats:read_txt")
readers.register("jsonl", "veil.io.formats:read_jsonl")
readers.register("csv", "veil.io.formats:read_csv")
readers.register("parquet", "veil.io.formats:read_parquet")
readers.register("switchboard", "veil.io.formats:read_switchboard")
gold_formats.register("tab", "veil.mask.gold:read_tab")
gold_formats.register("presidio", "veil.mask.gold:read_presidio")
gold_formats.register("conll", "veil.mask.gold:read_conll")
gold_formats.register("switchboard_pii", "veil.mask.gold:read_switchboard_pii")
gold_formats.register("review", "veil.mask.gold:read_review")
gold_formats.register("sgd", "veil.mask.gold:read_sgd")

downstream_lms.register("gpt2", "veil.downstream.lm:make_gpt2")

ppmlm_methods.register("mlm", "veil.audit.ppmlm.methods:MLM")
ppmlm_methods.register("mlma", "veil.audit.ppmlm.methods:MLMA")
ppmlm_methods.register("dppmlm", "veil.audit.ppmlm.methods:DPPMLM")
ppmlm_methods.register("ippmlm", "veil.audit.ppmlm.methods:IPPMLM")
ppmlm_methods.register("ppmlm", "veil.audit.ppmlm.methods:PPMLM")
ppmlm_methods.register("dp", "veil.audit.ppmlm.methods:DP")
ppmlm_methods.register("base", "veil.audit.ppmlm.methods:BASE")

#: every registry, for `veil ls` and the registry test
ALL = (maskers, detectors, fillers, readers, gold_formats, downstream_lms, ppmlm_methods)


def create(registry: Registry, name: str, **kwargs: Any) -> Any:
    factory: Callable[..., Any] = registry.get(name)
    return factory(**kwargs)
