"""veil: privacy-preserving masking and LLM-based filling of private text corpora."""

__version__ = "0.1.0"
