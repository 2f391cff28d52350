"""Detect and mask stage: maskers find sensitive spans, the engine turns them into placeholders."""
