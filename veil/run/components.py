"""Run stage: the components a corpus loop runs, built from registry names (the defaults live here).

Building is separate from running: the corpus loop checks its input and output first and builds
the masking engine or the filler only then, so a bad input fails before any model loads.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from veil.errors import VeilError

#: the maskers `veil mask`, `veil audit risk`, `veil audit identifiers` and `veil.mask` use by default:
#: the case-robust neural tagger (int8, onnxruntime) and the DLP patterns. It measures best on every
#: text form (written, lower-cased, speech-recognition: docs/detection.md) and masks faster than
#: Presidio's fastest configuration (bench/bench_mask.py); spaCy's entity_tagger adds recall on
#: capitalised text at twice the time and lower precision, so it is opt-in
DEFAULT_MASKERS: tuple[str, ...] = ("neural_tagger", "dlp")
#: typed, numbered placeholders ([PERSON_NAME_1]) give fills of the right type; the paper's [MASK] is "mask"
DEFAULT_PLACEHOLDER = "numbered"
DEFAULT_FILLER = "llm"


def build_engine(maskers: Sequence[str] | None = None, placeholder: str = DEFAULT_PLACEHOLDER,
                 options: Mapping[str, Mapping[str, Any]] | None = None, exclude: Iterable[str] = (),
                 keep: Iterable[str] = ()) -> Any:
    """A :class:`~veil.mask.engine.MaskingEngine` from registry names; bad names / options are ``VeilError``."""
    from veil.markers import STYLES
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
        from veil.config import check_call_options

        check_call_options(cls, options.get(name, {}), f"masker {name}")  # --set dlp.min_score=abc: one line
        try:
            built.append(cls(**dict(options.get(name, {}))))
        except TypeError as e:  # an option the masker does not take
            raise VeilError(f"masker {name}: {e}") from None
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
