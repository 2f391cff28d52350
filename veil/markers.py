"""Marker grammar shared by every stage: placeholder syntax and reversible escaping of look-alikes.

Markers are ``[MASK]``, ``[LABEL]`` or ``[LABEL_N]``, where LABEL is one of veil's own labels
(:data:`LABELS`: what its maskers write) and N is 1 to 999. Exactly these forms are markers, and
exactly these forms in a user's text are *look-alikes*: escaped by inserting one backslash after the
bracket (``[\\MASK]``, ``[\\PERSON_NAME_1]``; a look-alike that already has backslashes gets one
more, so ``unescape(escape(t)) == t`` for every ``t``), never masked inside, restored verbatim by the
fill. ``[mask]`` in any case is one too (an uncased model reads it as its mask token). Anything else
in brackets -- ``[JOHN_SMITH]``, ``[MARIA]``, ``[JSMITH1985]``, ``[PERSON_NAME_5551234]`` -- is plain
text that every masker sees and masks like any text: a wider grammar would let personal data hide
behind brackets. A look-alike's content is a label from that closed list and at most three digits,
so it cannot carry a name, a phone number or an id. Real markers never contain a backslash.

It lives beside :mod:`veil.types` (not in the mask stage) because the mask stage writes markers,
the fill stage reads them, and corpus I/O and the experiment runner parse them: none of those
should have to import the mask stage to know what a marker is.
"""

from __future__ import annotations

import re

STYLES = ("mask", "typed", "numbered")
#: typed, numbered placeholders ([PERSON_NAME_1]) give fills of the right type; the paper's [MASK] is "mask"
DEFAULT_STYLE = "numbered"
MASK = "[MASK]"

#: every label a placeholder may carry: the labels veil's maskers write (DLP infoTypes, spaCy's
#: entity labels, the quasi-identifier and word maskers' labels, a dictionary's default CUSTOM).
#: A masker or a dictionary that uses another label is refused (:func:`check_label`).
LABELS = frozenset({
    # DLP-style infoTypes (veil.mask.detectors, the entity and neural taggers)
    "PERSON_NAME", "ORGANIZATION_NAME", "LOCATION", "GROUP", "FACILITY", "STREET_ADDRESS", "EMAIL_ADDRESS", "URL",
    "IP_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD_NUMBER", "US_SOCIAL_SECURITY_NUMBER", "NUMBER", "GENERIC_ID",
    "DATE", "TIME", "AGE", "DURATION", "MONEY", "QUANTITY", "PERCENT", "ORDINAL", "CARDINAL", "ZIP_CODE",
    "SPELLED_WORD", "USERNAME", "NON_LATIN_NAME", "EVENT", "PRODUCT", "LAW", "WORK_OF_ART", "LANGUAGE",
    # quasi-identifiers (veil.mask.quasi) and the neural tagger's MISC
    "NATIONALITY", "OCCUPATION", "DEMOGRAPHIC", "QUASI_ID", "MISC",
    # spaCy's own names (gold spans and older corpora)
    "PERSON", "ORG", "GPE", "LOC", "NORP", "FAC",
    # identifiers a reviewer may name (veil review) and Presidio's names for them
    "IBAN_CODE", "PASSPORT",
    # the word maskers (allow_list, vocab_threshold) and a custom dictionary's (deny list's) default type
    "WORD", "CUSTOM",
})
#: the largest N of a ``[LABEL_N]`` marker (a document with more distinct values of one label gets ``[LABEL]``)
MAX_NUMBER = 999

_LABEL = "|".join(sorted(LABELS, key=lambda x: (-len(x), x)))  # longest first: PERSON_NAME before PERSON
_NAME = r"(?:(?i:mask)|(?:" + _LABEL + r")(?:_[1-9][0-9]{0,2})?)"
_LOOKALIKE_RE = re.compile(r"\[(\\*)(" + _NAME + r")\]")
#: A real (unescaped) marker; group 1 is the name, e.g. MASK, PERSON_NAME, PERSON_NAME_1.
MARKER_RE = re.compile(r"\[(" + _NAME + r")\]")
_NUMBERED_RE = re.compile(r"^([A-Z][A-Z0-9_]*?)_(\d+)$")


def check_label(label: str, what: str = "a masker") -> str:
    """``label`` if a placeholder may carry it, else a ``VeilError`` naming ``what`` gave it."""
    if label not in LABELS:
        from veil.errors import VeilError

        raise VeilError(f"{what} uses the label {label!r}, which is not one of veil's placeholder labels "
                        f"({', '.join(sorted(LABELS))})")
    return label


def escape(text: str) -> str:
    """Hide every marker look-alike the user wrote (reversible with :func:`unescape`)."""
    return _LOOKALIKE_RE.sub(lambda m: "[\\" + m.group(1) + m.group(2) + "]", text)


def lookalike_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every marker look-alike in user text, escaped or not: never masked inside."""
    return [m.span() for m in _LOOKALIKE_RE.finditer(text)] if "[" in text else []


def unescape(text: str) -> str:
    return _LOOKALIKE_RE.sub(
        lambda m: "[" + m.group(1)[1:] + m.group(2) + "]" if m.group(1) else m.group(0), text)


def find_markers(masked_text: str) -> list[tuple[int, int, str]]:
    """Unescaped markers in a masked text: (start, end, name)."""
    return [(m.start(), m.end(), m.group(1)) for m in MARKER_RE.finditer(masked_text)]


def parse_marker_name(name: str) -> tuple[str, int | None]:
    """``PERSON_NAME_1`` -> (``PERSON_NAME``, 1); ``MASK`` -> (``MASK``, None)."""
    m = _NUMBERED_RE.match(name)
    return (m.group(1), int(m.group(2))) if m else (name, None)


def infer_style(masked_text: str) -> str:
    """The placeholder style of a masked text written without a recorded style."""
    names = [n for _, _, n in find_markers(masked_text)]
    if all(n.upper() == "MASK" for n in names):
        return "mask"
    return "numbered" if any(parse_marker_name(n)[1] is not None for n in names) else "typed"
