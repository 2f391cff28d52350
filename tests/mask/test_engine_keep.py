"""Detect and mask stage: corpus mark-up that the engine keeps verbatim (``keep``, e.g. PTB's ``<unk>``)."""

from __future__ import annotations

import json

import pytest

from veil.cli import main as veil
from veil.mask.base import Masker
from veil.mask.engine import MaskingEngine
from veil.types import Document, Span


class EveryWordMasker(Masker):
    """Masks every run of letters (so ``unk`` inside ``<unk>`` too)."""

    name = "every_word"

    def detect(self, text: str) -> list[Span]:
        import re

        return [Span(m.start(), m.end(), "WORD", self.name) for m in re.finditer(r"[a-z]+", text)]


@pytest.mark.parametrize("text, keep, expected", [
    ("mr. <unk> is chairman", ["<unk>"], "[MASK]. <unk> [MASK] [MASK]"),
    ("<unk> <unk>", ["<unk>"], "<unk> <unk>"),
    ("a <unk>x b", ["<unk>"], "[MASK] <[MASK]>[MASK] [MASK]"),  # not a whole token: masked as usual
    ("up N %", ["N"], "[MASK] N %"),
    ("the <unk> rose", [], "[MASK] <[MASK]> [MASK]"),  # without keep the letters are masked
])
def test_keep_tokens_are_never_masked(text, keep, expected):
    engine = MaskingEngine([EveryWordMasker()], style="mask", keep=keep)
    assert engine.mask([Document("1", text)])[0].text == expected


def test_a_kept_token_is_cut_out_of_a_span_that_overlaps_it():
    class Wide(Masker):
        name = "wide"

        def detect(self, text):
            return [Span(0, len(text), "WORD", self.name)]

    # cut, not dropped: a tagger's "Mr. <unk> Smith" must still mask "Smith"
    assert MaskingEngine([Wide()], style="mask", keep=["<unk>"]).mask([Document("1", "a <unk> b")])[0].text == "[MASK] <unk> [MASK]"
    assert MaskingEngine([Wide()], style="mask", keep=["<unk>"]).mask([Document("1", "a b")])[0].text == "[MASK] [MASK]"


def test_veil_mask_keep_option(tmp_path):
    src = tmp_path / "ptb.txt"
    src.write_text("the <unk> of asbestos fibers\n", encoding="utf-8")
    out = tmp_path / "masked.jsonl"
    assert veil(["mask", str(src), "-o", str(out), "--masker", "allow_list", "--keep", "<unk>", "--placeholder", "mask",
                 "--no-progress"]) == 0
    text = json.loads(out.read_text(encoding="utf-8").splitlines()[0])["text"]
    assert "<unk>" in text and "[MASK]" in text and "asbestos" not in text
