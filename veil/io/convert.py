"""Corpus I/O stage: a finished JSONL output converted to CSV or Parquet (the writer's last step).

The records are written as JSONL while a run goes on (appendable, resumable); a CSV or Parquet output
is converted from it at the end, so its columns are the union of all records' fields in order of first
appearance. A Parquet column whose values have several types is written as strings, with a warning
naming it.
"""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import IO, Any, Iterable

from veil.io.atomic import open_read

log = logging.getLogger(__name__)


def _iter_partial(src: Path) -> Iterable[dict[str, Any]]:
    with open_read(src, "r", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def _union_fields(src: Path) -> tuple[list[str], dict[str, set[str]]]:
    """Every field of every record, in order of first appearance, with the types of its values."""
    fields: dict[str, set[str]] = {}
    for rec in _iter_partial(src):
        for k, v in rec.items():
            fields.setdefault(k, set()).add(_kind(v))
    return list(fields), fields


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, (dict, list)):
        return "json"
    return "string"


def _cell(v: Any) -> Any:
    return json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else ("" if v is None else v)


def jsonl_to_csv(src: Path, dest: IO[bytes]) -> None:
    import io

    columns, _ = _union_fields(src)
    f = io.TextIOWrapper(dest, encoding="utf-8", newline="", write_through=True)
    try:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for rec in _iter_partial(src):
            w.writerow([_cell(rec.get(c)) for c in columns])
    finally:
        f.detach()  # the caller closes dest


def jsonl_to_parquet(src: Path, dest: IO[bytes], batch_size: int = 4096) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns, kinds = _union_fields(src)
    types = {}
    for c in columns:
        k = kinds[c] - {"null"}
        if len(k) > 1:
            log.warning("field %r has values of several types (%s): written to Parquet as strings",
                        c, ", ".join(sorted(k)))
        types[c] = {"number": None, "bool": pa.bool_()}.get(next(iter(k)), pa.string()) if len(k) == 1 else pa.string()
    if any(t is None for t in types.values()):  # numbers: int64 unless a float is present
        floats = {c for c, t in types.items() if t is None
                  and any(isinstance(r.get(c), float) for r in _iter_partial(src))}
        types = {c: (pa.float64() if c in floats else pa.int64()) if t is None else t for c, t in types.items()}
    schema = pa.schema([(c, types[c]) for c in columns])

    def convert(rec: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for c in columns:
            v = rec.get(c)
            if v is not None and types[c] == pa.string() and not isinstance(v, str):
                v = json.dumps(v, ensure_ascii=False)  # nested values and mixed columns: JSON text
            out[c] = v
        return out

    with pq.ParquetWriter(dest, schema) as writer:
        batch: list[dict[str, Any]] = []
        for rec in _iter_partial(src):
            batch.append(convert(rec))
            if len(batch) >= batch_size:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch or not columns:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
