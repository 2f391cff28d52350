"""Fill stage: a filled document built from its slots' values (:func:`assemble`), the one place every fill
(a filler's loop, the fallback of a failed document) makes a ``FilledDocument``."""

from __future__ import annotations

import re
from typing import Sequence

from veil.fill.base import Slot
from veil.fill.typed import label_kind
from veil.markers import unescape
from veil.types import FilledDocument, MaskedDocument, Substitution

_ARTICLE_BEFORE = re.compile(r"(?<![\w'’-])(a|an|A|An|AN)(\s+)$")
#: letters whose names start with a vowel sound ("an F B I agent", "an M G"); words that start with one
#: although written with a consonant ("an hour"), or with a consonant although written with a vowel ("a union")
_VOWEL_LETTERS = frozenset("AEFHILMNORSX")
_SILENT_H = ("hour", "honest", "honor", "honour", "heir")
_YOU_SOUND = re.compile(r"(?:uni|use|usu|uti|ure|euro?|eu|one\b|once\b|u[bcdfgklmnprst][aeiou])", re.IGNORECASE)


def with_article(before: str, value: str) -> str:
    """``before`` (the text up to a substitute) with its last word "a" / "an" agreeing with ``value``: the
    article was said for the original ("I'm an [artist]"), the substitute may need the other one ("I'm a
    chiropractor"). Anything else is returned unchanged."""
    m = _ARTICLE_BEFORE.search(before)
    if m is None or not value:
        return before
    if m.group(1)[0] == "A" and before[:m.start()].rstrip()[-1:] not in ("", ".", "!", "?", ":", '"', "“", "\n"):
        return before  # a capital "A" inside a sentence is a letter ("grade A"), not the article
    word = value.split()[0].strip("\"'“‘(")
    if not word:
        return before
    if word[0].isdigit():
        an = bool(re.match(r"(?:8|11|18)(?!\d)|8\d", word))
    elif len(word) == 1 or (word.isupper() and len(word) <= 4 and "." not in word):
        an = word[0].upper() in _VOWEL_LETTERS  # letters said one by one
    else:
        low = word.lower()
        an = (low[0] in "aeiou" and not _YOU_SOUND.match(low)) or low.startswith(_SILENT_H)
    article = m.group(1)
    want = "an" if an else "a"
    if article.lower() == want:
        return before
    new = want.upper() if article.isupper() and len(article) > 1 else want.capitalize() if article[0].isupper() else want
    return before[:m.start(1)] + new + m.group(2)



def assemble(doc: MaskedDocument, slots: Sequence[Slot], values: Sequence[str]) -> FilledDocument:
    """The filled document: ``values[i]`` in place of ``slots[i]`` (offsets in ``doc.text``, left to right).

    The text between the slots is unescaped (a user's ``[\\MASK]`` becomes ``[MASK]`` again); an "a" / "an"
    right before a drawn value (a typed label's, not a model's word, which was chosen in its context) is
    made to agree with it (:func:`with_article`); every slot gives one ``Substitution`` with the value's
    offsets in the output text."""
    parts: list[str] = []
    subs: list[Substitution] = []
    pos = out_len = 0
    for s, value in zip(slots, values):
        seg = unescape(doc.text[pos:s.start])
        if label_kind(s.label) != "word":
            seg = with_article(seg, value)
        out_len += len(seg)
        subs.append(Substitution(doc.id, s.marker, s.key, s.label, value, out_len, out_len + len(value)))
        parts += [seg, value]
        out_len += len(value)
        pos = s.end
    parts.append(unescape(doc.text[pos:]))
    return FilledDocument(doc.id, "".join(parts), tuple(subs), person=doc.person, group=doc.group,
                          meta=dict(doc.meta))
