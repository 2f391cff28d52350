"""Corpus I/O stage: tables (CSV, markdown) as text and figures (matplotlib) as PNG bytes.

The one rendering of result tables and plots for every stage that writes them (the audits, the
experiment report); where and how the text is written (atomically) is the caller's. matplotlib is
imported on first use, with the Agg back-end (no display).
"""

from __future__ import annotations

import csv
import io
from typing import Any, Callable, Iterable, Mapping, Sequence


def csv_text(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], cell: Callable[[Any], Any] | None = None) -> str:
    """A header row and one row per mapping (``\\n`` line ends); a missing or None value is an empty cell,
    keys outside ``columns`` are left out, ``cell(value)`` formats the others (e.g. floats)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (cell(v) if cell is not None and v is not None else v) for k, v in r.items()})
    return buf.getvalue()


def float_cells(digits: str = ".6g") -> Callable[[Any], Any]:
    """A ``cell`` for :func:`csv_text` that writes floats with ``digits`` and everything else as it is."""
    return lambda v: format(v, digits) if isinstance(v, float) else v


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None,
                   digits: int = 3) -> str:
    """A markdown table of ``rows`` (floats with ``digits`` decimals), one column per key of the first row
    unless ``columns`` says which."""
    columns = list(columns or (rows[0].keys() if rows else []))

    def value(v: Any) -> str:
        return f"{v:.{digits}f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(value(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg back-end."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_png(fig: Any, dpi: int = 120, tight: bool = True) -> bytes:
    """The figure as PNG (``tight``: cropped to its content), then closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, **({"bbox_inches": "tight"} if tight else {}))
    pyplot().close(fig)
    return buf.getvalue()
