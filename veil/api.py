"""Python API over the whole pipeline: ``veil.mask``, ``veil.fill``, ``veil.anonymize``.

Plain strings in, plain strings (or documents with their spans) out, through the one corpus loop
(:func:`veil.run.corpus.map_units`):

- a single string gives a single result, a list or tuple a list, any other iterable (a generator,
  a file's lines) a generator that reads its input in batches, so a corpus streams;
- each text of a call is one document, identified by its position (``"0"``, ``"1"``, ...), so the
  same entity gets the same substitute within a text and an independent one in every other text;
- a list of lists is a list of *groups*: the texts of one inner list (a call's utterances) are one
  document for numbering and substitutes, and the result has the same nesting (ids ``"0.0"``,
  ``"0.1"``, ...);
- the privacy boundary holds here too: ``fill`` sees only masked text.

Draws: every document draws from its own generator seeded by ``(seed, document id)`` and never by
an original value (a substitute says nothing of the value it replaced). ``seed=None`` (the default)
takes a fresh random seed for each call, so two calls never share a draw by accident; pass
``seed=`` for reproducible results.

Engines and fillers are built once per setting and reused by later calls (loading a model takes seconds).
"""

from __future__ import annotations

import copy
import json
import secrets
from functools import lru_cache, partial
from itertools import count
from typing import Any, Iterable, Iterator, Sequence, Union

from veil.errors import VeilError
from veil.markers import find_markers
from veil.types import Document, MaskedDocument

TextInput = Union[str, Document]
MaskedInput = Union[str, MaskedDocument]


def _shape(obj: Any) -> str:
    """``one`` (a single item), ``list`` (a list or tuple), ``groups`` (a list of lists) or ``stream``."""
    if isinstance(obj, (str, Document, MaskedDocument)):
        return "one"
    if isinstance(obj, (bytes, bytearray, memoryview)):
        raise TypeError("expected text, got bytes: decode it first (e.g. data.decode('utf-8'))")
    if isinstance(obj, dict):
        raise TypeError("expected a string, a list of strings or an iterable of strings, got a dict; pass its "
                        "text (e.g. record['text']), or use veil mask / veil fill on a JSONL file for records")
    if isinstance(obj, (list, tuple)):
        if obj and all(isinstance(x, (list, tuple)) for x in obj):
            return "groups"
        return "list"
    if isinstance(obj, Iterable):
        return "stream"
    raise TypeError(f"expected a string, a list of strings or an iterable of strings, got {type(obj).__name__}")


def _item(i: Any, t: Any, what: str) -> None:
    if isinstance(t, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what} {i} is bytes: decode it first")
    raise TypeError(f"{what} {i} is a {type(t).__name__}, not a string")


def _numbered(items: Any, kind: str, make: Any) -> Iterator[Any]:
    """``make(id, item, group)`` for every item, ids by position (``"3"``, or ``"0.2"`` in a group)."""
    if kind == "groups":
        for g, texts in enumerate(items):
            for j, t in enumerate(texts):
                yield make(f"{g}.{j}", t, str(g))
        return
    for i, t in ([(0, items)] if kind == "one" else zip(count(), items)):
        yield make(str(i), t, None)


def _document(i: str, t: Any, group: str | None) -> Document:
    if isinstance(t, Document):
        return t
    if not isinstance(t, str):
        _item(i, t, "text")
    return Document(i, t, group=group)


def _masked_document(i: str, m: Any, group: str | None) -> MaskedDocument:
    from veil.markers import infer_style

    if isinstance(m, MaskedDocument):
        return m
    if isinstance(m, str):
        return MaskedDocument(i, m, (), infer_style(m), group=group)
    raise TypeError(f"item {i} is a {type(m).__name__}: fill takes masked text or MaskedDocument "
                    "(never original text)")


