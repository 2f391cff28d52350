"""Run stage: the components a corpus loop runs, built from registry names (the defaults live here).

Building is separate from running: the corpus loop checks its input and output first and builds
the masking engine or the filler only then, so a bad input fails before any model loads.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from veil.errors import VeilError
from veil.markers import DEFAULT_STYLE, STYLES

#: the maskers `veil mask`, `veil audit risk`, `veil audit identifiers` and `veil.mask` use by default:
#: the case-robust neural tagger (int8, onnxruntime) and the DLP patterns. It measures best on every
#: text form (written, lower-cased, speech-recognition: docs/detection.md) and masks faster than
#: Presidio's fastest configuration (bench/bench_mask.py); spaCy's entity_tagger adds recall on
#: capitalised text at twice the time and lower precision, so it is opt-in
DEFAULT_MASKERS: tuple[str, ...] = ("neural_tagger", "dlp")
DEFAULT_PLACEHOLDER = DEFAULT_STYLE
DEFAULT_FILLER = "llm"


def build_engine(maskers: Sequence[Any] | None = None, placeholder: str = DEFAULT_PLACEHOLDER,
                 options: Mapping[str, Mapping[str, Any]] | None = None, exclude: Iterable[str] = (),
                 keep: Iterable[str] = ()) -> Any:
    """The one builder of a :class:`~veil.mask.engine.MaskingEngine`: ``maskers`` are registry names (default
    :data:`DEFAULT_MASKERS`) or ``Masker`` objects used as given; ``options`` per masker name. A bad name,
    option or style is a ``VeilError``, raised before any model loads."""
    from veil.config import check_call_options
    from veil.mask.engine import MaskingEngine
    from veil.registry import maskers as registry

    if isinstance(maskers, str):
        raise VeilError(f"maskers must be a list, e.g. maskers=[{maskers!r}]")
    names = list(DEFAULT_MASKERS if maskers is None else maskers)
    if not names:
        raise VeilError("maskers must be a non-empty list of masker names or Masker objects")
    if placeholder not in STYLES:
        raise VeilError(f"unknown placeholder style {placeholder!r}; choose from {', '.join(STYLES)}")
    options = dict(options or {})
    unused = set(options) - {n for n in names if isinstance(n, str)}
    if unused:
        given = all(isinstance(n, str) for n in names)
        raise VeilError(f"options given for maskers that are not run: {', '.join(sorted(map(str, unused)))}" if given
                        else "options apply to maskers given by name; configure Masker objects directly")
    built = []
    for name in names:
        if not isinstance(name, str):
            built.append(name)
            continue
        try:
            cls = registry.get(name)
        except KeyError as e:
            raise VeilError(str(e.args[0])) from None
        check_call_options(cls, options.get(name, {}), f"masker {name}")  # --set dlp.min_score=abc: one line
        try:
            built.append(cls(**dict(options.get(name, {}))))
        except TypeError as e:  # an option the masker does not take
            raise VeilError(f"masker {name}: {e}") from None
    return MaskingEngine(built, style=placeholder, exclude=exclude, keep=keep)


def build_filler(name: str = DEFAULT_FILLER, **options: Any) -> Any:
    """A filler from the registry by name; an unknown name or option is a ``VeilError``."""
    from veil.registry import fillers

    try:
        cls = fillers.get(name)
    except KeyError as e:
        raise VeilError(str(e.args[0])) from None
    from veil.config import check_call_options

    check_call_options(cls, options, f"filler {name}")
    try:
        return cls(**options)
    except TypeError as e:
        raise VeilError(f"filler {name}: {e}") from None
    except (ImportError, AttributeError) as e:
        raise VeilError(f"filler {name!r} is not available: {e}") from None


def component(factory: Any) -> Any:
    """A component given ready-made, or built by a zero-argument factory after the checks."""
    made = callable(factory) and not hasattr(factory, "fill") and not hasattr(factory, "detect")
    return factory() if made else factory
