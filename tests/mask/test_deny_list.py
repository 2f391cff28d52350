import pytest

from veil.errors import InputError, VeilError
from veil.mask.deny_list import DenyListMasker


@pytest.mark.parametrize("text, expected", [
    ("Dunder Mifflin called", [("Dunder Mifflin", "ORGANIZATION_NAME")]),
    ("DUNDER\nmifflin called", [("DUNDER\nmifflin", "ORGANIZATION_NAME")]),
    ("Dunder called", [("Dunder", "CUSTOM")]),  # the shorter term alone
    ("Dundermifflin called", []),  # whole words only
    ("ask for Green.", [("Green", "PERSON_NAME")]),
    ("greenery", []),
])
def test_detect(text, expected):
    m = DenyListMasker({"Dunder Mifflin": "ORGANIZATION_NAME", "Dunder": "CUSTOM", "Green": "PERSON_NAME"})
    assert [(text[s.start:s.end], s.label) for s in m.detect(text)] == expected


def test_terms_file(tmp_path):
    f = tmp_path / "terms.tsv"
    f.write_text("# reviewed\nACME Corp\tORGANIZATION_NAME\nzorblax\n", encoding="utf-8")
    m = DenyListMasker(terms_file=f)
    assert [s.label for s in m.detect("acme corp and Zorblax")] == ["ORGANIZATION_NAME", "CUSTOM"]
    f.write_text("x\tlower\n")
    with pytest.raises(InputError, match="type 'lower' is not one of veil's placeholder labels"):
        DenyListMasker(terms_file=f)
    with pytest.raises(VeilError, match="no terms"):
        DenyListMasker()
