"""Fill stage: replace every placeholder of a masked document with a language model's substitute.

This stage sees only ``MaskedDocument`` objects, never original text.
"""

from veil._callable import make_callable

make_callable(__name__)  # veil.fill(texts, ...) is veil.api.fill: see veil/_callable.py
