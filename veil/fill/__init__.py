"""Fill stage: replace every placeholder of a masked document with a language model's substitute.

This stage sees only ``MaskedDocument`` objects, never original text.
"""
