"""Python API over the whole pipeline: ``veil.mask``, ``veil.fill``, ``veil.anonymize``.

Plain strings in, plain strings (or documents with their spans) out:

- a single string gives a single result, a list or tuple a list, any other iterable (a generator,
  a file's lines) a generator that reads its input in batches, so a corpus streams;
- each text of a call is one document, identified by its position (``"0"``, ``"1"``, ...), so the
  same entity gets the same substitute within a text and an independent one in every other text;
- the privacy boundary holds here too: ``fill`` sees only masked text.

Engines are built once per setting and reused by later calls (loading spaCy takes seconds).
"""

from __future__ import annotations

import json
from functools import lru_cache
from itertools import count, islice
from typing import Any, Iterable, Iterator, Mapping, Sequence, Union

from veil.errors import VeilError
from veil.types import Document, FilledDocument, MaskedDocument


TextInput = Union[str, Document]
MaskedInput = Union[str, MaskedDocument]


def _shape(obj: Any) -> str:
    """``one`` (a single item), ``list`` (a list or tuple) or ``stream`` (any other iterable).

    A dict or bytes is refused here, at the call: iterated, a dict gives its keys and bytes give
    numbers, so either would be anonymised or fail long after the call that was wrong."""
    if isinstance(obj, (str, Document, MaskedDocument)):
        return "one"
    if isinstance(obj, Mapping):
        raise TypeError(f"expected a string, a list of strings or an iterable of strings, got a "
                        f"{type(obj).__name__} (its keys would be taken for texts); pass its text, e.g. "
                        "rec['text'], or a list of them")
    if isinstance(obj, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected a string, got {type(obj).__name__}; decode it first, e.g. data.decode('utf-8')")
    if isinstance(obj, (list, tuple)):
        return "list"
    if isinstance(obj, Iterable):
        return "stream"
    raise TypeError(f"expected a string, a list of strings or an iterable of strings, got {type(obj).__name__}")


def _batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def _apply(items: Any, make_batch_fn: Any, batch_size: int, engine: "_Engine") -> Any:
    """Run a batch function (a list of (index, item) -> a list of results) over one item, a list or a stream.

    ``make_batch_fn()`` builds it: here for the local engine, once in every Ray actor for ``ray``."""
    kind = _shape(items)
    numbered: Iterable[tuple[int, Any]] = [(0, items)] if kind == "one" else zip(count(), items)
    if engine.name == "ray":
        from veil.run.ray_executor import map_batches_ordered

        results = map_batches_ordered(make_batch_fn, numbered, workers=engine.workers, address=engine.address,
                                      device=engine.device, batch_size=batch_size)
    else:
        batch_fn = make_batch_fn()
        results = (r for batch in _batched(numbered, batch_size) for r in batch_fn(batch))
    if kind == "one":
        return next(iter(results))
    return list(results) if kind == "list" else results


class _Engine:
    """Where the batches run: ``local`` (this process) or ``ray`` (actors on a Ray cluster, models loaded once each)."""

    def __init__(self, name: str, workers: int | None, address: str | None, device: str | None = None) -> None:
        from veil.run import ENGINES

        if name not in ENGINES:
            raise VeilError(f"unknown engine {name!r}; choose from {', '.join(ENGINES)}")
        if name == "local" and (workers is not None or address is not None):
            raise VeilError("workers and address apply to engine='ray' only")
        if workers is not None and workers < 1:
            raise VeilError("workers must be at least 1")
        self.name, self.workers, self.address, self.device = name, workers or 1, address, device

    def check(self, what: str, given_objects: bool, data: Any) -> None:
        if self.name != "ray":
            return
        if given_objects:
            raise VeilError(f"engine='ray' builds the {what} in every worker: give {what} by name")
        if _is_hf_dataset(data):
            raise VeilError("engine='ray' takes strings, lists or iterables; for a datasets.Dataset use "
                            "engine='local' (a batched Dataset.map, which takes num_proc)")


class _MaskBatch:
    """The mask batch function; picklable, so a Ray actor builds its engine (loads spaCy) itself."""

    def __init__(self, maskers: Any, placeholder: str, options: Any, exclude: tuple[str, ...],
                 keep: tuple[str, ...], engine: Any = None) -> None:
        self.settings = (maskers, placeholder, options, exclude, keep)
        self.engine = engine  # built once, where the batches run

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "engine": None}

    def __call__(self, items: list[tuple[int, TextInput]]) -> list[MaskedDocument]:
        from veil.run.corpus import mask_batch

        docs = []
        for i, t in items:
            if isinstance(t, Document):
                docs.append(t)
            elif isinstance(t, str):
                docs.append(Document(str(i), t))
            else:
                raise TypeError(f"text {i} is a {type(t).__name__}, not a string")
        if self.engine is None:
            self.engine = masking_engine(*self.settings)
        return mask_batch(docs, self.engine)


