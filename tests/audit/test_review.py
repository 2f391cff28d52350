import json

import pytest

from veil.audit import review
from veil.errors import InputError
from veil.types import Document, MaskedDocument, Placeholder

# The paper's Table 2, as annotated by a reviewer (its OCR markup removed).
TABLE2 = """Person 1: (Dunder Mifflin)[MISSED_ORGANIZATION_NAME_SPEAKER], this is [PERSON_NAME_1] (Green)[MISSED_PERSON_NAME_PARTIAL] speaking.
Person 2: Hi, this is [PERSON_NAME_2] from [ORGANIZATION_NAME_1], we just ordered a set of paper and they have worse quality than (staples)[MISSED_ORGANIZATION_NAME]. We would like to return and get refund.
Person 1: Okay, what is the order number?
Person 2: It's B. [NUMERIC] C. for A. two.
Person 1: And the email for that order?
Person 2: It's (M-K two one)[MISSED_EMAIL_PARTIAL] [EMAIL_1]
"""


def test_parse_table2_and_score_6():
    anns, plain = review.parse_annotations(TABLE2)
    assert [(a.text, a.tag) for a in anns] == [
        ("Dunder Mifflin", "MISSED_ORGANIZATION_NAME_SPEAKER"), ("Green", "MISSED_PERSON_NAME_PARTIAL"),
        ("staples", "MISSED_ORGANIZATION_NAME"), ("M-K two one", "MISSED_EMAIL_PARTIAL")]
    assert [a.line for a in anns] == [1, 1, 2, 6]
    assert plain.startswith("Person 1: Dunder Mifflin, this is [PERSON_NAME_1] Green speaking.")
    assert "[EMAIL_1]" in plain and "(" not in plain
    assert review.score_review("t2", anns).score == 6


@pytest.mark.parametrize("text, expected", [
    ("call (John)[PERSON_NAME] now", [("John", "PERSON_NAME")]),  # MISSED_ prefix optional
    ("from (Acme)[ORGANIZATION_NAME_PARTIAL]", [("Acme", "ORGANIZATION_NAME_PARTIAL")]),
    ("on (IRS dot gov)(MISSED_URL) website", [("IRS dot gov", "MISSED_URL")]),  # Table 3's form
    ("( Marc )[ MISSED_PERSON_NAME ]", [("Marc", "MISSED_PERSON_NAME")]),
    ("a note (see below) [EMAIL_ADDRESS] here", []),  # a parenthesis before a placeholder
    ("(fine)[PERSON_NAME_1]", []),  # a numbered placeholder is not a tag
    ("(really)[MASK]", []),
    ("(a) (b)[MISSED_AGE]", [("b", "MISSED_AGE")]),
    ("at (ABC (UK) Ltd)[MISSED_ORGANIZATION_NAME_SPEAKER]", [("ABC (UK) Ltd", "MISSED_ORGANIZATION_NAME_SPEAKER")]),
    ("(the firm (Acme)[MISSED_ORGANIZATION_NAME]) (UK)", [("Acme", "MISSED_ORGANIZATION_NAME")]),
    ("(the applicant (Mr (John)[MISSED_PERSON_NAME]))", [("John", "MISSED_PERSON_NAME")]),
])
def test_annotation_forms(text, expected):
    anns, _ = review.parse_annotations(text)
    assert [(a.text, a.tag) for a in anns] == expected


def test_unknown_missed_tag_is_an_error_with_line():
    with pytest.raises(InputError, match="r.txt:2.*FAVOURITE"):
        review.parse_annotations("ok\n(blue)[MISSED_FAVOURITE_COLOUR]", path="r.txt")
    with pytest.raises(InputError, match="brackets"):
        review.parse_annotations("(x)[MISSED_AGE)")


@pytest.mark.parametrize("text", [
    "x (John)[MISSED_PERSON_NAME",  # tag not closed
    "name (John\nSmith)[MISSED_PERSON_NAME]",  # annotated text across a line break
    "(a (b (c) d) e)[MISSED_PERSON_NAME]",  # two levels of parentheses inside
])
def test_an_explicit_tag_that_is_not_parsed_is_an_error_not_a_silent_zero(text):
    with pytest.raises(InputError, match="not understood"):
        review.parse_annotations(text, path="r.txt")


def test_spelling_variants_linked_by_key_count_once():
    text = "(Mark)[MISSED_PERSON_NAME_PARTIAL#mark] ... (M-A-R-K)[MISSED_PERSON_NAME_PARTIAL#mark] (Marc)[PERSON_NAME_PARTIAL#Mark]"
    anns, _ = review.parse_annotations(text)
    assert {a.key for a in anns} == {"mark"}
    r = review.score_review("d", anns)
    assert r.score == 3 and r.pieces[0].mentions == 3


def test_sample_is_seeded_and_bounded():
    docs = [Document(str(i), f"text {i}") for i in range(50)]
    a = review.sample(docs, 10, seed=1)
    assert [d.id for d in a] == [d.id for d in review.sample(docs, 10, seed=1)]
    assert [d.id for d in a] != [d.id for d in review.sample(docs, 10, seed=2)]
    assert len(review.sample(docs, 500)) == 50


