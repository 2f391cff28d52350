"""Detect and mask stage: maskers find sensitive spans, the engine turns them into placeholders."""

from veil._callable import make_callable

make_callable(__name__)  # veil.mask(texts, ...) is veil.api.mask: see veil/_callable.py
