"""Experiment stage: rankings shared between the fill methods of one filler (Top-1 and Top-K rank alike).

A ranking (a filler's candidates for one marker, with their scores) depends on the text, the
marker's place, the model and its options, never on the strategy: the methods of one filler share
them through a memo, kept on disk beside the stage cache (``rankings/HASH.jsonl.gz``, one file per
filler, model, options and masked corpus), so a method added later, or a run resumed in another
process, reuses them exactly instead of asking the model again.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from veil.cache import stable_hash

log = logging.getLogger(__name__)


def ranking_key(text: str, start: int, end: int, exclude_digest: str = "") -> tuple[str, int, int, str]:
    """The key of one ranking in a :func:`share_rankings` memo (``exclude_digest`` names the
    exclude list the ranking was made under: empty for none)."""
    return (text, start, end, exclude_digest)


def ranking_record(key: tuple[str, int, int, str], value: tuple[int, list[tuple[str, float]]]) -> list[Any]:
    """One memo entry as a line of a ``rankings/*.jsonl.gz`` file (the inverse of :func:`ranking_entry`)."""
    text, start, end, exclude_digest = key
    ask, ranking = value
    return [text, start, end, ask, ranking, exclude_digest]


def ranking_entry(record: list[Any]) -> tuple[tuple[str, int, int, str], tuple[int, list[tuple[str, float]]]]:
    """A memo entry from a stored line (files written before exclude lists had no last field)."""
    text, start, end, ask, ranking, *excl = record
    return ranking_key(text, start, end, excl[0] if excl else ""), (ask, [(w, sc) for w, sc in ranking])


class SharedRankings:
    """Rankings shared by the fill methods of one filler (exact, not approximate): what a filler's fill loop
    asks instead of its back-end once :func:`share_rankings` has given it one (``CandidateFiller.rankings``).

    A ranking depends only on the text and the marker position (and the model and its options,
    which are part of the memo's key in the caller), never on the strategy: Top-1 and Top-K
    therefore rank the first marker of every document identically, and Top-K reuses those rankings
    instead of recomputing them. A stored ranking serves any request for at most as many candidates;
    ``request`` asks the model for at least that many candidates (the largest K of the methods that
    share the memo: a back-end ranks all its proposals anyway, so a longer list costs nothing).
    """

    def __init__(self, memo: dict[Any, Any], request: int = 0) -> None:
        self.memo, self.request = memo, request
        self._digests: dict[int, tuple[Any, str]] = {}  # id(word list) -> (the list, its digest)

    def _digest(self, words: Any) -> str:
        """A stable name of an exclude list (it is part of a ranking's key, also on disk)."""
        if not words:
            return ""
        hit = self._digests.get(id(words))
        if hit is None or hit[0] is not words:
            hit = self._digests[id(words)] = (words, stable_hash(sorted(words)))
        return hit[1]

    def propose(self, propose_batch: Any, texts: Any, targets: Any, k: int,
                exclude: Any = None) -> list[list[tuple[str, float]]]:
        """``propose_batch(texts, targets, k[, exclude])``'s answer, from the memo where it holds enough."""
        excl = list(exclude) if exclude is not None else [None] * len(texts)
        keys = [ranking_key(t, s, e, self._digest(x)) for t, (s, e), x in zip(texts, targets, excl)]
        out: list[Any] = [None] * len(keys)
        miss = []
        for i, key in enumerate(keys):
            hit = self.memo.get(key)
            if hit is not None and (hit[0] >= k or len(hit[1]) < hit[0]):
                out[i] = hit[1][:k]
            else:
                miss.append(i)
        if miss:
            ask = max(k, self.request)
            extra = {"exclude": [excl[i] for i in miss]} if exclude is not None else {}
            got = propose_batch([texts[i] for i in miss], [targets[i] for i in miss], ask, **extra)
            for i, ranking in zip(miss, got):
                self.memo[keys[i]] = (ask, list(ranking))
                out[i] = list(ranking)[:k]
        return out


def share_rankings(filler: Any, memo: dict[Any, Any], request: int = 0) -> SharedRankings | None:
    """Give ``filler`` (a model filler: it has a ``rankings`` slot) the rankings of ``memo``; None for a
    filler without a model to ask."""
    if not hasattr(filler, "rankings") or not hasattr(filler, "propose_batch"):
        return None
    filler.rankings = SharedRankings(memo, request)
    return filler.rankings


def ranking_request(filler: Any, k_max: int) -> int:
    """The most candidates the fill loop asks for: Top-K's K (or an entity's list) plus its margin."""
    from veil.fill.base import CANDIDATE_MARGIN

    return max(k_max, getattr(filler, "entity_candidates", 0)) + CANDIDATE_MARGIN


class RankingStore:
    """The memos of one run, each loaded from its file on first use and written back when it has grown."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._memos: dict[str, dict[Any, Any]] = {}
        self._saved: dict[str, int] = {}  # memo key -> entries on disk

    def path(self, memo_key: str) -> Path:
        return self.folder / f"{stable_hash(memo_key)}.jsonl.gz"

    def memo(self, memo_key: str) -> dict[Any, Any]:
        memo = self._memos.get(memo_key)
        if memo is None:
            memo = self._memos[memo_key] = {}
            path = self.path(memo_key)
            if path.is_file():
                import gzip

                with gzip.open(path, "rt", encoding="utf-8") as f:
                    for line in f:
                        key, value = ranking_entry(json.loads(line))
                        memo[key] = value
                log.info("reusing %d stored rankings (%s)", len(memo), path.name)
            self._saved[memo_key] = len(memo)
        return memo

    def save(self, memo_key: str) -> None:
        memo = self._memos.get(memo_key)
        if memo is None or len(memo) == self._saved.get(memo_key):
            return
        import gzip

        from veil.io.atomic import atomic_write

        with atomic_write(self.path(memo_key), "wb") as raw, gzip.open(raw, "wt", encoding="utf-8") as f:
            for key, value in memo.items():
                f.write(json.dumps(ranking_record(key, value), ensure_ascii=False) + "\n")
        self._saved[memo_key] = len(memo)
