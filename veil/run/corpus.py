"""Pipeline: mask and fill whole corpora; the loop behind `veil mask`, `veil fill`, the runner, the demo, the API.

Two layers:

- **batch functions**, pure and independent of how a corpus is cut into batches (every document
  draws from its own seeded RNG): :func:`mask_batch` / :func:`fill_batch` on ``Document`` /
  ``MaskedDocument`` lists (the Python API), :func:`mask_records` / :func:`fill_records` on record
  dicts (what a Ray ``map_batches`` worker gets);
- **file drivers** :func:`mask_corpus` / :func:`fill_corpus`: check the input and the output
  before any model loads, then stream the input batch by batch through one locked, resumable
  writer (:class:`veil.io.output.ResumableWriter`), with a progress bar.

Nothing here imports torch or spaCy at module level.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from veil.errors import InputError, VeilError
from veil.io.formats import RESERVED_FIELDS, Fields, detect_format, id_of, iter_batches, iter_records, text_of
from veil.types import Document, FilledDocument, MaskedDocument

log = logging.getLogger(__name__)

#: the maskers `veil mask`, `veil audit risk`, `veil audit identifiers` and `veil.mask` use by default:
#: the case-robust neural tagger (int8, onnxruntime) and the DLP patterns. It measures best on every
#: text form (written, lower-cased, speech-recognition: docs/detection_comparison.md) and masks
#: faster than Presidio's fastest configuration (bench/bench_mask.py); spaCy's entity_tagger adds
#: recall on capitalised text at twice the time and lower precision, so it is opt-in
DEFAULT_MASKERS: tuple[str, ...] = ("neural_tagger", "dlp")
#: typed, numbered placeholders ([PERSON_NAME_1]) give fills of the right type; the paper's [MASK] is "mask"
DEFAULT_PLACEHOLDER = "numbered"
DEFAULT_FILLER = "llm"
#: what an unfillable plain-word marker becomes (a typed one gets its type's Faker value)
FALLBACK_WORD = "something"


# --- building the components --------------------------------------------------------------------
def build_engine(maskers: Sequence[str] | None = None, placeholder: str = DEFAULT_PLACEHOLDER,
                 options: Mapping[str, Mapping[str, Any]] | None = None, exclude: Iterable[str] = (),
                 keep: Iterable[str] = ()) -> Any:
    """A :class:`~veil.mask.engine.MaskingEngine` from registry names; bad names / options are ``VeilError``."""
    from veil.mask.engine import MaskingEngine
    from veil.registry import maskers as registry

    names = list(maskers or DEFAULT_MASKERS)
    options = dict(options or {})
    unused = set(options) - set(names)
    if unused:
        raise VeilError(f"options given for maskers that are not run: {', '.join(sorted(unused))}")
    built = []
    for name in names:
        try:
            cls = registry.get(name)
        except KeyError as e:
            raise VeilError(str(e.args[0])) from None
        from veil.options import check_call_options

        check_call_options(cls, options.get(name, {}), f"masker {name}")  # --set dlp.min_score=abc: one line
        try:
            built.append(cls(**dict(options.get(name, {}))))
        except TypeError as e:  # an option the masker does not take
            raise VeilError(f"masker {name}: {e}") from None
    from veil.markers import STYLES

    if placeholder not in STYLES:
        raise VeilError(f"unknown placeholder style {placeholder!r}; choose from {', '.join(STYLES)}")
    return MaskingEngine(built, style=placeholder, exclude=exclude, keep=keep)


def build_filler(name: str = DEFAULT_FILLER, **options: Any) -> Any:
    """A filler from the registry by name; an unknown name or option is a ``VeilError``."""
    from veil.registry import fillers

    try:
        cls = fillers.get(name)
    except KeyError as e:
        raise VeilError(str(e.args[0])) from None
    from veil.options import check_call_options

    check_call_options(cls, options, f"filler {name}")
    try:
        return cls(**options)
    except TypeError as e:
        raise VeilError(f"filler {name}: {e}") from None
    except (ImportError, AttributeError) as e:
        raise VeilError(f"filler {name!r} is not available: {e}") from None


# --- batch functions ----------------------------------------------------------------------------
def mask_batch(docs: Sequence[Document], engine: Any,
               word_counts: dict[str, int] | None = None) -> list[MaskedDocument]:
    """Mask a batch; ``word_counts`` (if given) accumulates ``masked`` and ``words`` (the paper's share)."""
    from veil.mask.placeholders import render

    spans = engine.detect(docs)
    if word_counts is not None:
        from veil.mask.stats import masked_word_counts

        for d, s in zip(docs, spans):
            m, t = masked_word_counts(d.text, s)
            word_counts["masked"] = word_counts.get("masked", 0) + m
            word_counts["words"] = word_counts.get("words", 0) + t
    return [render(d, s, engine.style) for d, s in zip(docs, spans)]


@dataclass
class FillFailure:
    """A document the filler could not fill; it was filled with its types' fallbacks instead."""

    doc_id: str
    reason: str


def fill_batch(docs: Sequence[MaskedDocument], filler: Any,
               failures: list[FillFailure] | None = None) -> list[FilledDocument]:
    """Fill a batch; a document the filler fails on is filled with fallbacks and reported, never aborting.

    A failure of the whole batch is retried document by document, so one bad document costs only
    its own fill (every document draws from its own seeded RNG: the others fill identically).
    """
    try:
        return list(filler.fill(docs))
    except VeilError as e:
        if len(docs) == 1:
            if failures is not None:
                failures.append(FillFailure(docs[0].id, str(e)))
            log.warning("document %r: %s; filled with fallback values", docs[0].id, e)
            return [fallback_fill(docs[0], getattr(filler, "seed", 0))]
    return [d for doc in docs for d in fill_batch([doc], filler, failures)]


def fallback_fill(doc: MaskedDocument, seed: int = 0) -> FilledDocument:
    """Every marker of ``doc`` replaced by its type's Faker value (or ``FALLBACK_WORD``), same key same value."""
    from veil.fill import typed
    from veil.fill.base import doc_rng, document_slots
    from veil.markers import unescape
    from veil.types import Substitution

    try:
        slots = document_slots(doc)
    except VeilError:  # placeholders that do not match the text: its markers are what must go
        slots = document_slots(replace(doc, placeholders=()))
    rng = doc_rng(seed, doc.id)
    values: dict[str, str] = {}
    parts: list[str] = []
    subs: list[Substitution] = []
    pos = out_len = 0
    for s in slots:
        if s.key not in values:
            values[s.key] = typed.fake_value(s.label, rng, s.shape) if typed.has_fallback(s.label) else FALLBACK_WORD
        seg = unescape(doc.text[pos:s.start])
        parts += [seg, values[s.key]]
        out_len += len(seg)
        value = values[s.key]
        subs.append(Substitution(doc.id, s.marker, s.key, s.label, value, out_len, out_len + len(value)))
        out_len += len(value)
        pos = s.end
    parts.append(unescape(doc.text[pos:]))
    return FilledDocument(doc.id, "".join(parts), tuple(subs), doc.person, doc.group, dict(doc.meta))


def mask_records(records: Sequence[Mapping[str, Any]], engine: Any, fields: Fields | None = None,
                 drop: Iterable[str] = (), start: int = 1) -> list[dict[str, Any]]:
    """Masked output records of input records (``start``: the record number of the first, for missing ids)."""
    from veil.io.formats import record_to_document
    from veil.io.records import masked_to_record

    fields = fields or Fields()
    docs = [record_to_document(dict(r), fields, "<records>", start + i, start + i) for i, r in enumerate(records)]
    return [masked_to_record(md, fields, frozenset(drop)) for md in mask_batch(docs, engine)]


def fill_records(records: Sequence[Mapping[str, Any]], filler: Any, fields: Fields | None = None,
                 start: int = 1, failures: list[FillFailure] | None = None
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(filled records, substitution records) of masked records."""
    from veil.io.records import filled_to_record, record_to_masked, substitution_records

    fields = fields or Fields()
    docs = [record_to_masked(dict(r), fields, "<records>", start + i, start + i) for i, r in enumerate(records)]
    filled = fill_batch(docs, filler, failures)
    return [filled_to_record(d, fields) for d in filled], [r for d in filled for r in substitution_records(d)]


# --- checks before any model loads ---------------------------------------------------------------
@dataclass
class InputSummary:
    path: str
    format: str
    records: int
    fingerprint: dict[str, Any]
    fields: list[str] = field(default_factory=list)
    with_markers: int = 0  # records whose text holds placeholder-like text; masked input: records with placeholders


def check_input(path: str | Path, fmt: str, fields: Fields, limit: int | None = None,
                reserved: Iterable[str] = (), drop: Iterable[str] = (), masked: bool = False) -> InputSummary:
    """Read the whole input once, cheaply, and refuse it (one located line) before any model loads.

    Checks: readable, UTF-8, valid records, a string text field in every record (``null`` is an
    error, never silently ""), unique ids (``1`` and ``"1"`` are the same id), no input field that
    the output would overwrite (``reserved``), and for masked input valid placeholders.
    """
    from veil.io.output import input_fingerprint

    reserved = set(reserved) - set(drop) - {fields.text, fields.id}
    if fmt == "switchboard":  # documents are built by the reader (its ids are unique by construction)
        from veil.io.formats import read_documents

        n = sum(1 for _ in islice(read_documents(path, fmt, fields), limit))
        return InputSummary(str(path), fmt, n, input_fingerprint(path))
    from veil.io.formats import check_columns

    check_columns(path, fmt, drop)  # Parquet dates, binary, decimals: refused before the work
    # 8-byte digests, not the ids: ~60 bytes a record while checking, freed before any model loads
    seen: set[int] = set()
    names: dict[str, None] = {}
    from veil.markers import MARKER_RE

    n = with_markers = 0
    for number, (line, rec) in enumerate(islice(iter_records(path, fmt), limit), 1):
        if masked:
            from veil.io.records import record_to_masked

            with_markers += bool(record_to_masked(rec, fields, path, line, number).placeholders)
        else:
            text = text_of(rec, fields, path, line)
            with_markers += "[" in text and MARKER_RE.search(text) is not None
        for k in rec:
            if k not in names:
                names[k] = None
                if k in reserved:
                    already = all(r in rec for r in RESERVED_FIELDS)
                    raise InputError(str(path), line, (
                        "is already masked (it has veil's fields placeholders and style); mask the original "
                        "corpus, or pass --drop-field placeholders --drop-field style to mask this text again "
                        "(its markers then stay user text, restored verbatim by veil fill)") if already else (
                        f"input field {k!r} would be overwritten by veil's output field of that name; rename it "
                        f"in the input or leave it out with --drop-field {k}"))
        doc_id = id_of(rec, fields, number)
        digest = int.from_bytes(hashlib.blake2b(doc_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")
        if digest in seen:
            first = next((i for i, (_, r) in enumerate(iter_records(path, fmt), 1)
                          if i < number and id_of(r, fields, i) == doc_id), None)
            if first is not None:  # (else two ids that share a digest: not a duplicate)
                raise InputError(str(path), line, f"id {doc_id!r} is the id of record {first} too (ids are "
                                 "compared as text: 1 and \"1\" are the same); make ids unique, or pass "
                                 "--id-field '' to number the records")
        seen.add(digest)
        n = number
    if n == 0:
        raise InputError(str(path), None, "no records to read")
    return InputSummary(str(path), fmt, n, input_fingerprint(path), list(names), with_markers)


@contextmanager
def _input_file(path: str | Path) -> Iterator[Path]:
    """The input as a file; ``-`` (standard input) is copied first, so it can be checked before the work
    and read again for it: into a nameless file that dies with the process, however it ends
    (:mod:`veil.io.scratch`; a private folder removed on exit where the system has no ``/proc/self/fd``)."""
    if str(path) != "-":
        p = Path(path)
        if not p.exists():
            raise InputError(str(p), None, "no such file")
        yield p
        return
    from veil.io.scratch import anonymous_copy, private_dir

    anonymous = anonymous_copy(sys.stdin.buffer)
    tmpdir = None if anonymous else private_dir("veil-stdin-")
    tmp = anonymous[1] if anonymous else Path(tmpdir, "stdin")
    try:
        if tmpdir is not None:
            with open(tmp, "wb") as f:
                shutil.copyfileobj(sys.stdin.buffer, f)
        yield tmp
    except InputError as e:  # name standard input, not the copy's path
        if e.path != str(tmp):
            raise
        raise InputError("<stdin>", e.line, e.message) from None
    finally:
        if anonymous:
            anonymous[0].close()
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)


def _input_format(path: str | Path, fmt: str | None) -> str:
    if str(path) == "-" and not fmt:
        return "jsonl"
    return detect_format(path, fmt)


def _output_format(path: str | Path, fmt: str | None, default: str) -> str:
    if fmt:
        out = detect_format(path, fmt)
    elif str(path) == "-":
        out = default
    else:
        out = detect_format(path)
    if out == "switchboard":
        raise VeilError("Switchboard is an input format; write jsonl, txt, csv or parquet")
    return out


def _progress(total: int, initial: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    # disable=None: no bar when stderr is not a terminal (a log file of an unattended run stays readable)
    return tqdm(total=total, initial=initial, desc=desc, unit="doc", disable=None if enabled else True,
                file=sys.stderr, dynamic_ncols=True)


def _component(factory: Any) -> Any:
    """A component given ready-made, or built by a zero-argument factory after the checks."""
    made = callable(factory) and not hasattr(factory, "fill") and not hasattr(factory, "detect")
    return factory() if made else factory


# --- file drivers -------------------------------------------------------------------------------
def mask_corpus(input: str | Path, output: str | Path, maskers: Sequence[str] | None = None, *,
                placeholder: str = DEFAULT_PLACEHOLDER, options: Mapping[str, Mapping[str, Any]] | None = None,
                exclude: Iterable[str] = (), keep: Iterable[str] = (),
                engine: Any = None, settings: Mapping[str, Any] | None = None,
                fields: Fields | None = None, input_format: str | None = None, output_format: str | None = None,
                reader_options: Mapping[str, Any] | None = None, drop: Iterable[str] = (),
                batch_size: int = 256, limit: int | None = None, overwrite: bool = False,
                progress: bool = True) -> dict[str, Any]:
    """Mask the corpus file ``input`` into ``output`` (``-``: standard input / output); returns statistics.

    The engine is built from ``maskers`` / ``placeholder`` / ``options`` / ``exclude`` / ``keep``
    after the input and output are checked, or given as ``engine`` (an object, or a zero-argument
    factory) together with ``settings`` that identify it for resume and reuse decisions.
    """
    from veil.io.formats import read_documents
    from veil.io.output import ResumableWriter, check_output_path
    from veil.io.records import masked_to_record

    if batch_size < 1:
        raise VeilError("the batch size must be at least 1")
    fields = fields or Fields()
    drop = frozenset(drop)
    exclude, keep = list(exclude), list(keep)
    check_output_path(output, [input])
    fmt = _input_format(input, input_format)
    out_fmt = _output_format(output, output_format, "jsonl")
    with _input_file(input) as src:
        summary = check_input(src, fmt, fields, limit, RESERVED_FIELDS, drop)
        if summary.with_markers:  # e.g. a masked text file masked again: say so, never silently
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
        t0 = time.perf_counter()
        with ResumableWriter(output, run_settings, out_fmt, overwrite=overwrite, text_field=fields.text) as w:
            if w.complete:
                return {"records": summary.records, "masked_now": 0, "complete_already": True}
            eng = (build_engine(maskers, placeholder, options, exclude, keep) if engine is None
                   else _component(engine))
            docs = islice(read_documents(src, fmt, fields, **dict(reader_options or {})), limit)
            done = w.done
            counts: dict[str, int] = {}
            with _progress(summary.records, done, "mask", progress) as bar:
                for batch in iter_batches(islice(docs, done, None), batch_size):
                    w.write([masked_to_record(md, fields, drop) for md in mask_batch(batch, eng, counts)])
                    bar.update(len(batch))
            n_out = w.done
    if n_out != summary.records:  # cannot happen unless a reader or the engine is broken: never a short file
        raise VeilError(f"record count mismatch: read {summary.records}, wrote {n_out}")
    log.info("masked %d documents: %s -> %s", n_out, input, output)
    secs = time.perf_counter() - t0
    return {"records": n_out, "masked_now": n_out - done, "seconds": round(secs, 2),
            "masked_share": counts.get("masked", 0) / max(1, counts.get("words", 0))}


def fill_corpus(input: str | Path, output: str | Path, filler: Any, *, settings: Mapping[str, Any] | None = None,
                fields: Fields | None = None, input_format: str | None = None, output_format: str | None = None,
                chunk_size: int = 256, limit: int | None = None, overwrite: bool = False,
                progress: bool = True, substitutions: bool = True, allow_unmasked: bool = False,
                max_fallback_share: float | None = None) -> dict[str, Any]:
    """Fill the masked corpus ``input`` into ``output`` (+ ``OUTPUT.substitutions.jsonl``), streamed and resumable.

    ``filler`` is a filler or a zero-argument factory (called after the checks, so a bad input
    fails before a model loads); ``settings`` identify it (name, model, strategy, seed, ...): a
    resume or reuse needs the same settings and input. The output keeps the input's format (unless
    ``output`` / ``output_format`` names another) and field names. Returns statistics.

    An input with no placeholder in any record is refused unless ``allow_unmasked``; a filler that
    cannot load fails before the first document; more than ``max_fallback_share`` of the placeholders
    filled with fallback values fails the run, unfinished (:mod:`veil.run.checks`).
    """
    from veil.run.checks import DEFAULT_MAX_FALLBACK_SHARE, FallbackGuard, check_fillable, load_filler

    from veil.io.output import ResumableWriter, check_output_path
    from veil.io.records import filled_to_record, read_masked, substitution_records, substitutions_path

    if chunk_size < 1:
        raise VeilError("the chunk size must be at least 1")
    fields = fields or Fields()
    check_output_path(output, [input])
    fmt = _input_format(input, input_format)
    out_fmt = _output_format(output, output_format, fmt)
    with _input_file(input) as src:
        summary = check_input(src, fmt, fields, limit, masked=True)
        check_fillable(input, summary.records, summary.with_markers, "placeholders" in summary.fields, allow_unmasked)
        run_settings = {**dict(settings or {}), "input": summary.fingerprint, "fields": vars(fields),
                        "limit": limit}
        side = substitutions_path(output) if substitutions and str(output) != "-" else None
        t0 = time.perf_counter()
        with ResumableWriter(output, run_settings, out_fmt, overwrite=overwrite, sidecar=side,
                             text_field=fields.text) as w:
            if w.complete:
                return {"documents": summary.records, "filled_now": 0, "complete_already": True}
            f = load_filler(_component(filler))  # a filler that cannot load fails here, not on every document
            guard = FallbackGuard(DEFAULT_MAX_FALLBACK_SHARE if max_fallback_share is None else max_fallback_share,
                                  w.state)
            earlier_s = float(w.state.get("seconds", 0.0))  # time the interrupted runs spent on the chunks kept
            done = w.done
            failures: list[FillFailure] = []
            n_subs = 0
            docs = islice(read_masked(src, fmt, fields), limit)
            with _progress(summary.records, done, "fill", progress) as bar:
                for batch in iter_batches(islice(docs, done, None), chunk_size):
                    n_failed = len(failures)
                    filled = fill_batch(batch, f, failures)
                    guard.add(batch, [x.doc_id for x in failures[n_failed:]])
                    subs = [r for d in filled for r in substitution_records(d)]
                    n_subs += len(subs)
                    # unrounded: a fast chunk is not 0 s
                    w.write([filled_to_record(d, fields) for d in filled], subs,
                            state={"seconds": earlier_s + time.perf_counter() - t0, **guard.state()})
                    bar.update(len(batch))
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
    stats.update(getattr(f, "stats", {}))
    return stats


def fill_documents(filler: Any, docs: Sequence[MaskedDocument], chunk_size: int = 256,
                   progress: bool = False) -> list[FilledDocument]:
    """Fill in memory, chunk by chunk, with a progress bar (``veil finetune`` rounds)."""
    out: list[FilledDocument] = []
    with _progress(len(docs), 0, "fill", progress) as bar:
        for batch in iter_batches(docs, chunk_size):
            out.extend(fill_batch(batch, filler))
            bar.update(len(batch))
    return out

