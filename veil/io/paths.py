"""Corpus I/O stage: where a path written in a settings file (an experiment file, its ``asr:`` section) points."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the project root (experiments/ lives here)


def resolve_path(p: str | Path, base: Path) -> Path:
    """Absolute; else relative to the working folder, the settings file's folder ``base``, or the project root."""
    p = Path(p).expanduser()
    if p.is_absolute():
        return p
    for root in (Path.cwd(), base, ROOT):
        if (root / p).exists():
            return (root / p).resolve()
    return (base / p).resolve()
