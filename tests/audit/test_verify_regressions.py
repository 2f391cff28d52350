"""`veil verify`: the failures a probe found, each held (grouped survival, normal forms, everyday words,
chance matches, time linear in the length of a document)."""

import json
import random
import time

import pytest

from veil.audit.verify import find_survivors, removed, verify
from veil.audit.verify_chance import poisson_tail
from veil.audit.verify_match import everyday
from veil.cli import main


def _jsonl(path, recs):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    return path


def _call(tmp_path, record_group: bool):
    """A call of three utterances: the tagger masked 'Hope Ashworth' in the first and left 'Hope' in the second."""
    texts = ["This is Hope Ashworth from Dallas.", "Thanks, Hope, I will call back.", "I hope so, bye."]
    orig = _jsonl(tmp_path / "orig.jsonl", [{"id": f"u{i}", "call": "c1", "text": t} for i, t in enumerate(texts)])
    ph = {"start": 8, "end": 23, "label": "PERSON_NAME", "key": "PERSON_NAME_1", "technique": "neural_tagger",
          "shape": "W W"}
    masked = _jsonl(tmp_path / "masked.jsonl", [
        {"id": "u0", "call": "c1", "text": "This is [PERSON_NAME_1] from Dallas.", "placeholders": [ph],
         "style": "numbered"},
        *({"id": f"u{i}", "call": "c1", "text": t, "placeholders": [], "style": "numbered"}
          for i, t in enumerate(texts) if i)])
    if record_group:
        (tmp_path / "masked.jsonl.veil.json").write_text(json.dumps(
            {"fields": {"text": "text", "id": "id", "person": None, "group": "call"}}))
    filled = _jsonl(tmp_path / "filled.jsonl", [{"id": "u0", "call": "c1", "text": "This is Jane Miller from Dallas."},
                                                *({"id": f"u{i}", "call": "c1", "text": t}
                                                  for i, t in enumerate(texts) if i)])
    _jsonl(tmp_path / "filled.jsonl.substitutions.jsonl", [
        {"id": "u0", "placeholder": "[PERSON_NAME_1]", "key": "PERSON_NAME_1", "label": "PERSON_NAME",
         "substitute": "Jane Miller", "start": 8, "end": 19}])
    return orig, filled, masked


def test_a_value_left_in_another_utterance_of_the_call_is_found(tmp_path, capsys):
    orig, filled, masked = _call(tmp_path, record_group=False)
    args = ["verify", str(orig), str(filled), "--masked", str(masked), "--json"]
    assert main(args) == 0  # record by record, as before: "Hope" of u0 is not looked for in u1
    assert main(args + ["--group-field", "call"]) == 1
    r = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert [(s["doc"], s["form"], s["start"]) for s in r["survivors"]] == [("u1", "part", 8)]  # not "I hope so"
    assert r["group_field"] == "call"


def test_the_group_field_the_masking_run_recorded_is_used(tmp_path, capsys):
    orig, filled, masked = _call(tmp_path, record_group=True)
    assert main(["verify", str(orig), str(filled), "--masked", str(masked)]) == 1
    out = capsys.readouterr().out
    assert "in the whole of each 'call' group" in out and "FOUND 1 surviving" in out