class _FillBatch:
    """The fill batch function; picklable like :class:`_MaskBatch` (a Ray actor loads the filler's model)."""

    def __init__(self, filler: Any, seed: int, options: dict[str, Any], details: bool) -> None:
        self.filler, self.seed, self.options, self.details = filler, seed, options, details

    def __call__(self, items: list[tuple[int, MaskedInput]]) -> list[Any]:
        from veil.markers import infer_style
        from veil.run.corpus import fill_batch

        engine = self.filler if not isinstance(self.filler, str) else \
            _filler(self.filler, self.seed, json.dumps(self.options, sort_keys=True, default=repr))
        docs = []
        for i, m in items:
            if isinstance(m, MaskedDocument):
                docs.append(m)
            elif isinstance(m, str):
                docs.append(MaskedDocument(str(i), m, (), infer_style(m)))
            else:
                raise TypeError(f"item {i} is a {type(m).__name__}: fill takes masked text or MaskedDocument "
                                "(never original text)")
        # a document the filler cannot fill gets its types' fallback values (logged), never a marker left
        out: list[FilledDocument] = fill_batch(docs, engine)
        return out if self.details else [d.text for d in out]


@lru_cache(maxsize=8)
def _engine(maskers: tuple[str, ...], placeholder: str, options: str, exclude: tuple[str, ...],
            keep: tuple[str, ...]) -> Any:
    from veil.run.corpus import build_engine

    return build_engine(maskers, placeholder, json.loads(options), exclude, keep)


def masking_engine(maskers: Sequence[Any] | None = None, placeholder: str = "numbered",
                   options: dict[str, dict] | None = None, exclude: Iterable[str] = (),
                   keep: Iterable[str] = ()) -> Any:
    """The ``MaskingEngine`` for these settings: names are built once and reused, masker objects used as given."""
    from veil.markers import STYLES
    from veil.mask.engine import MaskingEngine
    from veil.run.corpus import DEFAULT_MASKERS

    if placeholder not in STYLES:
        raise VeilError(f"unknown placeholder style {placeholder!r}; choose from {', '.join(STYLES)}")
    if isinstance(maskers, str):
        raise VeilError(f"maskers must be a list, e.g. maskers=[{maskers!r}]")
    names = tuple(maskers) if maskers is not None else DEFAULT_MASKERS
    if not names:
        raise VeilError("maskers must be a non-empty list of masker names or Masker objects")
    if all(isinstance(n, str) for n in names):
        return _engine(names, placeholder, json.dumps(options or {}, sort_keys=True), tuple(exclude), tuple(keep))
    if options:
        raise VeilError("options apply to maskers given by name; configure Masker objects directly")
    return MaskingEngine(list(names), style=placeholder, exclude=exclude, keep=keep)


def mask(texts: Any, maskers: Sequence[Any] | None = None, placeholder: str = "numbered", *,
         options: dict[str, dict] | None = None, exclude: Iterable[str] = (), keep: Iterable[str] = (),
         batch_size: int = 256, engine: str = "local", workers: int | None = None,
         address: str | None = None) -> Any:
    """Detect personal data and replace it by placeholders.

    ``texts``: a string (or ``Document``), a list of them, or any iterable (streamed in batches).
    ``maskers``: registry names (``veil ls``) or ``Masker`` objects; default neural_tagger + dlp.
    ``placeholder``: ``numbered`` (``[PERSON_NAME_1]``, the same number for the same entity within a
    text), ``typed`` (``[PERSON_NAME]``) or ``mask`` (``[MASK]`` per word, the paper's style).
    ``options``: per-masker options, ``{"dlp": {"min_score": 0.6}}``.
    ``engine``: ``local`` (this process) or ``ray``: batches run on ``workers`` Ray actors that load the
    models once each, on the cluster at ``address`` (default: a local one); same results, same order.

    Returns ``MaskedDocument`` objects: ``.text`` is the masked text, ``.placeholders`` its spans
    (start, end, label, key, technique, shape), in the same arrangement as the input.
    """
    from functools import partial

    _shape(texts)  # a dict or bytes fails here, before any model loads
    runner = _Engine(engine, workers, address)
    names = tuple(maskers) if maskers is not None and not isinstance(maskers, str) else maskers
    runner.check("maskers", names is not None and not all(isinstance(n, str) for n in names), texts)
    built = masking_engine(maskers, placeholder, options, exclude, keep)  # settings checked here, before any work
    if _is_hf_dataset(texts):  # a datasets.Dataset: one batched map, masked records as columns
        from veil.run.hf_datasets import mask_dataset

        return mask_dataset(texts, built, batch_size=batch_size)
    if runner.name == "ray":
        make = partial(_MaskBatch, names, placeholder, options, tuple(exclude), tuple(keep))
    else:
        batch = _MaskBatch(names, placeholder, options, tuple(exclude), tuple(keep), built)
        make = lambda: batch  # noqa: E731
    return _apply(texts, make, batch_size, runner)


