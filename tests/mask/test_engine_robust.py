"""Detect and mask stage: user text that defeats detectors (issue 19, cases 8 and 9).

Marker look-alikes in user text are never masked inside (decided once, in the engine, for every
masker); detectors see NFC text without invisible characters, and masks land on the original.
"""

from __future__ import annotations

import re

import pytest

from veil.mask.allow_list import AllowListMasker
from veil.mask.base import Masker
from veil.mask.dlp import DLPMasker
from veil.mask.engine import MaskingEngine
from veil.mask.normalise import detection_view
from veil.mask.placeholders import unescape
from veil.run.components import build_engine
from veil.types import Document, Span


class NameListMasker(Masker):
    """A stand-in for a name tagger: tags the listed names (in NFC) as whole words."""

    name = "names"

    def __init__(self, names=("John Smith", "García", "Smith")) -> None:
        self._re = re.compile(r"\b(?:" + "|".join(sorted(names, key=len, reverse=True)) + r")\b")

    def detect(self, text: str) -> list[Span]:
        return [Span(m.start(), m.end(), "PERSON_NAME", self.name) for m in self._re.finditer(text)]


class WideMasker(Masker):
    """Masks the whole text (as a tagger that takes a look-alike into a name would)."""

    name = "wide"

    def detect(self, text: str) -> list[Span]:
        return [Span(0, len(text), "PERSON_NAME", self.name)]


def masked(engine: MaskingEngine, text: str) -> str:
    return engine.mask([Document("1", text)])[0].text


@pytest.mark.parametrize("text", [
    "ask for [PERSON_NAME_1] at the desk",
    "from [LOCATION_2], see [MASK]",
    "my [USERNAME] and [mask] and [\\MASK]",
    "[MASK_] is not a marker",
])
@pytest.mark.parametrize("maskers", [["dlp"], ["allow_list"], ["dlp", "allow_list"]])
def test_lookalikes_are_never_masked_inside(text, maskers):
    engine = build_engine(maskers)
    out = masked(engine, text)
    for lookalike in re.findall(r"\[[^\]]*\]", text):
        assert lookalike in unescape(out), (maskers, out)


# issue 32 item 7: only veil's own forms are look-alikes; anything else in brackets is text, masked like text
@pytest.mark.parametrize("bracketed, bare", [
    ("[JOHN_SMITH]", "JOHN_SMITH"), ("[MARIA]", "MARIA"), ("[JSMITH1985]", "JSMITH1985"),
    ("[S_M_I_T_H]", "S_M_I_T_H"), ("[MASK_1]", "MASK_1"), ("[PERSON_NAME_5551234]", "PERSON_NAME_5551234"),
])
def test_personal_data_in_brackets_is_text_and_masked_like_the_same_value_without_them(bracketed, bare):
    from veil.markers import escape, lookalike_spans

    assert lookalike_spans(bracketed) == [] and escape(bracketed) == bracketed
    names = NameListMasker(names=("JOHN_SMITH", "MARIA", "S_M_I_T_H"))
    engine = MaskingEngine([names, DLPMasker(detectors=["username", "number"])], style="numbered")
    with_brackets, without = masked(engine, f"call {bracketed} now"), masked(engine, f"call {bare} now")
    assert bare not in with_brackets and bare not in without, (with_brackets, without)
    assert with_brackets == "call [" + without[len("call "):-len(" now")] + "] now"


def test_a_users_literal_placeholder_stays_protected_and_nothing_else_hides_behind_it():
    from veil.markers import escape, unescape

    engine = MaskingEngine([NameListMasker(names=("Maria",)), DLPMasker(detectors=["username"])], style="numbered")
    out = masked(engine, "[PERSON_NAME_1] is Maria, [PERSON_NAME_1Maria] too")
    assert out.startswith(escape("[PERSON_NAME_1]") + " is [PERSON_NAME_1]")
    assert "Maria" not in unescape(out)  # the bracketed look-alike of another shape is text: masked


def test_username_detector_no_longer_masks_inside_a_lookalike():
    # before: "[PERSON_NAME_1]" -> "[[USERNAME_1]]", which a filler turned into "[kristinchapman]"
    out = masked(MaskingEngine([DLPMasker(detectors=["username"])], style="numbered"),
                 "user name [PERSON_NAME_1] and user ID jsmith1985")
    assert unescape(out) == "user name [PERSON_NAME_1] and user ID [USERNAME_1]"


