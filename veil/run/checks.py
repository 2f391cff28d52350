"""Run stage: the checks that keep ``veil fill`` from reporting success for a wrong result.

- an input with no placeholder in any record was never masked (or nothing in it was found): filling
  it would copy every name and number unchanged, so it stops before the work unless the user says
  ``allow_unmasked`` (:func:`check_fillable`);
- a filler that cannot load its model (a wrong path, ``--device cuda`` without a GPU, an unknown
  dtype, broken weights) stops before the first document with one line, instead of falling back on
  every document (:func:`load_filler`);
- a filler that falls back (a document filled with its types' fallback values, ``something`` for
  plain markers) on more than ``max_share`` of the placeholders fails the run and says why, and the
  output is not finished, so its manifest never says complete (:class:`FallbackGuard`). The counts
  are kept in the run's resumable state, so a resumed run judges the whole corpus, not its rest.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from veil.errors import VeilError

#: the share of placeholders that may get fallback values before ``veil fill`` fails (``--max-fallback-share``)
DEFAULT_MAX_FALLBACK_SHARE = 0.1
#: fallbacks are judged during the run only once this many placeholders were filled (a broken filler
#: fails after its first chunks, not hours later); the end of the run always judges the whole corpus
EARLY_JUDGEMENT = 200


def check_fillable(path: Any, records: int, with_placeholders: int, veil_masked: bool, allow_unmasked: bool) -> None:
    """Refuse (one line) an input in which no record holds a placeholder, unless ``allow_unmasked``."""
    if with_placeholders or allow_unmasked:
        return
    if veil_masked:
        why = (f"none of its {records} records holds a placeholder (veil mask found nothing to mask): there is "
               "nothing to fill")
    else:
        why = (f"none of its {records} records holds a placeholder: it was never masked, and filling it would "
               "copy every name and number unchanged; run veil mask first")
    raise VeilError(f"{path}: {why} (--allow-unmasked fills it anyway)")


def load_filler(filler: Any, name: str | None = None) -> Any:
    """``filler.load()`` (its model), with any failure as one ``VeilError`` line, before the work."""
    load = getattr(filler, "load", None)
    if load is None:
        return filler
    try:
        load()
    except VeilError:
        raise
    except Exception as e:  # transformers, safetensors, torch raise many types for a model they cannot read
        what = name or getattr(filler, "name", type(filler).__name__)
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise VeilError(f"filler {what} cannot load its model: {type(e).__name__}"
                        + (f": {first}" if first else "")) from None
    return filler


class FallbackGuard:
    """Counts filled and fallback placeholders over a run (resumed runs included) and fails past ``max_share``."""

    def __init__(self, max_share: float = DEFAULT_MAX_FALLBACK_SHARE, state: Mapping[str, Any] | None = None) -> None:
        if not 0 <= max_share <= 1:
            raise VeilError(f"the maximum fallback share must be between 0 and 1, got {max_share!r}")
        self.max_share = max_share
        state = state or {}
        self.placeholders = int(state.get("placeholders", 0))
        self.fallback = int(state.get("fallback_placeholders", 0))
        self.documents: list[str] = list(state.get("fallback_documents", []))[:20]

    def add(self, docs: Iterable[Any], failed_ids: Iterable[str]) -> None:
        """One chunk: its filled documents and the ids of those that got fallback values (a document's
        placeholders are its substitutions: consecutive ``[MASK]`` markers filled as one count once)."""
        failed = set(failed_ids)
        for d in docs:
            n = len(d.substitutions)
            self.placeholders += n
            if d.id in failed:
                self.fallback += n
                if len(self.documents) < 20:
                    self.documents.append(d.id)

    def state(self) -> dict[str, Any]:
        return {"placeholders": self.placeholders, "fallback_placeholders": self.fallback,
                "fallback_documents": self.documents}

    def check(self, final: bool = False) -> None:
        if not self.placeholders or (not final and self.placeholders < EARLY_JUDGEMENT):
            return
        share = self.fallback / self.placeholders
        if share > self.max_share:
            raise VeilError(
                f"the filler could not fill {self.fallback} of {self.placeholders} placeholders ({share:.0%}, more "
                f"than the {self.max_share:.0%} allowed): they got fallback values (documents "
                f"{', '.join(map(repr, self.documents[:5]))}{' ...' if len(self.documents) > 5 else ''}; the "
                "warnings above say why). The output was not finished; fix the filler, or pass "
                "--max-fallback-share to accept more")
