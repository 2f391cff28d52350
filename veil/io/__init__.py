"""Corpus I/O stage: read and write corpora in plain text, JSONL, CSV, Parquet; atomic, resumable."""