def test_a_span_over_a_lookalike_is_cut_around_it():
    # the look-alike stays; the words beside it are still masked
    out = masked(MaskingEngine([WideMasker()], style="mask"), "Bob [PERSON_NAME_1] Smith")
    assert unescape(out) == "[MASK] [PERSON_NAME_1] [MASK]"


@pytest.mark.parametrize("text, expected", [
    ("Jo\u00adhn Smith called", "[PERSON_NAME_1] called"),  # soft hyphen
    ("Jo\u200bhn Smith called", "[PERSON_NAME_1] called"),  # zero-width space
    ("Jo\u200dhn Sm\u200cith called", "[PERSON_NAME_1] called"),  # zero-width joiner / non-joiner
    ("Mr Garci\u0301a called", "Mr [PERSON_NAME_1] called"),  # decomposed accent
    ("Mr Garc\u00eda called", "Mr [PERSON_NAME_1] called"),  # composed: unchanged
    ("\u00adSmith, Garci\u0301a and Smith\u00ad.", "\u00ad[PERSON_NAME_1], [PERSON_NAME_2] and [PERSON_NAME_1]."),
])
def test_invisible_characters_and_decomposed_accents_do_not_split_names(text, expected):
    assert masked(MaskingEngine([NameListMasker()], style="numbered"), text) == expected


def test_non_latin_names_are_masked_by_default_dlp():
    out = masked(MaskingEngine([DLPMasker()], style="numbered"), "Mr שמעון פרס and Иван Петров agreed")
    assert out == "Mr [NON_LATIN_NAME_1] and [NON_LATIN_NAME_2] agreed"


def test_allow_list_sees_the_composed_word():
    # "café" decomposed is one word to the allow list, not "cafe" + a stray accent
    out = masked(MaskingEngine([AllowListMasker(words=["the", "cafe", "café"])]), "the cafe\u0301")
    assert out == "the cafe\u0301"


@pytest.mark.parametrize("text", [
    "plain ascii", "Garc\u00eda", "Garci\u0301a", "Jo\u00adhn", "\u00ad\u00adx\u0301\u0302y\u200b",
    "\u212b ohm \u2126", "e\u0301\u0301\u00ad\u0301 z", "",
])
def test_detection_view_maps_every_view_span_back(text):
    view, offsets = detection_view(text)
    if offsets is None:
        assert view == text
        return
    assert "\u00ad" not in view and "\u200b" not in view
    for a in range(len(view)):
        for b in range(a + 1, len(view) + 1):
            oa, ob = offsets.start(a), offsets.end(b)
            assert 0 <= oa < ob <= len(text)
            # the original stretch normalises to the view stretch (up to dropped characters at its edges)
            from veil.mask.normalise import detection_view as dv
            assert view[a:b] in dv(text[oa:ob])[0]


def test_a_masker_that_releases_the_gil_runs_beside_the_others_with_the_same_result():
    """The engine runs such a masker in a thread; the spans and their order are those of a serial run."""
    import threading

    from veil.mask.base import Masker
    from veil.mask.engine import MaskingEngine
    from veil.types import Document, Span

    class Word(Masker):
        def __init__(self, word, label, threaded):
            self.word, self.label, self.releases_gil, self.threads = word, label, threaded, set()

        def detect(self, text):
            self.threads.add(threading.get_ident())
            i = text.find(self.word)
            return [Span(i, i + len(self.word), self.label, self.label)] if i >= 0 else []

    docs = [Document(str(i), t) for i, t in enumerate(["call anna at home", "anna", "home alone", ""])]
    serial = MaskingEngine([Word("anna", "PERSON_NAME", False), Word("home", "LOCATION", False)]).detect(docs)
    tagger, other = Word("anna", "PERSON_NAME", True), Word("home", "LOCATION", False)
    assert MaskingEngine([tagger, other]).detect(docs) == serial
    assert tagger.threads and threading.get_ident() not in tagger.threads  # it did run in another thread
    assert other.threads == {threading.get_ident()}
