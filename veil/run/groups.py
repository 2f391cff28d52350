"""Run stage: documents made of several records (a call given one utterance a record).

With a group field, the records of one group are one document for numbering and substitutes:
an entity keeps one key and one substitute across the group's records, and groups stay
independent. The corpus loop cuts its input into *units* (a group's records, or one record
without a group field) and never splits a unit across batches, so every stage sees whole
documents.

- masking: each record is detected on its own (detection is per text), then rendered with the
  group's shared :class:`~veil.mask.placeholders.Numbering`;
- filling: the group's masked records are joined into one document (records separated by a
  line break, so a model filler reads the call as a conversation), filled by any filler, and cut
  back into records at the separators, whose places in the filled text follow from the
  substitutions the filler reports. The cut is checked, never guessed.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Iterable, Iterator, Sequence, TypeVar

from veil.errors import VeilError
from veil.io.formats import group_key
from veil.markers import find_markers, unescape
from veil.types import FilledDocument, MaskedDocument, Placeholder, Substitution

T = TypeVar("T")
SEPARATOR = "\n"


def units_of(docs: Iterable[T], grouped: bool) -> Iterator[list[T]]:
    """Consecutive records of one group as one unit (each record alone without a group field).

    A group must be contiguous: one that reappears after another group is an error naming the
    record, never a silent second document (its entities would get other keys and substitutes).
    """
    if not grouped:
        for d in docs:
            yield [d]
        return
    seen: set[bytes] = set()
    unit: list[T] = []
    current: str | None = None
    for d in docs:
        g = getattr(d, "group", None)
        if g is None:
            raise VeilError(f"record {getattr(d, 'id', '?')!r} has no group value; with a group field every "
                            "record needs one")
        key = group_key(g)
        if unit and key != current:
            yield unit
            unit = []
        if not unit:
            digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            if digest in seen:
                raise VeilError(f"record {getattr(d, 'id', '?')!r}: group {g!r} appears again after other "
                                "groups; the records of a group must be contiguous (sort the input by the "
                                "group field)")
            seen.add(digest)
            current = key
        unit.append(d)
    if unit:
        yield unit


def batches_of(units: Iterable[list[T]], size: int) -> Iterator[list[list[T]]]:
    """Batches of about ``size`` records; a unit is never split (a large group is a batch of its own)."""
    batch: list[list[T]] = []
    n = 0
    for u in units:
        if batch and n + len(u) > size:
            yield batch
            batch, n = [], 0
        batch.append(u)
        n += len(u)
    if batch:
        yield batch


def join_masked(unit: Sequence[MaskedDocument]) -> MaskedDocument:
    """One document of a group's masked records, joined by :data:`SEPARATOR`; its id is the group's."""
    first = unit[0]
    styles = {d.style for d in unit}
    if len(styles) > 1:
        raise VeilError(f"group {first.group!r} mixes placeholder styles ({', '.join(sorted(styles))})")
    parts: list[str] = []
    placeholders: list[Placeholder] = []
    pos = 0
    for i, d in enumerate(unit):
        if i:
            parts.append(SEPARATOR)
            pos += len(SEPARATOR)
        placeholders += [replace(p, start=p.start + pos, end=p.end + pos) for p in d.placeholders]
        parts.append(d.text)
        pos += len(d.text)
    return MaskedDocument(str(first.group), "".join(parts), tuple(placeholders), first.style, first.person,
                          first.group, {})


def split_filled(unit: Sequence[MaskedDocument], joined: MaskedDocument, filled: FilledDocument) -> list[FilledDocument]:
    """The group's filled document cut back into its records (see the module docstring)."""
    masked = joined.text
    markers = find_markers(masked)
    subs = filled.substitutions
    # the masked-text span of every substitution, walking the markers left to right (a merged [MASK] run
    # is one substitution spanning several markers)
    spans: list[tuple[int, int]] = []
    j = 0
    for s in subs:
        while j < len(markers) and masked[markers[j][0]:markers[j][0] + len(s.placeholder)] != s.placeholder:
            j += 1
        if j == len(markers):
            raise VeilError(f"group {joined.id!r}: substitution {s.placeholder!r} matches no marker of the masked text")
        start = markers[j][0]
        spans.append((start, start + len(s.placeholder)))
        while j < len(markers) and markers[j][0] < start + len(s.placeholder):
            j += 1
    # walk the records left to right: between substitutions the filled text is the unescaped masked text
    out: list[FilledDocument] = []
    k = 0  # the next substitution
    m_pos = f_pos = 0  # a masked-text position outside every marker, and its place in the filled text
    rec_start = 0
    for i, d in enumerate(unit):
        m_end = rec_start + len(d.text)
        f_start = f_pos if i else 0
        mine: list[Substitution] = []
        while k < len(subs) and spans[k][0] < m_end:
            s = subs[k]
            mine.append(Substitution(d.id, s.placeholder, s.key, s.label, s.substitute, s.start - f_start,
                                     s.end - f_start))
            m_pos, f_pos = spans[k][1], s.end
            k += 1
        f_end = f_pos + len(unescape(masked[m_pos:m_end]))
        if i < len(unit) - 1:
            if filled.text[f_end:f_end + len(SEPARATOR)] != SEPARATOR:
                raise VeilError(f"group {joined.id!r}: the filled text does not keep the record separator after "
                                f"record {d.id!r}; cannot cut it back into records")
        elif f_end != len(filled.text):
            raise VeilError(f"group {joined.id!r}: the filled text is {len(filled.text)} characters, its records "
                            f"{f_end}; cannot cut it back into records")
        out.append(FilledDocument(d.id, filled.text[f_start:f_end], tuple(mine), d.person, d.group, dict(d.meta)))
        m_pos, f_pos = m_end + len(SEPARATOR), f_end + len(SEPARATOR)
        rec_start = m_end + len(SEPARATOR)
    if k != len(subs):
        raise VeilError(f"group {joined.id!r}: {len(subs) - k} substitution(s) fall outside every record")
    return out
