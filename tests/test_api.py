"""The Python API (veil/api.py, veil/__init__.py): strings in, strings out, batches stream."""

from __future__ import annotations

import re
import subprocess
import sys
import types

import pytest

import veil
from veil.mask.placeholders import MARKER_RE

CALL = "Hi, it's m-a-r-i-a. My number is (415) 555-0199, zip 94110, card 4111 1111 1111 1111 expiring 09/27."
PERSONAL = ["m-a-r-i-a", "(415) 555-0199", "94110", "4111 1111 1111 1111", "09/27"]


def test_import_veil_is_light_and_lists_its_api():
    code = ("import sys, veil; heavy = [m for m in ('torch', 'spacy', 'faker', 'presidio_analyzer', 'transformers') "
            "if m in sys.modules]; assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True)
    for name in ("mask", "fill", "anonymize", "Document", "Span", "MaskedDocument", "FilledDocument", "Placeholder",
                 "MaskingEngine", "Filler", "registry", "VeilError"):
        assert name in dir(veil) and getattr(veil, name) is not None, name
    with pytest.raises(AttributeError):
        veil.no_such_name  # noqa: B018


def test_anonymize_string_list_and_stream():
    out = veil.anonymize(CALL, maskers=["dlp"], seed=0)
    assert isinstance(out, str)
    assert not MARKER_RE.search(out)
    assert not any(p in out for p in PERSONAL), out
    assert re.search(r"\(\d{3}\) \d{3}-\d{4}", out) and re.search(r"card \d{4} \d{4} \d{4} \d{4} expiring \d\d/\d\d", out)
    many = veil.anonymize([CALL, CALL, "nothing personal here"], maskers=["dlp"], seed=0)
    assert isinstance(many, list) and len(many) == 3 and many[2] == "nothing personal here"
    assert many[0] == out and many[1] != out  # texts are documents: independent draws per position
    stream = veil.anonymize((t for t in [CALL] * 3), maskers=["dlp"], batch_size=2, seed=0)
    assert isinstance(stream, types.GeneratorType)
    assert list(stream) == veil.anonymize([CALL] * 3, maskers=["dlp"], seed=0)
    assert veil.anonymize([], maskers=["dlp"]) == []


def test_mask_gives_text_and_spans_and_fill_takes_them_or_plain_masked_text():
    m = veil.mask("zip 94110, again 94110, and 10001", maskers=["dlp"])
    assert m.text == "zip [NUMBER_1], again [NUMBER_1], and [NUMBER_2]"
    assert [(p.label, p.key, p.shape) for p in m.placeholders] == [("NUMBER", "NUMBER_1", "ddddd")] * 2 + [
        ("NUMBER", "NUMBER_2", "ddddd")]
    filled = veil.fill(m, details=True)
    a, b, c = (s.substitute for s in filled.substitutions)
    assert a == b != c and re.fullmatch(r"\d{5}", a)
    assert filled.text == f"zip {a}, again {a}, and {c}"
    plain = veil.fill(["Hello [PERSON_NAME_1], [PERSON_NAME_1]!", "[MASK] is here"])
    assert not any(MARKER_RE.search(t) for t in plain)
    name = plain[0][len("Hello "):plain[0].index(",")]
    assert plain[0] == f"Hello {name}, {name}!"
    assert veil.mask(["a", "b"], maskers=["dlp"], placeholder="mask")[1].id == "1"


def test_the_privacy_boundary_and_clear_errors():
    with pytest.raises(TypeError, match="never original text"):
        veil.fill([veil.Document("1", CALL)])
    with pytest.raises(veil.VeilError, match="unknown masker 'nope'"):
        veil.mask("x", maskers=["nope"])
    with pytest.raises(veil.VeilError, match="unknown filler"):
        veil.fill("[MASK]", filler="nope")
    with pytest.raises(veil.VeilError, match="placeholder style"):
        veil.mask("x", maskers=["dlp"], placeholder="stars")
    with pytest.raises(veil.VeilError, match="not run"):
        veil.mask("x", maskers=["dlp"], options={"allow_list": {}})
    with pytest.raises(TypeError):
        veil.mask(42)


@pytest.mark.parametrize("call", [veil.anonymize, veil.mask, veil.fill])
@pytest.mark.parametrize("value, message", [
    ({"text": "Call John Smith", "id": "7"}, "got a dict; pass its text"),
    (b"Call John Smith", "expected text, got bytes: decode it first"),
    (bytearray(b"Call John Smith"), "expected text, got bytes"),
])
def test_dicts_and_bytes_are_refused_at_the_call_before_any_model_loads(call, value, message, monkeypatch):
    """Issue 32 item 8: a dict was anonymised key by key; bytes gave a generator that failed when consumed."""
    import veil.api

    monkeypatch.setattr(veil.api, "masking_engine", lambda *a, **k: pytest.fail("an engine was built"))
    monkeypatch.setattr(veil.api, "_filler", lambda *a, **k: pytest.fail("a filler was built"))
    with pytest.raises(TypeError, match=message):
        call(value)  # raised here, not when a result is consumed


@pytest.mark.slow
@pytest.mark.parametrize("value", ["JOHN_SMITH", "MARIA", "JSMITH1985", "S_M_I_T_H"])
def test_personal_data_in_all_caps_brackets_is_masked_by_the_default_maskers(value):
    """Issue 32 item 7 with the real default maskers: bracketed or not, the value is masked."""
    for text in (f"Please call [{value}] tomorrow.", f"Please call {value} tomorrow."):
        masked = veil.mask(text).text
        assert value not in masked and "\\" not in masked, masked
        assert value not in veil.anonymize(text)


def test_groups_keep_the_callers_nesting_empty_groups_included():
    """Issue 39: ``[[], [t], []]`` gave one group; results no longer lined up with the calls."""
    text = "call me at (415) 555-0199"
    out = veil.anonymize([[], [text], []], maskers=["dlp"], seed=0)
    assert len(out) == 3 and out[0] == [] and out[2] == [] and len(out[1]) == 1
    assert "555-0199" not in out[1][0]
    masked = veil.mask([[text], [], [text, text]], maskers=["dlp"])
    assert [len(g) for g in masked] == [1, 0, 2]
    assert [len(g) for g in veil.fill(masked, seed=0)] == [1, 0, 2]
    assert veil.anonymize([[], []], maskers=["dlp"]) == [[], []]


@pytest.mark.parametrize("texts", [
    "Maria Lopez, card 4111 1111 1111 1111",
    ["Maria Lopez, card 4111 1111 1111 1111", "nothing here"],
    [["Maria Lopez"], ["card 4111 1111 1111 1111"]],
])
def test_fill_refuses_texts_that_were_never_masked_before_a_filler_is_built(texts, monkeypatch):
    """Issue 39: veil.fill handed never-masked texts back unchanged, card numbers and all (veil fill refuses)."""
    import veil.api

    monkeypatch.setattr(veil.api, "_filler", lambda *a, **k: pytest.fail("a filler was built"))
    with pytest.raises(veil.VeilError, match="never masked"):
        veil.fill(texts)


def test_fill_of_a_stream_is_refused_only_when_no_text_is_masked():
    with pytest.raises(veil.VeilError, match="never masked"):
        list(veil.fill(t for t in ["Maria Lopez", "4111 1111 1111 1111"]))
    # the first masked text lets the stream through, texts before it included, in order
    out = list(veil.fill((t for t in ["no names", "hi [PERSON_NAME_1]", "bye"]), seed=0))
    assert out[0] == "no names" and out[2] == "bye" and "[" not in out[1]
    assert veil.fill(["nothing to fill"], allow_unmasked=True) == ["nothing to fill"]
    assert veil.fill(veil.mask(["nothing personal"], maskers=["dlp"])) == ["nothing personal"]  # masked: nothing found
