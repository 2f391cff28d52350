"""bench/bench_adapt.py's table: one row per pick and size, mean ± std over the seeds."""

from __future__ import annotations

from bench.bench_adapt import markdown, mean_std


def _scores(p: float, d: float | None = 1.0, q: float | None = None) -> dict:
    return {"precision": p, "DIRECT": d, "QUASI": q}


def test_mean_std_reads_one_value_plainly_and_several_with_their_spread():
    assert mean_std([0.5]) == "0.500"
    assert mean_std([0.8, 0.9, 1.0]) == "0.900 ± 0.100"
    assert mean_std([None, None]) == "-"


def test_markdown_groups_seeds_of_one_pick_and_size():
    runs = [{"pick": "uncertain", "reviewed": 30, "seed": s, "base_on_rest": _scores(0.7), "base_with_lists":
             _scores(0.75), "adapted": _scores(p), "adapted_with_lists": _scores(p + 0.05), "adapt_seconds": 100 + s,
             "base_sets": {"TAB dev": _scores(0.66 - s / 100, 1.0, 0.93)}}
            for s, p in ((0, 0.8), (1, 0.9))]
    out = {"domains": {"orders": {"documents": 154, "base": _scores(0.64, 0.98, 0.83), "runs": runs}},
           "base_sets": {"TAB dev": {"base": _scores(0.664, 1.0, 0.932)}}}
    table = markdown(out, "python bench/bench_adapt.py --seeds 0 1", 60)
    row = next(ln for ln in table.splitlines() if ln.startswith("| uncertain | 30 |"))
    assert "| 2 |" in row and "0.850 ± 0.071" in row and "0.900 ± 0.071" in row and row.endswith("| 100 |")
    assert sum(ln.startswith("| uncertain") for ln in table.splitlines()) == 1
    base = next(ln for ln in table.splitlines() if ln.startswith("| orders, uncertain 30"))
    assert "0.655 ± 0.007 / 1.000 ± 0.000 / 0.930 ± 0.000" in base
