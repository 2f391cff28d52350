"""Corpus I/O stage: read and write corpora in plain text, JSONL, CSV, Parquet; one locked, atomic, resumable writer."""

from veil.io.formats import Fields, detect_format, iter_batches, read_documents
from veil.io.output import ResumableWriter, check_output_path
from veil.io.records import read_filled, read_masked, write_filled, write_masked

__all__ = ["Fields", "ResumableWriter", "check_output_path", "detect_format", "iter_batches", "read_documents",
           "read_filled", "read_masked", "write_filled", "write_masked"]