def _masked(i, text, group="calls"):
    return MaskedDocument(id=f"doc{i}", text=text, placeholders=(Placeholder(0, 15, "PERSON_NAME", "PERSON_NAME_1", "t"),),
                          style="numbered", group=group)


def test_export_then_import_round_trip(tmp_path, caplog):
    masked = [_masked(1, "[PERSON_NAME_1] works at Dunder Mifflin."), _masked(2, "[PERSON_NAME_1] said hi.", "sales")]
    out = review.export_sample(masked, tmp_path / "rev", seed=3)
    files = sorted(p.name for p in out.glob("*.txt"))
    assert files == ["1.txt", "2.txt"]
    manifest = [json.loads(x) for x in (out / review.MANIFEST).read_text().splitlines()]
    assert manifest[0] == {"seed": 3, "documents": 2} and manifest[1]["id"] == "doc1"
    # the reviewer annotates document 1 only
    (out / "1.txt").write_text("[PERSON_NAME_1] works at (Dunder Mifflin)[MISSED_ORGANIZATION_NAME_SPEAKER].\n")
    risks = review.import_reviews(out)
    assert [(r.doc_id, r.group, r.score) for r in risks] == [("doc1", "calls", 2), ("doc2", "sales", 0)]
    assert "differs" not in caplog.text
    (out / "2.txt").write_text("[PERSON_NAME_1] said hello.\n")  # an edit beyond annotations
    review.import_reviews(out)
    assert "differs from the exported" in caplog.text
    with pytest.raises(Exception, match="already holds"):
        review.export_sample(masked, out)


def test_cli_review_export_and_import(tmp_path, capsys):
    from veil.cli import main

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "text": f"Write to user{i}@example.com now.", "ctx": "x"}) + "\n"
                              for i in range(6)))
    out = tmp_path / "rev"
    assert main(["audit", "review", "export", str(corpus), "--format", "jsonl", "--masker", "dlp",
                 "--sample", "3", "--seed", "7", "--out", str(out), "--group-field", "ctx"]) == 0
    capsys.readouterr()
    texts = [p.read_text() for p in sorted(out.glob("*.txt"))]
    assert len(texts) == 3 and all("[EMAIL_ADDRESS_1]" in t and "@" not in t for t in texts)
    first = sorted(out.glob("*.txt"))[0]
    first.write_text(first.read_text().replace("Write", "(Write)[MISSED_PERSON_NAME]"))
    assert main(["audit", "review", "import", str(out), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert list(res) == ["documents", "mean", "std", "p95", "max", "mean_plus_std", "pass"]
    assert res["documents"] == 3 and res["max"] == 5


# --- issue 32 item 4: the files a manifest names are confined to its folder ------------------------------
@pytest.mark.parametrize("name", ["../secret.txt", "/etc/hostname", "sub/../../secret.txt", "..", "a\\..\\b.txt"])
def test_a_manifest_cannot_name_files_outside_its_folder(tmp_path, capsys, name):
    from veil.cli import main

    (tmp_path / "secret.txt").write_text("(Jane Roe)[MISSED_PERSON_NAME] secret\n")
    out = review.export_sample([_masked(1, "[PERSON_NAME_1] said hi.")], tmp_path / "rev", seed=0)
    lines = (out / review.MANIFEST).read_text().splitlines()
    lines.append(json.dumps({"file": name, "id": "x", "group": None}))
    (out / review.MANIFEST).write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="manifest.jsonl:3: file .* (is not a file name in|leads out of) the review"):
        review.import_reviews(out)
    assert main(["audit", "review", "import", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "Jane" not in err


def test_a_link_in_the_review_folder_leading_out_is_refused(tmp_path):
    (tmp_path / "secret.txt").write_text("secret\n")
    out = review.export_sample([_masked(1, "[PERSON_NAME_1] said hi.")], tmp_path / "rev", seed=0)
    (out / "1.txt").unlink()
    (out / "1.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(InputError, match="leads out of the review folder"):
        review.import_reviews(out)
    (out / review.MANIFEST).unlink()  # without a manifest: the folder's *.txt files, confined the same way
    with pytest.raises(InputError, match="leads out of the review folder"):
        review.import_reviews(out)


@pytest.mark.parametrize("line, message", [
    ('{"file": 3, "id": "x"}', "each entry needs"), ('{"file": "1.txt"}', "each entry needs"),
    ('["file"]', "expected a JSON object"), ('"profile"', "expected a JSON object"),
])
def test_malformed_manifest_entries_are_one_located_line(tmp_path, line, message):
    out = review.export_sample([_masked(1, "[PERSON_NAME_1] said hi.")], tmp_path / "rev", seed=0)
    with (out / review.MANIFEST).open("a") as f:
        f.write(line + "\n")
    with pytest.raises(InputError, match=f"manifest.jsonl:3: {message}"):
        review.import_reviews(out)
