"""Run stage: the one corpus loop, behind `veil mask` (file and ``--stats``), `veil fill`, the API, the runner, the demo.

A corpus goes through one loop, whatever runs its batches::

    read (any format) -> units (a record, or a group's records) -> batches -> executor.map(stage)
      -> records in input order -> the locked, resumable writer (or the caller, in memory)

- :func:`mask_corpus` / :func:`fill_corpus` drive files: they check the input and the output
  before any model loads (:mod:`veil.io.checks`), then stream the input batch by batch through one
  :class:`veil.io.output.ResumableWriter`, with a progress bar; an interrupted run resumes after
  its last complete batch (a batch never splits a group);
- :func:`map_units` is the same loop in memory (the Python API, the experiment runner, ``veil
  finetune``).

The stages are :mod:`veil.run.stages` (detection alone, for the commands that need spans:
:mod:`veil.run.detect`), the executors (``local``, ``ray``) :mod:`veil.run.executors`;
a ``datasets.Dataset`` runs the same stages in its own ``map`` (:mod:`veil.run.hf_datasets`).
Nothing here imports torch or spaCy at module level.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from veil.errors import VeilError
from veil.io.checks import check_input, input_file
from veil.io.checks import input_format as _input_format
from veil.io.checks import output_format as _output_format
from veil.io.formats import RESERVED_FIELDS, Fields
from veil.run.components import DEFAULT_MASKERS, DEFAULT_PLACEHOLDER, build_engine
from veil.run.executors import LocalExecutor
from veil.run.groups import batches_of, units_of
from veil.run.stages import FillFailure, FillStage, MaskStage, StageOutput
from veil.types import MaskedDocument

log = logging.getLogger(__name__)


def _progress(total: int | None, initial: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    # disable=None: no bar when stderr is not a terminal (a log file of an unattended run stays readable)
    return tqdm(total=total, initial=initial, desc=desc, unit="doc", disable=None if enabled else True,
                file=sys.stderr, dynamic_ncols=True)


def map_units(stage: Any, docs: Iterable[Any], *, executor: Any = None, batch_size: int = 256,
              grouped: bool = False, progress: bool = False, total: int | None = None, initial: int = 0,
              desc: str = "") -> Iterator[StageOutput]:
    """The loop itself: ``docs`` cut into units and batches, run by ``executor``, outputs in input order."""
    if batch_size < 1:
        raise VeilError("the batch size must be at least 1")
    executor = executor or LocalExecutor()
    batches = batches_of(units_of(docs, grouped), batch_size)
    with _progress(total, initial, desc, progress) as bar:
        for out in executor.map(stage, batches):
            yield out
            bar.update(sum(len(u) for u in out.units))


def _mask_stage(engine: Any, executor: Any, names: Sequence[str] | None, placeholder: str,
                options: Mapping[str, Mapping[str, Any]] | None, exclude: list[str], keep: list[str],
                count: bool, each: bool = False) -> MaskStage:
    if engine is None:
        return MaskStage(partial(build_engine, names, placeholder, options, exclude, keep), count=count, each=each)
    if executor is not None and executor.name != "local" and not callable(engine):
        raise VeilError("the ray executor builds the masking engine in every worker: give maskers by name "
                        "or a picklable factory, not a built engine")
    return MaskStage(engine if callable(engine) and not hasattr(engine, "detect") else (lambda: engine), count=count,
                     each=each)


def recorded_fields(masked: str | Path) -> Fields | None:
    """The fields ``veil mask`` recorded for its output ``masked`` (None if it has no record of them)."""
    from veil.io.output import recorded

    got = recorded(masked).get("fields")
    if not isinstance(got, dict) or not isinstance(got.get("text"), str):
        return None
    return Fields(got["text"], got.get("id"), got.get("person"), got.get("group"))


def _field_order(names: Sequence[str], leave_out: Iterable[str]) -> Any:
    """A function putting a record's fields in the input's order (``names``); fields veil adds come last."""
    first = [n for n in names if n not in set(leave_out)]
    if not first:
        return lambda rec: rec

    def order(rec: dict[str, Any]) -> dict[str, Any]:
        out = {k: rec[k] for k in first if k in rec}
        if len(out) < len(rec):
            out.update((k, v) for k, v in rec.items() if k not in out)
        return out
    return order


def _shares(counts: dict[str, int], names: Sequence[str]) -> dict[str, float]:
    words = counts.get("words", 0)
    shares = {n: counts.get(f"masked:{n}", 0) / words if words else 0.0 for n in names}
    if len(names) > 1:
        shares["combined"] = counts.get("masked", 0) / words if words else 0.0
    return shares


# --- file drivers -------------------------------------------------------------------------------
def mask_corpus(input: str | Path, output: str | Path | None, maskers: Sequence[str] | None = None, *,
                placeholder: str = DEFAULT_PLACEHOLDER, options: Mapping[str, Mapping[str, Any]] | None = None,
                exclude: Iterable[str] = (), keep: Iterable[str] = (),
                engine: Any = None, settings: Mapping[str, Any] | None = None,
                fields: Fields | None = None, input_format: str | None = None, output_format: str | None = None,
                reader_options: Mapping[str, Any] | None = None, drop: Iterable[str] = (),
                batch_size: int = 256, limit: int | None = None, overwrite: bool = False,
                progress: bool = True, executor: Any = None, each: bool = False,
                placeholder_columns: bool = False) -> dict[str, Any]:
    """Mask the corpus file ``input`` into ``output`` (``-``: standard input / output); returns statistics.

    ``output=None`` writes nothing: the statistics only (``veil mask --stats``). They include the
    share of masked words, and with ``each`` that of every masker alone and all combined (the
    paper's Table 2), counted from the same detection that masks. The engine is built from ``maskers`` / ``placeholder`` /
    ``options`` / ``exclude`` / ``keep`` after the input and output are checked, or given as
    ``engine`` (an object, or a zero-argument factory) with ``settings`` that identify it for
    resume and reuse decisions. With a group field (``fields.group``), a group's records are one
    document: one numbering across them.

    The output keeps the input's fields in their order and adds no id the input did not have; a
    CSV or Parquet output keeps exactly the input's columns, its placeholders and style going to
    ``OUTPUT.placeholders.jsonl`` (``placeholder_columns``: into two more columns instead). The
    fields are recorded in ``OUTPUT.veil.json`` for ``veil fill``.
    """
    from veil.io.formats import read_documents
    from veil.io.output import ResumableWriter, check_output_path
    from veil.io.records import masked_to_record, placeholders_path, split_mask_fields

    if batch_size < 1:
        raise VeilError("the batch size must be at least 1")
    fields = fields or Fields()
    grouped = fields.group is not None
    drop = frozenset(drop)
    exclude, keep = list(exclude), list(keep)
    if output is not None:
        check_output_path(output, [input])
    fmt = _input_format(input, input_format)
    out_fmt = _output_format(output, output_format, "jsonl") if output is not None else None
    with input_file(input) as src:
        summary = check_input(src, fmt, fields, limit, RESERVED_FIELDS if output is not None else (), drop,
                              grouped=grouped)
        if summary.with_markers and output is not None:  # e.g. a masked text file masked again: say so
            log.warning("%s: %d of %d records hold placeholder-like text ([MASK], [PERSON_NAME_1], ...); it is kept "
                        "as the user's text (escaped as [\\MASK] in the output, restored verbatim by veil fill). "
                        "If this is veil mask output, mask the original corpus instead", input,
                        summary.with_markers, summary.records)
        if engine is None:
            run_settings = {"maskers": list(maskers or DEFAULT_MASKERS), "style": placeholder,
                            "options": options or {}, "exclude": sorted(exclude), "keep": sorted(keep)}
        else:
            if settings is None:
                raise VeilError("mask_corpus(engine=...) needs settings that identify the engine")
            run_settings = dict(settings)
        run_settings.update(input=summary.fingerprint, fields=vars(fields), drop=sorted(drop), limit=limit)
        # no id field the input did not have, in any format (the ids are record numbers then, and veil fill
        # numbers the records again; the substitutions beside a filled file name them)
        out_fields = fields if fmt in ("txt", "switchboard") or fields.id in summary.fields \
            else Fields(fields.text, None, fields.person, fields.group)
        side = (placeholders_path(output) if output is not None and str(output) != "-" and not placeholder_columns
                and out_fmt in ("csv", "parquet") else None)
        if side is not None or placeholder_columns:
            run_settings["placeholders"] = "columns" if side is None else "beside"
        order = _field_order(summary.fields, drop)
        t0 = time.perf_counter()
        if out_fmt == "txt":  # a text file keeps the text only: read back, its fields are the txt reader's
            if grouped:
                raise VeilError("a plain-text output cannot keep the group field; write jsonl, csv or parquet so "
                                "veil fill can fill each group as one document")
        described = Fields() if out_fmt == "txt" else out_fields
        describe = {"fields": vars(described), "placeholders": side.name if side else None}
        writer = (ResumableWriter(output, run_settings, out_fmt, overwrite=overwrite, text_field=fields.text,
                                  sidecar=side, describe=describe)
                  if output is not None else contextlib.nullcontext(None))
        with writer as w:
            if w is not None and w.complete:
                return {"records": summary.records, "masked_now": 0, "complete_already": True}
            stage = _mask_stage(engine, executor, maskers, placeholder, options, exclude, keep, count=True, each=each)
            docs = islice(read_documents(src, fmt, fields, **dict(reader_options or {})), limit)
            done = w.done if w is not None else 0
            counts: dict[str, int] = {}
            for out in map_units(stage, islice(docs, done, None), executor=executor, batch_size=batch_size,
                                 grouped=grouped, progress=progress, total=summary.records, initial=done,
                                 desc="mask" if output is not None else f"stats {Path(str(input)).name}"):
                for k, v in out.counts.items():
                    counts[k] = counts.get(k, 0) + v
                if w is not None:
                    recs = [order(masked_to_record(md, out_fields, drop)) for u in out.units for md in u]
                    if side is None:
                        w.write(recs)
                    else:
                        pairs = [split_mask_fields(r) for r in recs]
                        w.write([r for r, _ in pairs], [p for _, p in pairs])
            n_out = w.done if w is not None else summary.records
    if n_out != summary.records:  # cannot happen unless a reader or the engine is broken: never a short file
        raise VeilError(f"record count mismatch: read {summary.records}, wrote {n_out}")
    if output is not None:
        log.info("masked %d documents: %s -> %s", n_out, input, output)
    secs = time.perf_counter() - t0
    names = [k[len("masked:"):] for k in counts if k.startswith("masked:")]  # in masker order
    return {"records": n_out, "masked_now": n_out - done, "seconds": round(secs, 2),
            "documents": n_out - done, "words": counts.get("words", 0),
            "masked_share": counts.get("masked", 0) / max(1, counts.get("words", 0)),
            "masked_shares": _shares(counts, names)}


def fill_corpus(input: str | Path, output: str | Path, filler: Any, *, settings: Mapping[str, Any] | None = None,
                fields: Fields | None = None, input_format: str | None = None, output_format: str | None = None,
                chunk_size: int = 256, limit: int | None = None, overwrite: bool = False,
                progress: bool = True, substitutions: bool = True, executor: Any = None,
                allow_unmasked: bool = False, max_fallback_share: float | None = None) -> dict[str, Any]:
    """Fill the masked corpus ``input`` into ``output`` (+ ``OUTPUT.substitutions.jsonl``), streamed and resumable.

    ``filler`` is a filler or a zero-argument factory (called after the checks, so a bad input
    fails before a model loads; with the ray executor, called in every worker); ``settings``
    identify it (name, model, strategy, seed, ...): a resume or reuse needs the same settings and
    input. The output keeps the input's format (unless ``output`` / ``output_format`` names
    another) and field names. With a group field, a group's records are one document: one
    substitute per entity across them. Returns statistics.

    An input with no placeholder in any record is refused unless ``allow_unmasked``; a filler that
    cannot load fails before the first document; more than ``max_fallback_share`` of the placeholders
    filled with fallback values fails the run, unfinished (:mod:`veil.run.checks`).
    """
    from veil.io.output import ResumableWriter, check_output_path
    from veil.run.checks import DEFAULT_MAX_FALLBACK_SHARE, FallbackGuard, check_fillable, load_filler
    from veil.io.records import filled_to_record, read_masked, substitution_records, substitutions_path

    if chunk_size < 1:
        raise VeilError("the chunk size must be at least 1")
    fields = fields or recorded_fields(input) or Fields()
    grouped = fields.group is not None
    check_output_path(output, [input])
    fmt = _input_format(input, input_format)
    out_fmt = _output_format(output, output_format, fmt)
    local = executor is None or executor.name == "local"
    if not local and not callable(filler):
        raise VeilError("the ray executor builds the filler in every worker: give a picklable factory")
    with input_file(input) as src:
        summary = check_input(src, fmt, fields, limit, masked=True, grouped=grouped)
        check_fillable(input, summary.records, summary.with_markers, "placeholders" in summary.fields, allow_unmasked)
        run_settings = {**dict(settings or {}), "input": summary.fingerprint, "fields": vars(fields),
                        "limit": limit}
        side = substitutions_path(output) if substitutions and str(output) != "-" else None
        order = _field_order(summary.fields, ("placeholders", "style"))
        out_fields = fields if fields.id in summary.fields else Fields(fields.text, None, fields.person, fields.group)
        t0 = time.perf_counter()
        with ResumableWriter(output, run_settings, out_fmt, overwrite=overwrite, sidecar=side,
                             text_field=fields.text, describe={"fields": vars(fields)}) as w:
            if w.complete:
                return {"documents": summary.records, "filled_now": 0, "complete_already": True}
            stage = FillStage(filler if callable(filler) and not hasattr(filler, "fill") else (lambda: filler))
            if local:
                load_filler(stage.filler)  # a filler that cannot load fails here, not on every document
            guard = FallbackGuard(DEFAULT_MAX_FALLBACK_SHARE if max_fallback_share is None else max_fallback_share,
                                  w.state)
            earlier_s = float(w.state.get("seconds", 0.0))  # time the interrupted runs spent on the chunks kept
            done = w.done
            failures: list[FillFailure] = []
            n_subs = 0
            docs = islice(read_masked(src, fmt, fields), limit)
            for out in map_units(stage, islice(docs, done, None), executor=executor, batch_size=chunk_size,
                                 grouped=grouped, progress=progress, total=summary.records, initial=done,
                                 desc="fill"):
                filled = [d for u in out.units for d in u]
                failures += out.failures
                guard.add(filled, [x.doc_id for x in out.failures])
                subs = [r for d in filled for r in substitution_records(d)]
                n_subs += len(subs)
                # unrounded: a fast chunk is not 0 s
                w.write([order(filled_to_record(d, out_fields)) for d in filled], subs,
                        state={"seconds": earlier_s + time.perf_counter() - t0, **guard.state()})
                guard.check()
            guard.check(final=True)  # inside the writer: a failed run is left unfinished, never complete
    secs = time.perf_counter() - t0
    n_docs = summary.records - done
    if failures:
        log.warning("%d document(s) could not be filled by the model and got fallback values: %s", len(failures),
                    ", ".join(repr(x.doc_id) for x in failures[:10]) + (" ..." if len(failures) > 10 else ""))
    # seconds: this run; seconds_earlier: interrupted runs before it, up to their last complete chunk
    stats = {"documents": summary.records, "filled_now": n_docs, "substitutions_now": n_subs,
             "seconds": round(secs, 2), "seconds_earlier": round(earlier_s, 2),
             "docs_per_s": round(n_docs / secs, 2) if secs > 0 else None,
             "fallback_documents": [x.doc_id for x in failures]}
    if local:
        stats.update(getattr(stage.filler, "stats", {}))
    return stats


# --- in memory ----------------------------------------------------------------------------------
def mask_documents(docs: Iterable[Any], engine: Any, *, executor: Any = None, batch_size: int = 256,
                   grouped: bool = False, progress: bool = False, counts: dict[str, int] | None = None,
                   desc: str = "mask") -> Iterator[MaskedDocument]:
    """Masked documents in input order; ``engine``: a MaskingEngine or a picklable zero-argument factory."""
    stage = _mask_stage(engine, executor, None, DEFAULT_PLACEHOLDER, None, [], [], count=counts is not None)
    total = len(docs) if isinstance(docs, Sequence) else None
    for out in map_units(stage, docs, executor=executor, batch_size=batch_size, grouped=grouped,
                         progress=progress, total=total, desc=desc):
        if counts is not None:
            for k, v in out.counts.items():
                counts[k] = counts.get(k, 0) + v
        for u in out.units:
            yield from u