def _run(stage: Any, docs: Iterator[Any], kind: str, executor: Any, batch_size: int, convert: Any,
         items: Any = None) -> Any:
    """Docs through the corpus loop, results in the input's arrangement (one, list, groups or stream);
    ``items``: the input, whose groups give the result's nesting (an empty group stays an empty list)."""
    from veil.run.corpus import map_units

    outs = map_units(stage, docs, executor=executor, batch_size=batch_size, grouped=kind == "groups")
    if kind == "groups":
        units = ([convert(d) for d in u] for out in outs for u in out.units)
        return [next(units) if len(group) else [] for group in items]
    results = (convert(d) for out in outs for u in out.units for d in u)
    if kind == "one":
        return next(results)
    return list(results) if kind == "list" else results


def _masked_only(items: Any, kind: str) -> Any:
    """``items`` unchanged; refused (a ``VeilError``) when they are texts none of which holds a placeholder. Such texts were probably never masked, and a fill would hand them back with
    every name in them, as ``veil fill`` refuses too (``allow_unmasked=True`` fills them anyway). A stream
    is held back only until its first masked item, so it still streams."""
    def masked(m: Any) -> bool:  # (what is neither a string nor a MaskedDocument is refused later, by its type)
        return not isinstance(m, str) or ("[" in m and bool(find_markers(m)))

    def refuse(n: int) -> None:
        raise VeilError(f"none of the {n} texts holds a placeholder ([MASK], [PERSON_NAME_1], ...): they were "
                        "probably never masked, and would come back with every name in them; mask them first "
                        "(veil.mask, or veil.anonymize for both steps), or pass allow_unmasked=True")

    if kind == "one":
        if not masked(items):
            refuse(1)
        return items
    if kind in ("list", "groups"):
        flat = [m for g in items for m in g] if kind == "groups" else items
        if flat and not any(masked(m) for m in flat):
            refuse(len(flat))
        return items

    def stream() -> Iterator[Any]:
        held: list[Any] = []
        it = iter(items)
        for m in it:
            held.append(m)
            if masked(m):
                yield from held
                yield from it
                return
        if held:
            refuse(len(held))
    return stream()


def _executor(executor: str | None, engine: str | None, workers: int | None, address: str | None,
              device: str | None = None) -> Any:
    from veil.run.executors import make_executor

    if executor is not None and engine is not None and executor != engine:
        raise VeilError("give executor= (engine= is its older name), not both")
    return make_executor(executor or engine or "local", workers, address, device)


def _no_objects_on_ray(executor: Any, what: str, given_objects: bool, data: Any) -> None:
    if executor.name == "local":
        return
    if given_objects:
        raise VeilError(f"executor='ray' builds the {what} in every worker: give {what} by name")
    if _is_hf_dataset(data):
        raise VeilError("executor='ray' takes strings, lists or iterables; for a datasets.Dataset use "
                        "executor='local' (a batched Dataset.map, which takes num_proc)")


@lru_cache(maxsize=8)
def _engine(maskers: tuple[str, ...] | None, placeholder: str, options: str, exclude: tuple[str, ...],
                  keep: tuple[str, ...]) -> Any:
    from veil.run.components import build_engine

    return build_engine(maskers, placeholder, json.loads(options), exclude, keep)


def masking_engine(maskers: Sequence[Any] | None = None, placeholder: str = "numbered",
                   options: dict[str, dict] | None = None, exclude: Iterable[str] = (),
                   keep: Iterable[str] = ()) -> Any:
    """The ``MaskingEngine`` for these settings (:func:`veil.run.components.build_engine`, which checks them):
    built once per setting given by names and reused, masker objects used as given."""
    names = maskers if maskers is None or isinstance(maskers, str) else tuple(maskers)
    if names is None or (isinstance(names, tuple) and names and all(isinstance(n, str) for n in names)):
        return _engine(names, placeholder, json.dumps(options or {}, sort_keys=True), tuple(exclude), tuple(keep))
    from veil.run.components import build_engine

    return build_engine(names, placeholder, options, exclude, keep)


