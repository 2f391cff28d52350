"""Run stage: detection alone on the one corpus loop, for the commands that need spans, not masked text.

`veil audit identifiers` (the direct identifiers), `veil experiment gap` (the words a technique
masks) and `veil verify` (the values masking again removes) want each document's spans on its
original text. They run :class:`veil.run.stages.DetectStage` through :func:`veil.run.corpus.map_units`
like `veil mask` runs its mask stage: the same batches, the same executors (``local``, ``ray``),
the same progress bar. Given a ``spans_file``, the spans are written there through the locked,
resumable writer (:class:`veil.io.output.ResumableWriter`, one ``{"id", "spans"}`` record a document):
the output is checked before any model loads, an interrupted run resumes after its last complete
batch, and a finished file with the same settings and documents is read back instead of detecting
again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from veil.errors import VeilError
from veil.types import Document, Span


def detect_stage(engine: Any, executor: Any = None) -> Any:
    """A :class:`DetectStage` for ``engine``: a MaskingEngine, or a zero-argument factory (on Ray: a picklable one)."""
    from veil.run.stages import DetectStage

    if hasattr(engine, "detect"):
        if executor is not None and executor.name != "local":
            raise VeilError("the ray executor builds the masking engine in every worker: give a picklable "
                            "factory (e.g. functools.partial(build_engine, maskers)), not a built engine")
        return DetectStage(lambda: engine)
    return DetectStage(engine)


def iter_spans(docs: Sequence[Document], engine: Any, *, executor: Any = None, batch_size: int = 256,
               progress: bool = False, desc: str = "detect") -> Iterator[list[Span]]:
    """Each document's merged spans on its text, in input order (``engine``: see :func:`detect_stage`)."""
    from veil.run.corpus import map_units

    for out in map_units(detect_stage(engine, executor), docs, executor=executor, batch_size=batch_size,
                         progress=progress, total=len(docs), desc=desc):
        for unit in out.units:
            yield from unit


def span_record(doc_id: Any, spans: Sequence[Span]) -> dict[str, Any]:
    return {"id": doc_id, "spans": [[s.start, s.end, s.label, s.source, s.score] for s in spans]}


def read_spans(path: Path, n: int) -> list[list[Span]]:
    """The spans of the first ``n`` documents of a spans file (:func:`span_record` lines)."""
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if len(out) == n:
                break
            out.append([Span(*s) for s in json.loads(line)["spans"]])
    if len(out) != n:
        raise VeilError(f"{path}: {len(out)} documents' spans where {n} were written")
    return out


def detect_documents(docs: Sequence[Document], engine: Any, *, settings: Mapping[str, Any] | None = None,
                     spans_file: str | Path | None = None, executor: Any = None, batch_size: int = 256,
                     progress: bool = False, desc: str = "detect", overwrite: bool = False) -> list[list[Span]]:
    """Every document's merged spans, in input order; with ``spans_file``, kept there and resumed (see the module).

    ``settings`` identify the engine (maskers, options, keep) for the resume and reuse decisions;
    the documents (ids and texts) are part of the identity too.
    """
    docs = list(docs)
    if spans_file is None:
        return list(iter_spans(docs, engine, executor=executor, batch_size=batch_size, progress=progress,
                               desc=desc))
    from veil.cache import stable_hash, texts_hash
    from veil.io.output import ResumableWriter

    if settings is None:
        raise VeilError("detect_documents(spans_file=...) needs settings that identify the engine")
    identity = {"documents": len(docs), "sha256": stable_hash([texts_hash([str(d.id) for d in docs]),
                                                               texts_hash([d.text for d in docs])])}
    with ResumableWriter(spans_file, {**dict(settings), "input": identity}, overwrite=overwrite,
                         describe={"spans": "[start, end, label, source, score] on each document's text"}) as w:
        if w.complete:
            return read_spans(w.path, len(docs))
        spans = read_spans(w.partial, w.done) if w.done else []
        from veil.run.corpus import map_units

        for out in map_units(detect_stage(engine, executor), docs[w.done:], executor=executor,
                             batch_size=batch_size, progress=progress, total=len(docs), initial=w.done, desc=desc):
            found = [s for unit in out.units for s in unit]
            start = len(spans)
            spans += found
            w.write([span_record(d.id, s) for d, s in zip(docs[start:start + len(found)], found)])
    return spans