def _is_hf_dataset(obj: Any) -> bool:
    return type(obj).__module__.startswith("datasets.") and hasattr(obj, "map") and hasattr(obj, "column_names")


@lru_cache(maxsize=8)
def _filler(name: str, seed: int, options: str) -> Any:
    from veil.run.corpus import build_filler

    return build_filler(name, seed=seed, **json.loads(options))


def fill(masked: Any, filler: Any = "faker", *, seed: int = 0, details: bool = False, batch_size: int = 256,
         engine: str = "local", workers: int | None = None, address: str | None = None, **options: Any) -> Any:
    """Replace every placeholder by a substitute.

    ``masked``: what :func:`mask` returns, or masked strings (``"Call [PERSON_NAME_1] at
    [PHONE_NUMBER_1]"``; their placeholders are read from the markers), one, a list or a stream.
    ``filler``: a registry name (``faker``: typed, shape-keeping values without a language model;
    ``llm``, ``mlm``, ``llm-instruct``: a model proposes words from the context) or a ``Filler``;
    further keyword options go to the filler (``strategy="topk"``, ``model=...``, ``device="cuda"``).
    Each text draws from its own random generator seeded by ``(seed, position)``, so ``engine="ray"``
    (``workers`` actors, each loading the model once; see :func:`mask`) gives the same texts.

    Returns the filled strings, or ``FilledDocument`` objects (text and substitutions) with ``details``.
    """
    from functools import partial

    from veil.fill.base import Filler

    _shape(masked)  # a dict or bytes fails here, before any model loads
    runner = _Engine(engine, workers, address, options.get("device"))
    if isinstance(filler, Filler):
        if options:
            raise VeilError("options apply to fillers given by name; configure the Filler object directly")
    elif not isinstance(filler, str):
        raise TypeError(f"filler must be a registry name or a Filler, got {type(filler).__name__}")
    runner.check("filler", isinstance(filler, Filler), masked)
    if _is_hf_dataset(masked):  # a datasets.Dataset of masked records: filled records as columns
        from veil.run.hf_datasets import fill_dataset

        built = filler if isinstance(filler, Filler) else \
            _filler(filler, seed, json.dumps(options, sort_keys=True, default=repr))
        return fill_dataset(masked, built, batch_size=batch_size)
    if runner.name == "local" and isinstance(filler, str):
        _filler(filler, seed, json.dumps(options, sort_keys=True, default=repr))  # a bad name or option fails now
    if runner.name == "ray":
        make = partial(_FillBatch, filler, seed, options, details)
    else:
        batch = _FillBatch(filler, seed, options, details)
        make = lambda: batch  # noqa: E731
    return _apply(masked, make, batch_size, runner)


def anonymize(texts: Any, maskers: Sequence[Any] | None = None, filler: Any = "faker", *, seed: int = 0,
              batch_size: int = 256, engine: str = "local", workers: int | None = None, address: str | None = None,
              **fill_options: Any) -> Any:
    """Mask and fill in one call: realistic substitutes of the same type and format, the same within a
    text for the same entity, independent across texts. A string gives a string, a list a list, any
    other iterable a stream; no placeholder is left in the output. ``engine``: see :func:`mask`."""
    _shape(texts)  # a dict or bytes fails here, before any model loads
    if engine == "ray":  # both stages in one actor per worker: two actor pools could not share the CPUs
        from functools import partial

        runner = _Engine(engine, workers, address, fill_options.get("device"))
        names = tuple(maskers) if maskers is not None else None
        runner.check("maskers", names is not None and not all(isinstance(n, str) for n in names), texts)
        runner.check("filler", not isinstance(filler, str), texts)
        masking_engine(maskers, "numbered")  # bad names fail here, before any work
        make = partial(_AnonymizeBatch, _MaskBatch(names, "numbered", None, (), ()),
                       _FillBatch(filler, seed, fill_options, False))
        return _apply(texts, make, batch_size, runner)
    masked = mask(texts, maskers, "numbered", batch_size=batch_size, engine=engine, workers=workers, address=address)
    return fill(masked, filler, seed=seed, batch_size=batch_size, **fill_options)


class _AnonymizeBatch:
    """Mask then fill one batch (``anonymize(engine="ray")``); the filler sees only the masked documents."""

    def __init__(self, mask_batch: _MaskBatch, fill_batch: _FillBatch) -> None:
        self.mask_batch, self.fill_batch = mask_batch, fill_batch

    def __call__(self, items: list[tuple[int, TextInput]]) -> list[str]:
        masked = self.mask_batch(items)
        return self.fill_batch([(i, m) for (i, _), m in zip(items, masked)])