def _mask_stage(maskers: Any, placeholder: str, options: Any, exclude: Iterable[str], keep: Iterable[str],
                executor: Any) -> Any:
    from veil.run.stages import MaskStage

    built = masking_engine(maskers, placeholder, options, exclude, keep)  # settings checked here, before any work
    if executor.name == "local":
        return MaskStage(lambda: built)
    names = tuple(maskers) if maskers is not None else None
    return MaskStage(partial(masking_engine, names, placeholder, options, tuple(exclude), tuple(keep)))


def mask(texts: Any, maskers: Sequence[Any] | None = None, placeholder: str = "numbered", *,
         options: dict[str, dict] | None = None, exclude: Iterable[str] = (), keep: Iterable[str] = (),
         batch_size: int = 256, executor: str | None = None, workers: int | None = None,
         address: str | None = None, engine: str | None = None) -> Any:
    """Detect personal data and replace it by placeholders.

    ``texts``: a string (or ``Document``), a list of them, a list of lists (groups: each inner list
    is one document for numbering, e.g. a call's utterances), or any iterable (streamed in batches).
    ``maskers``: registry names (``veil ls``) or ``Masker`` objects; default neural_tagger + dlp.
    ``placeholder``: ``numbered`` (``[PERSON_NAME_1]``, the same number for the same entity within a
    document), ``typed`` (``[PERSON_NAME]``) or ``mask`` (``[MASK]`` per word, the paper's style).
    ``options``: per-masker options, ``{"dlp": {"min_score": 0.6}}``.
    ``executor``: ``local`` (this process) or ``ray``: batches run on ``workers`` Ray actors that load
    the models once each, on the cluster at ``address`` (default: a local one); same results, same
    order (``engine=`` is the older name of ``executor=``).

    Returns ``MaskedDocument`` objects: ``.text`` is the masked text, ``.placeholders`` its spans
    (start, end, label, key, technique, shape), in the same arrangement as the input.
    """
    kind = _shape(texts)
    ex = _executor(executor, engine, workers, address)
    names = tuple(maskers) if maskers is not None and not isinstance(maskers, str) else maskers
    _no_objects_on_ray(ex, "maskers", names is not None and not all(isinstance(n, str) for n in names), texts)
    stage = _mask_stage(maskers, placeholder, options, exclude, keep, ex)
    if _is_hf_dataset(texts):  # a datasets.Dataset: one batched map, masked records as columns
        from veil.run.hf_datasets import mask_dataset

        return mask_dataset(texts, masking_engine(maskers, placeholder, options, exclude, keep), batch_size=batch_size)
    return _run(stage, _numbered(texts, kind, _document), kind, ex, batch_size, lambda d: d, texts)


def _is_hf_dataset(obj: Any) -> bool:
    return type(obj).__module__.startswith("datasets.") and hasattr(obj, "map") and hasattr(obj, "column_names")


@lru_cache(maxsize=8)
def _filler(name: str, options: str) -> Any:
    from veil.run.components import build_filler

    return build_filler(name, **json.loads(options))


def _seeded(filler: Any, seed: int) -> Any:
    """The filler drawing with ``seed``: a shallow copy (it shares the loaded model) with its own seed."""
    if getattr(filler, "seed", None) == seed:
        return filler
    f = copy.copy(filler)
    f.seed = seed
    return f


def _named_filler(name: str, seed: int, options: dict[str, Any]) -> Any:
    return _seeded(_filler(name, json.dumps(options, sort_keys=True, default=repr)), seed)


def _fill_stage(filler: Any, seed: int | None, options: dict[str, Any], executor: Any) -> Any:
    from veil.fill.base import Filler
    from veil.run.stages import FillStage

    if isinstance(filler, Filler):
        if options:
            raise VeilError("options apply to fillers given by name; configure the Filler object directly")
        built = filler if seed is None else _seeded(filler, seed)
        return FillStage(lambda: built)
    if not isinstance(filler, str):
        raise TypeError(f"filler must be a registry name or a Filler, got {type(filler).__name__}")
    seed = secrets.randbelow(2 ** 63) if seed is None else seed
    if executor.name == "local":
        built = _named_filler(filler, seed, options)  # a bad name or option fails now, before any work
        return FillStage(lambda: built)
    return FillStage(partial(_named_filler, filler, seed, options))


