"""Train stage: the detector's gold conversation sources and the folds that keep its measurements honest.

Three gold sources, each labelled by people, none by another tagger:

- **Switchboard train conversations annotated by** ``switchboard_pii/GUIDELINES.md``
  (:data:`GOLD_FILE`: ids, text lengths and spans, never the transcripts, which come from the shared
  Switchboard folder). Each conversation falls in one fold by a hash of its id (:func:`fold_of`):
  ``frozen`` is looked at only to report, ``dev`` chooses thresholds and settings, ``train`` is trained on.
- **Schema-Guided Dialogue** service turns, their slots typed and classed by ``sgd/slot_classes.json``.
  Whole service families (:data:`UNSEEN_FAMILIES`) are never trained on: they are the unseen-domain test.
- The hand-annotated calibration conversations of earlier releases (``frames.CALIBRATION_FILE``) join
  the Switchboard gold, in the fold their hash gives them.

OPTIONAL spans (public names, topics) teach nothing either way: they become ignored stretches. Types the
tagger does not have (``NUMBER``) are ignored too.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Sequence

from veil.mask.neural.data import TYPES, Example
from veil.mask.neural.frames import CALIBRATION_FILE, GOLD_FILE, calibration_gold

SGD_TRAIN = "sgd/train.jsonl.gz"
SGD_DEV = "sgd/dev.jsonl.gz"
#: SGD service families never trained on: the unseen-domain test (food ordering, payments to named people,
#: artists and songs)
UNSEEN_FAMILIES = frozenset({"Restaurants", "Banks", "Music"})
#: switchboard_pii / SGD type -> tagger type (None: not taught, an ignored stretch)
GOLD_TO_TAGGER = {"PERSON": "PER", "LOCATION": "LOC", "ORGANIZATION": "ORG", "DATE_TIME": "DATE", "AGE": "AGE",
                  "OCCUPATION": "OCC", "DEMOGRAPHIC": "DEM", "MONEY": "MONEY", "NUMBER": None, "EMAIL": "EMAIL",
                  "ADDRESS": "ADDR", "MISC": "MISC"}
FOLDS = ("train", "dev", "frozen")


def fold_of(key: str, frozen: int = 1, dev: int = 1, buckets: int = 5) -> str:
    """The fold of a conversation or dialogue id: a stable hash into ``buckets``; the first ``frozen``
    buckets are the frozen fold, the next ``dev`` the dev fold, the rest train."""
    b = int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16) % buckets
    return "frozen" if b < frozen else "dev" if b < frozen + dev else "train"


def switchboard_gold(data: Path, folds: Sequence[str] = FOLDS, files: Sequence[Path] | None = None) -> list:
    """The annotated Switchboard train utterances of ``folds`` as switchboard_pii gold documents (text from
    ``data``), from :data:`GOLD_FILE` and the calibration file."""
    out = []
    seen: set[str] = set()
    for path in files if files is not None else (GOLD_FILE, CALIBRATION_FILE):
        if not Path(path).is_file():
            continue
        for gd in calibration_gold(data, Path(path)):
            if gd.doc.id in seen or fold_of(str(gd.doc.group)) not in folds:
                continue
            seen.add(gd.doc.id)
            out.append(gd)
    return out


def sgd_gold(data: Path, split: str = "dev", families: frozenset[str] | None = None,
             exclude: frozenset[str] = frozenset(), folds: Sequence[str] = FOLDS) -> list:
    """SGD turns of ``split`` (train/dev) as gold documents: of ``families`` (all if None) but none of ``exclude``;
    for dev, only the dialogues whose hash falls in ``folds``."""
    from veil.mask.gold import read_sgd, sgd_family

    docs = read_sgd(data / (SGD_TRAIN if split == "train" else SGD_DEV), families)  # every service of these families
    return [gd for gd in docs
            if not any(sgd_family(s) in exclude for s in gd.doc.meta.get("services") or [])
            and (split == "train" or fold_of(str(gd.doc.group)) in folds)]


def _windows(golds: list, n: int, rng: random.Random, source: str, max_turns: int = 4) -> list[Example]:
    """``n`` examples of one to ``max_turns`` consecutive utterances of one conversation (a line each), gold
    spans as tagger types, OPTIONAL and untyped spans ignored."""
    by_conv: dict[str, list] = {}
    for gd in golds:
        by_conv.setdefault(str(gd.doc.group), []).append(gd)
    convs = sorted(by_conv)
    out: list[Example] = []
    while convs and len(out) < n:
        utts = by_conv[rng.choice(convs)]
        k = rng.randint(1, max_turns)
        i = rng.randrange(max(1, len(utts) - k + 1))
        text, spans, ignore, pos = [], [], [], 0
        for gd in utts[i:i + k]:
            for g in gd.spans:
                kind = GOLD_TO_TAGGER.get(g.label)
                if g.identifier_type == "OPTIONAL" or kind is None:
                    ignore.append((pos + g.start, pos + g.end))
                else:
                    spans.append((pos + g.start, pos + g.end, kind))
            text.append(gd.doc.text)
            pos += len(gd.doc.text) + 1
        out.append(Example("\n".join(text), tuple(spans), frozenset(TYPES), source, tuple(ignore)))
    return out


def gold_conversation_examples(data: Path, switchboard: int, sgd: int, seed: int,
                               unseen: frozenset[str] = UNSEEN_FAMILIES) -> list[Example]:
    """``switchboard`` windows of the train fold of the annotated Switchboard conversations and ``sgd`` windows
    of SGD train dialogues outside the ``unseen`` families."""
    rng = random.Random(seed)
    out: list[Example] = []
    if switchboard > 0:
        gold = switchboard_gold(data, ("train",))
        out += _windows(gold, switchboard, rng, "switchboard_gold")
    if sgd > 0:
        out += _windows(sgd_gold(data, "train", exclude=unseen), sgd, rng, "sgd", max_turns=3)
    return out
