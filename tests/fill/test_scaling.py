"""The fill loop's cost and thread safety: linear in a document's length; concurrent calls fill as serial ones do."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import veil
from veil.mask.placeholders import render
from veil.registry import fillers
from veil.types import Document, Span

_SENT = "Hello, this is Maria Lopez calling from Boston about card 4111 1111 1111 1111, thanks. "
_SPANS = ((15, 26, "PERSON_NAME"), (40, 46, "LOCATION"), (58, 77, "CREDIT_CARD_NUMBER"))


def long_document(n_chars: int, style: str = "typed"):
    """A masked document of ``n_chars`` characters with a placeholder every ~30 characters."""
    reps = n_chars // len(_SENT) + 1
    text = (_SENT * reps)[:n_chars]
    spans = [Span(r * len(_SENT) + a, r * len(_SENT) + b, label, "test")
             for r in range(reps) for a, b, label in _SPANS if r * len(_SENT) + b <= n_chars]
    return render(Document("long", text), spans, style)


def _seconds(filler, doc) -> float:
    best = float("inf")
    for _ in range(2):
        t = time.perf_counter()
        filler.fill([doc])
        best = min(best, time.perf_counter() - t)
    return best


def test_fill_time_per_character_does_not_grow_with_the_document():
    filler = fillers.get("faker")()
    small, large = long_document(8_000), long_document(128_000)  # 16x the length
    filler.fill([small])  # lists and generators loaded
    per_char_small = _seconds(filler, small) / 8_000
    per_char_large = _seconds(filler, large) / 128_000
    # linear: the same cost per character (a quadratic loop costs 16x more per character here)
    assert per_char_large < 3 * per_char_small + 2e-6, (per_char_small, per_char_large)


def test_a_long_document_is_filled_completely_and_in_order():
    doc = long_document(20_000, "numbered")
    out = fillers.get("faker")().fill([doc])[0]
    assert "[" not in out.text and len(out.substitutions) == len(doc.placeholders)
    assert all(out.text[s.start:s.end] == s.substitute for s in out.substitutions)


def _masked_corpus(n: int) -> list[str]:
    return [f"Call [PERSON_NAME_1] at [PHONE_NUMBER_1] about [ORGANIZATION_NAME_1] in [LOCATION_1]; "
            f"[PERSON_NAME_2] was born on [DATE_1], order {i}." for i in range(n)]


def test_concurrent_fill_calls_give_the_serial_output():
    texts = _masked_corpus(240)
    serial = [veil.fill(t, seed=5) for t in texts]
    with ThreadPoolExecutor(8) as pool:
        threaded = list(pool.map(lambda t: veil.fill(t, seed=5), texts))
    assert threaded == serial
    # batches in threads too: the same documents (ids are positions within a call)
    chunks = [texts[i:i + 40] for i in range(0, len(texts), 40)]
    with ThreadPoolExecutor(6) as pool:
        batched = list(pool.map(lambda c: veil.fill(c, seed=5), chunks))
    assert batched == [veil.fill(c, seed=5) for c in chunks]
