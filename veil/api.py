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
from typing import Any, Iterable, Iterator, Sequence, Union

from veil.errors import VeilError
from veil.types import Document, FilledDocument, MaskedDocument


TextInput = Union[str, Document]
MaskedInput = Union[str, MaskedDocument]


def _shape(obj: Any) -> str:
    """``one`` (a single item), ``list`` (a list or tuple) or ``stream`` (any other iterable)."""
    if isinstance(obj, (str, Document, MaskedDocument)):
        return "one"
    if isinstance(obj, (list, tuple)):
        return "list"
    if isinstance(obj, Iterable):
        return "stream"
    raise TypeError(f"expected a string, a list of strings or an iterable of strings, got {type(obj).__name__}")


def _batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def _apply(items: Any, batch_fn: Any, batch_size: int) -> Any:
    """Run ``batch_fn`` (a list of (index, item) -> a list of results) over one item, a list or a stream."""
    kind = _shape(items)
    if kind == "one":
        return batch_fn([(0, items)])[0]
    numbered = zip(count(), items)
    if kind == "list":
        return [r for batch in _batched(numbered, batch_size) for r in batch_fn(batch)]
    return (r for batch in _batched(numbered, batch_size) for r in batch_fn(batch))


@lru_cache(maxsize=8)
def _engine(maskers: tuple[str, ...], placeholder: str, options: str, exclude: tuple[str, ...],
            keep: tuple[str, ...]) -> Any:
    from veil.pipeline import build_engine

    return build_engine(maskers, placeholder, json.loads(options), exclude, keep)


def masking_engine(maskers: Sequence[Any] | None = None, placeholder: str = "numbered",
                   options: dict[str, dict] | None = None, exclude: Iterable[str] = (),
                   keep: Iterable[str] = ()) -> Any:
    """The ``MaskingEngine`` for these settings: names are built once and reused, masker objects used as given."""
    from veil.markers import STYLES
    from veil.mask.engine import MaskingEngine
    from veil.pipeline import DEFAULT_MASKERS

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
         batch_size: int = 256) -> Any:
    """Detect personal data and replace it by placeholders.

    ``texts``: a string (or ``Document``), a list of them, or any iterable (streamed in batches).
    ``maskers``: registry names (``veil ls``) or ``Masker`` objects; default entity_tagger + dlp.
    ``placeholder``: ``numbered`` (``[PERSON_NAME_1]``, the same number for the same entity within a
    text), ``typed`` (``[PERSON_NAME]``) or ``mask`` (``[MASK]`` per word, the paper's style).
    ``options``: per-masker options, ``{"dlp": {"min_score": 0.6}}``.

    Returns ``MaskedDocument`` objects: ``.text`` is the masked text, ``.placeholders`` its spans
    (start, end, label, key, technique, shape), in the same arrangement as the input.
    """
    from veil.pipeline import mask_batch

    engine = masking_engine(maskers, placeholder, options, exclude, keep)
    if _is_hf_dataset(texts):  # a datasets.Dataset: one batched map, masked records as columns
        from veil.engine.hf import mask_dataset

        return mask_dataset(texts, engine, batch_size=batch_size)

    def batch(items: list[tuple[int, TextInput]]) -> list[MaskedDocument]:
        docs = []
        for i, t in items:
            if isinstance(t, Document):
                docs.append(t)
            elif isinstance(t, str):
                docs.append(Document(str(i), t))
            else:
                raise TypeError(f"text {i} is a {type(t).__name__}, not a string")
        return mask_batch(docs, engine)

    return _apply(texts, batch, batch_size)


def _is_hf_dataset(obj: Any) -> bool:
    return type(obj).__module__.startswith("datasets.") and hasattr(obj, "map") and hasattr(obj, "column_names")


@lru_cache(maxsize=8)
def _filler(name: str, seed: int, options: str) -> Any:
    from veil.pipeline import build_filler

    return build_filler(name, seed=seed, **json.loads(options))


def fill(masked: Any, filler: Any = "faker", *, seed: int = 0, details: bool = False, batch_size: int = 256,
         **options: Any) -> Any:
    """Replace every placeholder by a substitute.

    ``masked``: what :func:`mask` returns, or masked strings (``"Call [PERSON_NAME_1] at
    [PHONE_NUMBER_1]"``; their placeholders are read from the markers), one, a list or a stream.
    ``filler``: a registry name (``faker``: typed, shape-keeping values without a language model;
    ``llm``, ``mlm``, ``llm-instruct``: a model proposes words from the context) or a ``Filler``;
    further keyword options go to the filler (``strategy="topk"``, ``model=...``).
    Each text draws from its own random generator seeded by ``(seed, position)``.

    Returns the filled strings, or ``FilledDocument`` objects (text and substitutions) with ``details``.
    """
    from veil.fill.base import Filler
    from veil.markers import infer_style
    from veil.pipeline import fill_batch

    if isinstance(filler, Filler):
        if options:
            raise VeilError("options apply to fillers given by name; configure the Filler object directly")
        engine = filler
    elif isinstance(filler, str):
        engine = _filler(filler, seed, json.dumps(options, sort_keys=True, default=repr))
    else:
        raise TypeError(f"filler must be a registry name or a Filler, got {type(filler).__name__}")

    if _is_hf_dataset(masked):  # a datasets.Dataset of masked records: filled records as columns
        from veil.engine.hf import fill_dataset

        return fill_dataset(masked, engine, batch_size=batch_size)

    def batch(items: list[tuple[int, MaskedInput]]) -> list[Any]:
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
        return out if details else [d.text for d in out]

    return _apply(masked, batch, batch_size)


def anonymize(texts: Any, maskers: Sequence[Any] | None = None, filler: Any = "faker", *, seed: int = 0,
              batch_size: int = 256, **fill_options: Any) -> Any:
    """Mask and fill in one call: realistic substitutes of the same type and format, the same within a
    text for the same entity, independent across texts. A string gives a string, a list a list, any
    other iterable a stream; no placeholder is left in the output."""
    masked = mask(texts, maskers, "numbered", batch_size=batch_size)
    return fill(masked, filler, seed=seed, batch_size=batch_size, **fill_options)