def test_the_offsets_veil_writes_beside_a_substitute_are_no_text(tmp_path, capsys):
    # a substitution's end at 111 is no number "one, one, one" (a stutter the masking took for a number)
    orig = _jsonl(tmp_path / "orig.jsonl", [{"id": "u0", "text": "well one, one, one of them " + "x" * 84 + " Ohio"}])
    ph = [{"start": 0, "end": 4, "label": "NUMBER", "key": "NUMBER_1", "technique": "dlp", "shape": "w"}]
    masked_text = "well [NUMBER_1] of them " + "x" * 84 + " Ohio"
    masked = _jsonl(tmp_path / "masked.jsonl", [{"id": "u0", "text": masked_text, "style": "numbered", "placeholders": [
        {**ph[0], "start": 5, "end": 15}]}])
    filled_text = "well two of them " + "x" * 84 + " Ohio"
    filled = _jsonl(tmp_path / "filled.jsonl", [{"id": "u0", "text": filled_text}])
    _jsonl(tmp_path / "filled.jsonl.substitutions.jsonl", [
        {"id": "u0", "placeholder": "[NUMBER_1]", "key": "NUMBER_1", "label": "NUMBER", "substitute": "two",
         "start": 108, "end": 111}])
    assert main(["verify", str(orig), str(filled), "--masked", str(masked)]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("value, label, text", [
    ("(415) 555-0199", "PHONE_NUMBER", "call (４１５) ５５５-０１９９ now"),  # fullwidth (compatibility forms)
    ("94110", "ZIP", "the zip is ٩٤١١٠ there"),  # Arabic-Indic digits
    ("94110", "ZIP", "the zip is ९४११० there"),  # Devanagari digits
    ("Maria Lopez", "PERSON_NAME", "ask Mаria Lоpez about it"),  # Cyrillic а and о
    ("Maria Lopez", "PERSON_NAME", "ask ΜΑRΙΑ LΟΡΕΖ about it"),  # Greek capitals
    ("José García", "PERSON_NAME", "ask Jose Garcia about it"),  # accents stripped
    ("Jose Garcia", "PERSON_NAME", "ask José García about it"),  # accents added
    ("José García", "PERSON_NAME", "ask Jose\u0301 Garci\u0301a about it"),  # decomposed
    ("José García", "PERSON_NAME", "ask Jo\u00adsé Gar\u200bcía about it"),  # invisible characters inside
    ("(415) 555-0199", "PHONE_NUMBER", "call four 1 five 555 0199 now"),  # spoken and written digits mixed
    ("(415) 555-0199", "PHONE_NUMBER", "call four one five, five five five, oh one nine nine now"),
    ("four one five five five five", "PHONE_NUMBER", "call 415 555 now"),
])
def test_every_form_the_masker_normalises_is_found(value, label, text):
    found = find_survivors(text, removed([(label, value)])[0], "d", "text")
    assert len(found) == 1 and found[0].form in ("normalised", "spoken"), found
    assert text[found[0].start:found[0].end].strip() == text[found[0].start:found[0].end]


@pytest.mark.parametrize("value, label, text, cased, expected", [
    ("Mark", "PERSON_NAME", "I'll mark it down for you.", True, 0),  # the verb
    ("Mark", "PERSON_NAME", "Mark my words, it works.", True, 0),  # a sentence start capitalises any word
    ("Mark", "PERSON_NAME", "and then Mark called back", True, 1),  # the name
    ("Mark Smith", "PERSON_NAME", "so I'll mark that", True, 0),
    ("Mark Smith", "PERSON_NAME", "so Mark will call", True, 1),
    ("Mark Smith", "PERSON_NAME", "ask mark smith", True, 1),  # the whole value, whatever its case
    ("mark", "PERSON_NAME", "ok i will mark it down", False, 0),  # uncased text: only after a naming cue
    ("mark", "PERSON_NAME", "hi my name is mark", False, 1),
    ("maria.lopez@gmail.com", "EMAIL_ADDRESS", "I use gmail, and yahoo too", True, 0),  # providers, not values
    ("m.chang@yahoo.com", "EMAIL_ADDRESS", "is it yahoo dot com", True, 0),
    ("maria.lopez@gmail.com", "EMAIL_ADDRESS", "it's maria lopez there", True, 1),  # its user part
    ("teaching", "OCCUPATION", "I like teaching kids", True, 0),  # an everyday word is a value only as a name
    ("ski resorts", "MISC", "we like ski resorts a lot", True, 0),  # so is a phrase of them
    ("five or six", "AGE", "about five or six times", True, 0),
    ("late sixties", "AGE", "music of the sixties", True, 0),  # a decade is a number word, no part of an age
    ("late sixties", "AGE", "she is in her late sixties", True, 1),
    ("T I", "ORGANIZATION_NAME", "we don't, I think", True, 0),  # a contraction's tail starts no value
    ("T I", "ORGANIZATION_NAME", "we call the G T, I'm sorry", True, 0),  # nor is the "I" of "I'm" spelled
    ("Kim", "PERSON_NAME", "ask Kim's mother", True, 1),
    ("disgruntled graduate student", "OCCUPATION", "a disgruntled person", True, 0),  # no word of a job alone
    ("disgruntled graduate student", "OCCUPATION", "a disgruntled graduate student", True, 1),
    ("T I", "ORGANIZATION_NAME", "he is at T I now", True, 1),
    ("O'Brien", "PERSON_NAME", "ask O'Brien then", True, 1),
    ("Nitny Valley Symphony", "LOCATION", "the symphony was good", True, 0),  # a name's word written as a word
    ("Nitny Valley Symphony", "LOCATION", "the Nitny was good", True, 1),
    ("Subaru", "ORGANIZATION_NAME", "we had a Subaru then", True, 1),
    ("Northwind Bank", "ORGANIZATION_NAME", "the bank of Northwind", True, 1),  # a rare word of it
    ("T I", "ORGANIZATION_NAME", "Over in T, I mean for the firm", True, 0),  # the pronoun before its verb
    ("T I", "ORGANIZATION_NAME", "he is at T I, then", True, 1),
    ("A T", "ORGANIZATION_NAME", "It's a T M compatible.", True, 0),  # the article, then a letter
    ("A T", "ORGANIZATION_NAME", "It's an A T compatible.", True, 1),
    ("fifth", "DATE", "a soldier in the Fifth Special Forces Group", True, 0),  # a number word is no name
    ("night", "DATE", "what they call Saturday Night Alive", True, 0),  # a lower-case date word in a title
    ("Monday", "DATE", "the show on Monday", True, 1),
    ("night", "PERSON_NAME", "ask Night about it", True, 1),  # a name keeps the rule of names
    ("Amy", "PERSON_NAME", "when there's a, my understanding", True, 0),  # "a" + "my" is no word of "Amy"
    ("Amy", "PERSON_NAME", "it's A-M-Y, Amy", True, 2),  # spelled, and said
    ("Maria Lopez", "PERSON_NAME", "ask maria-lopez", True, 1),  # the value's words, however joined
    ("Lopez", "PERSON_NAME", "the lo pez thing", True, 0),
    ("maria.lopez@gmail.com", "EMAIL_ADDRESS", "maria dot lopez at gmail dot com", True, 1),
    ("415-555-0199", "PHONE_NUMBER", "call four 1 five 55 50199", True, 1),  # digits grouped any way
])
def test_everyday_words_count_only_as_the_value_they_were(value, label, text, cased, expected):
    assert len(find_survivors(text, removed([(label, value)])[0], "d", "text", cased=cased)) == expected


def _age_corpus(tmp_path, copy_share: float, n: int = 300, seed: int = 0):
    """n utterances with an age the masker removed, filled by a fake filler that draws an age as veil's
    typed draw does and copies the original with probability ``copy_share``."""
    from veil.fill.typed import fake_value

    rng = random.Random(seed)
    orig, masked, filled, subs = [], [], [], []
    for i in range(n):
        age = fake_value("AGE", rng, "dd")
        sub = age if rng.random() < copy_share else fake_value("AGE", rng, "dd")
        orig.append({"id": f"d{i}", "text": f"I am {age} now."})
        masked.append({"id": f"d{i}", "text": "I am [AGE_1] now.", "style": "numbered", "placeholders": [
            {"start": 5, "end": 12, "label": "AGE", "key": "AGE_1", "technique": "dlp", "shape": "dd"}]})
        filled.append({"id": f"d{i}", "text": f"I am {sub} now."})
        subs.append({"id": f"d{i}", "placeholder": "[AGE_1]", "key": "AGE_1", "label": "AGE", "substitute": sub,
                     "start": 5, "end": 5 + len(sub)})
    _jsonl(tmp_path / "filled.jsonl.substitutions.jsonl", subs)
    return (_jsonl(tmp_path / "orig.jsonl", orig), _jsonl(tmp_path / "filled.jsonl", filled),
            _jsonl(tmp_path / "masked.jsonl", masked))


def test_chance_matches_are_judged_against_their_pools(tmp_path):
    r = verify(*_age_corpus(tmp_path, 0.0)[:2], _age_corpus(tmp_path, 0.0)[2])
    assert r.chance.observed >= 1 and not r.survivors  # an age drawn back by chance is no survivor...
    assert r.clean and r.chance.explained and len(r.substitutes) == r.chance.observed  # ...and explained
    assert all(20 < s.pool < 200 and s.hits for s in r.substitutes)  # ages: about one in seventy


def test_a_filler_that_copies_one_original_in_ten_fails(tmp_path, capsys):
    orig, filled, masked = _age_corpus(tmp_path, 0.1)
    r = verify(orig, filled, masked)
    assert not r.survivors and not r.clean and r.chance.p_value < 1e-6, r.chance
    assert main(["verify", str(orig), str(filled), "--masked", str(masked)]) == 1
    assert "MORE than the pools explain" in capsys.readouterr().out


def test_poisson_tail():
    assert poisson_tail(0, 2.0) == 1.0 and poisson_tail(1, 0.0) == 0.0
    assert poisson_tail(8, 3.0) == pytest.approx(0.0119045, rel=1e-4)
    assert poisson_tail(30, 3.0) == pytest.approx(4.277e-20, rel=1e-3)


def _document(chars: int, seed: int = 0):
    """A call-like text of ``chars`` characters (words, spelled letters, digits) and one removed value per
    150 characters, a third of them in the text: the number of values grows with the text, as in a long call,
    and so do its words (a long call has more of them, not the same ones more often)."""
    rng = random.Random(seed)
    vocab = [f"w{i}x" for i in range(chars // 20)] + list("abcdefgh") * 20 + ["five", "oh", "12", "Maria"] * 10
    words: list[str] = []
    length = 0
    while length < chars:
        words.append(rng.choice(vocab))
        length += len(words[-1]) + 1
    text = " ".join(words)[:chars]
    values = []
    for i in range(chars // 150):
        if i % 3 == 0:
            j = rng.randrange(len(words) - 2)
            values.append(("PERSON_NAME", " ".join(words[j:j + 2])))
        else:
            values.append(("PERSON_NAME", f"Name{i} Last{i}"))
    return text, values


def test_time_is_linear_in_the_length_of_a_document():
    def best(chars: int) -> float:
        text, values = _document(chars)
        values = removed(values)[0]
        times = []
        for _ in range(3):
            t = time.perf_counter()
            find_survivors(text, values, "d", "text")  # the table of keys, the scan, the survivors
            times.append(time.perf_counter() - t)
        return min(times)

    everyday("the")  # load the word list once, outside the timings
    t1, t8, t64 = best(1000), best(8000), best(64000)
    assert t64 < 3 * 8 * t8, (t1, t8, t64)  # 8 times the text: within 3 times 8 times the time
    assert t64 < 2.0
