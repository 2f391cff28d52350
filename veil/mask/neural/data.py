"""Train stage: the training and held-out sets of the neural entity detector (gold NER data + generated call dialogues).

Every example is a text with character spans of one of :data:`TYPES` and the set of types its
source annotates (``known``): CoNLL-2003 marks no dates, so a date there is "not annotated", not
"not personal"; the trainer lets each example's loss speak only about the types its source knows.

Held out, never trained on (the detector is scored on these): TAB's ``dev`` documents, the
Presidio synthetic records that ``veil.mask.gold.presidio_split`` holds out (split by template, the
one place that split is defined), CoNLL-2003 ``eng.testa`` and WNUT-17 dev (they are separate
files; only ``eng.train`` and ``wnut17train.conll`` are read for training).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from veil.mask.gold import GoldDocument, presidio_split, read_gold

#: the detector's entity types (BIO over these)
TYPES = ("PER", "ORG", "LOC", "ADDR", "DATE", "ID", "PHONE", "EMAIL", "URL", "QUANT", "DEM", "MISC")
#: detector type -> infoType of the spans it reports (the DLP names the rest of veil uses)
TYPE_TO_LABEL = {"PER": "PERSON_NAME", "ORG": "ORGANIZATION_NAME", "LOC": "LOCATION", "ADDR": "STREET_ADDRESS",
                 "DATE": "DATE", "ID": "GENERIC_ID", "PHONE": "PHONE_NUMBER", "EMAIL": "EMAIL_ADDRESS",
                 "URL": "URL", "QUANT": "QUANTITY", "DEM": "DEMOGRAPHIC", "MISC": "MISC"}

CONLL_TYPES = {"PER": "PER", "ORG": "ORG", "LOC": "LOC", "MISC": "MISC"}
WNUT_TYPES = {"person": "PER", "location": "LOC", "group": "ORG", "corporation": "ORG", "product": "MISC",
              "creative-work": "MISC"}
TAB_TYPES = {"PERSON": "PER", "ORG": "ORG", "LOC": "LOC", "DATETIME": "DATE", "CODE": "ID", "DEM": "DEM",
             "QUANTITY": "QUANT", "MISC": "MISC"}
PRESIDIO_TYPES = {"PERSON": "PER", "ORGANIZATION": "ORG", "GPE": "LOC", "STREET_ADDRESS": "ADDR",
                  "ZIP_CODE": "ADDR", "CREDIT_CARD": "ID", "US_SSN": "ID", "IBAN_CODE": "ID",
                  "US_DRIVER_LICENSE": "ID", "IP_ADDRESS": "ID", "US_BANK_NUMBER": "ID", "US_PASSPORT": "ID",
                  "PHONE_NUMBER": "PHONE", "EMAIL_ADDRESS": "EMAIL", "DOMAIN_NAME": "URL", "DATE_TIME": "DATE",
                  "AGE": "QUANT", "NRP": "DEM", "TITLE": None}

#: files under the shared data folder
CONLL_TRAIN = "conll2003/eng.train"
WNUT_TRAIN = "wnut17/wnut17train.conll"
TAB_FILE = "tab/tab_train_dev.jsonl"
PRESIDIO_FILE = "presidio_synth/synth_dataset_v2_first750.json"


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    spans: tuple[tuple[int, int, str], ...]  # (start, end, type in TYPES)
    known: frozenset[str]  # the types the source annotates
    source: str


def tab_heldout(gd: GoldDocument) -> bool:
    return gd.doc.meta.get("dataset_type") == "dev"


def _examples(golds: Iterable[GoldDocument], mapping: dict[str, str | None], source: str,
              tab: bool = False) -> list[Example]:
    known = frozenset(t for t in mapping.values() if t)
    out = []
    for gd in golds:
        spans = []
        for g in gd.spans:
            kind = mapping.get(g.label)
            if kind is None or (tab and g.identifier_type == "NO_MASK"):
                continue
            spans.append((g.start, g.end, kind))
        out.append(Example(gd.doc.text, tuple(spans), known, source))
    return out


def gold_training_set(data: Path) -> list[Example]:
    """CoNLL-2003 train, WNUT-17 train, TAB train documents, Presidio synthetic train templates."""
    out = _examples(read_gold(data / CONLL_TRAIN, "conll"), CONLL_TYPES, "conll")
    out += _examples(read_gold(data / WNUT_TRAIN, "conll"), WNUT_TYPES, "wnut")
    out += _examples([g for g in read_gold(data / TAB_FILE, "tab") if not tab_heldout(g)], TAB_TYPES, "tab",
                     tab=True)
    out += _examples(presidio_split(read_gold(data / PRESIDIO_FILE, "presidio"))[0], PRESIDIO_TYPES, "presidio")
    return out


def conll_documents_as_sentences(examples: Sequence[Example]) -> list[Example]:
    """Split multi-line texts (CoNLL documents) into one example per line: shorter windows pack better."""
    out = []
    for ex in examples:
        if "\n" not in ex.text or ex.source not in ("conll", "wnut"):
            out.append(ex)
            continue
        pos = 0
        for line in ex.text.split("\n"):
            end = pos + len(line)
            spans = tuple((s - pos, e - pos, k) for s, e, k in ex.spans if s >= pos and e <= end)
            if line.strip():
                out.append(Example(line, spans, ex.known, ex.source))
            pos = end + 1
    return out


def shuffled(examples: Sequence[Example], seed: int) -> list[Example]:
    out = list(examples)
    random.Random(seed).shuffle(out)
    return out
