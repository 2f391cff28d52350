"""ASR evaluation stage: text forms — what is spoken, what a hypothesis looks like to an LM, and the WER normalisation.

One normalisation for reference and hypothesis: Whisper's English text normaliser (the
``whisper-normalizer`` package: lower case, no punctuation, spelled-out numbers as digits, British
spellings made American, fillers such as "uh" / "um" dropped, contractions expanded), so that a
recogniser is not charged for writing "Mr." where the reference says "mister".

Penn Treebank text (``text_form: ptb``) needs two decisions. Sentences holding ``<unk>`` are not
spoken (no one can say an unknown word; ``asr.skip_tokens``). ``N`` (PTB's stand-in for every
number) is spoken as a number 2..99 drawn per sentence from a seeded generator, written in digits
in the reference ("a N number" is spoken and scored as "a 42 number"); a hypothesis shown to the
downstream LMs gets PTB's form back (digits -> ``N``, "don't" -> "do n't", no punctuation), so an
LM adapted on PTB text scores hypotheses in the form it learnt.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from typing import Any

_CLITIC = re.compile(r"^(?:'s|'re|'ve|'d|'ll|'m|n't|')$")


@lru_cache(maxsize=1)
def _normaliser() -> Any:
    from whisper_normalizer.english import EnglishTextNormalizer

    return EnglishTextNormalizer()


def normalise(text: str) -> str:
    """The text as WER compares it (reference and hypothesis alike)."""
    return " ".join(_normaliser()(text).split())


def spoken_text(text: str, form: str, seed: int | str = 0) -> str:
    """What the synthesiser says (and the reference the WER is measured against) for a corpus sentence."""
    if form == "plain":
        return " ".join(text.split())
    rng = random.Random(f"{seed}:{text}")
    out: list[str] = []
    for tok in text.split():
        if tok == "N":
            tok = str(rng.randint(2, 99))
        if out and _CLITIC.match(tok):  # "do n't" -> "don't", "abc 's" -> "abc's"
            out[-1] += tok
        elif out and tok == "%" and out[-1][-1:].isdigit():
            out[-1] += "%"
        elif out and out[-1] == "$" and tok[:1].isdigit():
            out[-1] += tok
        else:
            out.append(tok)
    return " ".join(out)


_NUMBER = re.compile(r"^\$?\d[\d,.]*(?:%|st|nd|rd|th|s)?$")


def lm_text(hypothesis: str, form: str) -> str:
    """A recogniser's hypothesis in the corpus's own form, as the downstream LMs are scored on it."""
    hypothesis = " ".join(hypothesis.split())
    if form == "plain":
        return hypothesis
    words: list[str] = []
    for tok in re.sub(r"[^\w'$%.,-]+", " ", hypothesis.lower()).replace("-", " ").split():
        tok = tok.strip(".,'")
        if not tok:
            continue
        if _NUMBER.match(tok):
            words += (["$"] if tok.startswith("$") else []) + ["N"] + (["%"] if tok.endswith("%") else [])
            continue
        tok = tok.replace(",", "").replace(".", "")
        if tok.endswith("n't") and len(tok) > 3:  # PTB: "do n't", "ca n't", "wo n't"
            words += [tok[:-3], "n't"]
        elif m := re.match(r"^(.+?)('s|'re|'ve|'d|'ll|'m)$", tok):
            words += [m.group(1), m.group(2)]
        elif tok:
            words.append(tok)
    return " ".join(words)
