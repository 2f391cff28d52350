"""Corpus I/O stage: atomic, resumable output files in JSONL, plain text, CSV or Parquet.

Records are appended to ``OUTPUT.partial`` batch by batch; after each batch a small
``OUTPUT.progress.json`` (written atomically) records how many records and bytes are complete
and a hash of the run's settings. A re-run with the same settings truncates the partial file to
the last complete batch and continues from there, so an interrupted and resumed run writes the
same bytes as an uninterrupted one. ``OUTPUT`` itself appears only, by rename, when the run is
complete. Parquet is written as JSONL while running and converted in the final step.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterable

from veil.errors import VeilError

log = logging.getLogger(__name__)

OUTPUT_FORMATS = ("jsonl", "txt", "csv", "parquet")


def settings_hash(settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def input_fingerprint(path: str | Path) -> dict[str, Any]:
    """Identity of an input for resume decisions: a changed input must not be resumed into."""
    p = Path(path)
    if p.is_dir():
        files = sorted(p.glob("*"))
        return {"path": str(p.resolve()), "files": len(files),
                "size": sum(f.stat().st_size for f in files if f.is_file()),
                "mtime": max((f.stat().st_mtime_ns for f in files), default=0)}
    st = p.stat()
    return {"path": str(p.resolve()), "size": st.st_size, "mtime": st.st_mtime_ns}


def write_json_atomic(path: str | Path, obj: Any) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class ResumableWriter:
    """``with ResumableWriter(out, settings, fmt="jsonl") as w: skip = w.done; ...; w.write(records)``.

    ``records`` are dicts (JSONL / CSV / Parquet) or, for ``txt``, dicts whose ``text`` is written.
    """

    def __init__(self, path: str | Path, settings: dict[str, Any], fmt: str = "jsonl", resume: bool = True,
                 columns: list[str] | None = None) -> None:
        if fmt not in OUTPUT_FORMATS:
            raise VeilError(f"unknown output format {fmt!r}; choose from {', '.join(OUTPUT_FORMATS)}")
        self.path = Path(path)
        self.fmt = fmt
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.progress = self.path.with_name(self.path.name + ".progress.json")
        self.hash = settings_hash({**settings, "format": fmt})
        self.resume = resume
        self.columns = columns
        self.done = 0
        self._bytes = 0
        self._f: io.BufferedWriter | None = None

    def __enter__(self) -> "ResumableWriter":
        if not self.path.parent.exists():
            raise VeilError(f"output directory {self.path.parent} does not exist")
        state = None
        if self.resume and self.partial.exists() and self.progress.exists():
            try:
                state = json.loads(self.progress.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                state = None
            if state and state.get("settings") != self.hash:
                log.warning("%s: unfinished run with other settings or input; starting again", self.path)
                state = None
        if state:
            self.done, self._bytes = int(state["records"]), int(state["bytes"])
            self._f = open(self.partial, "r+b")
            self._f.truncate(self._bytes)  # drop a batch that was half written when interrupted
            self._f.seek(self._bytes)
            self.columns = state.get("columns") or self.columns
            log.info("resuming %s after %d records", self.path, self.done)
        else:
            self._f = open(self.partial, "wb")
            if self.fmt == "csv" and self.columns:
                self._write_bytes(self._csv_line(self.columns))
            self._save_progress()
        return self

    def _csv_line(self, row: list[Any]) -> bytes:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(row)
        return buf.getvalue().encode("utf-8")

    def _write_bytes(self, b: bytes) -> None:
        assert self._f is not None
        self._f.write(b)
        self._bytes += len(b)

    def _encode(self, rec: dict[str, Any]) -> bytes:
        if self.fmt == "txt":
            text = str(rec.get("text", ""))
            if "\n" in text or "\r" in text:
                raise VeilError(f"record {rec.get('id')!r} contains a line break and cannot be written "
                                "as one line of plain text; choose --output-format jsonl")
            return (text + "\n").encode("utf-8")
        if self.fmt == "csv":
            if self.columns is None:
                self.columns = list(rec)
                self._write_bytes(self._csv_line(self.columns))
            return self._csv_line([_cell(rec.get(c)) for c in self.columns])
        return (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8")

    def write(self, records: Iterable[dict[str, Any]]) -> None:
        """Append one batch and mark it complete."""
        n = 0
        for rec in records:
            self._write_bytes(self._encode(rec))
            n += 1
        assert self._f is not None
        self._f.flush()
        os.fsync(self._f.fileno())
        self.done += n
        self._save_progress()

    def _save_progress(self) -> None:
        write_json_atomic(self.progress, {"settings": self.hash, "records": self.done, "bytes": self._bytes,
                                          "columns": self.columns})

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self._f is not None
        self._f.close()
        if exc_type is not None:
            return  # keep .partial and .progress.json for the next run to resume
        if self.fmt == "parquet":
            _jsonl_to_parquet(self.partial, self.path)
            self.partial.unlink()
        else:
            os.replace(self.partial, self.path)
        self.progress.unlink(missing_ok=True)


def _cell(v: Any) -> Any:
    return json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else ("" if v is None else v)


def _jsonl_to_parquet(src: Path, dest: Path, batch_size: int = 4096) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = dest.with_name(dest.name + ".tmp")
    writer = None
    try:
        with open(src, encoding="utf-8") as f:
            batch: list[dict[str, Any]] = []
            for line in f:
                rec = json.loads(line)
                # nested values (placeholders) are stored as JSON strings: one stable schema for every batch
                batch.append({k: json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v
                              for k, v in rec.items()})
                if len(batch) >= batch_size:
                    writer = _write_parquet_batch(pa, pq, writer, tmp, batch)
                    batch = []
            if batch or writer is None:
                writer = _write_parquet_batch(pa, pq, writer, tmp, batch)
    finally:
        if writer is not None:
            writer.close()
    os.replace(tmp, dest)


def _write_parquet_batch(pa: Any, pq: Any, writer: Any, path: Path, batch: list[dict[str, Any]]) -> Any:
    table = pa.Table.from_pylist(batch)
    if writer is None:
        writer = pq.ParquetWriter(path, table.schema)
    writer.write_table(table.cast(writer.schema) if table.schema != writer.schema else table)
    return writer