def fill(masked: Any, filler: Any = "faker", *, seed: int | None = None, details: bool = False,
         batch_size: int = 256, executor: str | None = None, workers: int | None = None,
         address: str | None = None, engine: str | None = None, allow_unmasked: bool = False, **options: Any) -> Any:
    """Replace every placeholder by a substitute.

    ``masked``: what :func:`mask` returns, or masked strings (``"Call [PERSON_NAME_1] at
    [PHONE_NUMBER_1]"``; their placeholders are read from the markers), one, a list, a list of
    lists (groups: one substitute per entity across an inner list) or a stream.
    ``filler``: a registry name (``faker``: typed, shape-keeping values without a language model;
    ``llm``, ``mlm``, ``llm-instruct``: a model proposes words from the context) or a ``Filler``;
    further keyword options go to the filler (``strategy="topk"``, ``model=...``, ``device="cuda"``).
    ``seed``: each document draws from its own generator seeded by ``(seed, document id)``; ``None``
    (default) takes a fresh random seed per call, an integer makes the call reproducible (also on
    ``executor="ray"``, see :func:`mask`). A ``Filler`` object keeps its own seed unless one is given.

    Texts none of which holds a placeholder are refused (they were probably never masked; ``veil fill``
    refuses them too) unless ``allow_unmasked``.

    Returns the filled strings, or ``FilledDocument`` objects (text and substitutions) with ``details``.
    """
    from veil.fill.base import Filler

    kind = _shape(masked)
    ex = _executor(executor, engine, workers, address, options.get("device"))
    _no_objects_on_ray(ex, "filler", isinstance(filler, Filler), masked)
    if not allow_unmasked and not _is_hf_dataset(masked):  # refused before a filler is built
        masked = _masked_only(masked, kind)
    stage = _fill_stage(filler, seed, options, ex)
    if _is_hf_dataset(masked):  # a datasets.Dataset of masked records: filled records as columns
        from veil.run.hf_datasets import fill_dataset

        return fill_dataset(masked, stage.filler, batch_size=batch_size)
    return _run(stage, _numbered(masked, kind, _masked_document), kind, ex, batch_size,
                (lambda d: d) if details else (lambda d: d.text), masked)


def anonymize(texts: Any, maskers: Sequence[Any] | None = None, filler: Any = "faker", *, seed: int | None = None,
              batch_size: int = 256, executor: str | None = None, workers: int | None = None,
              address: str | None = None, engine: str | None = None, **fill_options: Any) -> Any:
    """Mask and fill in one call: realistic substitutes of the same type and format, the same within a
    document for the same entity, independent across documents (and across calls unless ``seed`` is
    given). A string gives a string, a list a list, a list of lists a list of lists (each inner list
    one document), any other iterable a stream; no placeholder is left in the output. ``executor``:
    see :func:`mask`."""
    from veil.fill.base import Filler
    from veil.run.stages import AnonymizeStage

    kind = _shape(texts)
    ex = _executor(executor, engine, workers, address, fill_options.get("device"))
    names = tuple(maskers) if maskers is not None and not isinstance(maskers, str) else maskers
    _no_objects_on_ray(ex, "maskers", names is not None and not all(isinstance(n, str) for n in names), texts)
    _no_objects_on_ray(ex, "filler", isinstance(filler, Filler), texts)
    # both stages in one place (on Ray: one actor per worker, two actor pools could not share the CPUs);
    # the fill stage sees only what the mask stage returns
    stage = AnonymizeStage(_mask_stage(maskers, "numbered", None, (), (), ex), _fill_stage(filler, seed, fill_options, ex))
    return _run(stage, _numbered(texts, kind, _document), kind, ex, batch_size, lambda d: d.text, texts)
