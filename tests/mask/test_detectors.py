"""Each DLP detector against a table of (text, expected hits); a hit is (surface, label)."""

import pytest

from veil.errors import InputError, VeilError
from veil.mask.detectors.numbers import luhn_ok, run_digits
from veil.mask.dlp import DLPMasker


def hits(masker: DLPMasker, text: str) -> list[tuple[str, str]]:
    return [(text[s.start:s.end], s.label) for s in masker.detect(text)]


CASES = [
    # email
    ("email", "write to john.smith+x@example.co.uk today", [("john.smith+x@example.co.uk", "EMAIL_ADDRESS")]),
    ("email", "it's john dot smith at gmail dot com", [("john dot smith at gmail dot com", "EMAIL_ADDRESS")]),
    ("email", "meet me at noon, at the dot", []),
    ("email", "no @ here", []),
    # url
    ("url", "see https://example.org/a?b=1.", [("https://example.org/a?b=1", "URL")]),
    ("url", "go to www.acme.com now", [("www.acme.com", "URL"), ("www.acme.com", "URL")]),
    ("url", "visit acme.org/help, please", [("acme.org/help", "URL")]),
    ("url", "e.g. this, i.e. that. End.", []),
    # ip address
    ("ip_address", "server 192.168.0.1.", [("192.168.0.1", "IP_ADDRESS")]),
    ("ip_address", "v6 2001:db8::ff00:42:8329 ok", [("2001:db8::ff00:42:8329", "IP_ADDRESS")]),
    ("ip_address", "version 1.2.3.4.5 and 999.1.1.1 and 10:30:00", []),
    # phone
    ("phone", "call (212) 555-0143 or +44 20 7946 0958", [("(212) 555-0143", "PHONE_NUMBER"),
                                                          ("+44 20 7946 0958", "PHONE_NUMBER")]),
    ("phone", "application no. 18403/91 of 1991", []),
    # the North American layout is a phone even where no such exchange exists; not inside a dotted number
    ("phone", "Call John Smith at 555-123-4560.", [("555-123-4560", "PHONE_NUMBER")]),
    ("phone", "ip 192.168.100.1234 and 555-123-45601", []),
    # credit card (Luhn)
    ("credit_card", "card 4111 1111 1111 1111 exp", [("4111 1111 1111 1111", "CREDIT_CARD_NUMBER")]),
    ("credit_card", "card 4111-1111-1111-1112 exp", []),
    ("credit_card", "zeros 0000 0000 0000 0000", []),
    # US SSN
    ("us_ssn", "ssn 123-45-6789.", [("123-45-6789", "US_SOCIAL_SECURITY_NUMBER")]),
    ("us_ssn", "my social security is 123456789", [("123456789", "US_SOCIAL_SECURITY_NUMBER")]),
    ("us_ssn", "order 123456789 shipped", []),  # bare nine digits without a hot word: score too low
    ("us_ssn", "ssn 666-12-3456 or 900-12-3456", []),
    # digit runs, written, spelled and mixed
    ("number", "case 18403/91 and 1,470,000 and 12", [("18403/91", "NUMBER"), ("1,470,000", "NUMBER")]),
    ("number", "it's four five six, right", [("four five six", "NUMBER")]),
    ("number", "code 4 five 6", [("4 five 6", "NUMBER")]),
    ("number", "double five six", [("double five six", "NUMBER")]),
    ("number", "in nineteen eighty-five", [("nineteen eighty-five", "NUMBER")]),
    ("number", "oh, one two three", [("one two three", "NUMBER")]),
    ("number", "twenty one people, one or two", []),
    ("number", "at ten o'clock, two three", []),
    ("number", "the 1990s", [("1990s", "NUMBER")]),
    ("number", "Mobile: +41 (0)96 471 07 95", [("+41 (0)96 471 07 95", "NUMBER")]),
    # dates
    ("date", "on 22 June 2005 and June 22nd, 2005", [("22 June 2005", "DATE"), ("June 22nd, 2005", "DATE")]),
    ("date", "on 14 and 27 July 1999, the end of October 1997, first half of 1993",
     [("14 and 27 July 1999", "DATE"), ("the end of October 1997", "DATE"), ("first half of 1993", "DATE")]),
    # as speech recognition writes dates: no capitals, spoken days and years
    ("date", "on twenty two june two thousand and five, june nineteen ninety nine, 5 may 2001",
     [("twenty two june two thousand and five", "DATE"), ("june nineteen ninety nine", "DATE"),
      ("5 may 2001", "DATE")]),
    ("date", "one may say so", []),
    ("date", "from 12/03/1999 to 2005-06-22", [("12/03/1999", "DATE"), ("2005-06-22", "DATE")]),
    ("date", "you may go; 123-45-6789", []),
    # ages, durations, money, quantities
    ("age", "she is 42 years old, aged 33", [("42 years old", "AGE"), ("33", "AGE")]),
    ("age", "I just turned 47. i'm 31 y/o; when he was 78. I'm 25.", [("47", "AGE"), ("31 y/o", "AGE"),
                                                                     ("78", "AGE"), ("25", "AGE")]),
    ("age", "I'm 5 minutes away, turned 90 degrees", []),
    ("street_address", "at 14 Crown Street, Suite 321 or P.O. Box 8158",
     [("14 Crown Street", "STREET_ADDRESS"), ("Suite 321", "STREET_ADDRESS"), ("P.O. Box 8158", "STREET_ADDRESS")]),
    ("street_address", "in 2005 Parliament passed it", []),
    ("duration", "three years and nine months' prison", [("three years and nine months", "DURATION")]),
    ("duration", "two and a half years, 42 days", [("two and a half years", "DURATION"), ("42 days", "DURATION")]),
    ("duration", "a year ago, many years", []),
    ("money", "pay EUR 1,470,000 or $25", [("EUR 1,470,000", "MONEY"), ("$25", "MONEY")]),
    ("money", "200,000 Turkish liras (TRY) and thirty thousand dollars",
     [("200,000 Turkish liras (TRY)", "MONEY"), ("thirty thousand dollars", "MONEY")]),
    ("money", "dollars and euros", []),
    # as speech recognition writes amounts: lower-case codes, spoken numbers ("try" stays a word)
    ("money", "approximately eur four thousand, two hundred turkish liras try, six hundred pln; try two",
     [("approximately eur four thousand", "MONEY"), ("two hundred turkish liras try", "MONEY"),
      ("six hundred pln", "MONEY")]),
    ("money", "(approximately EUR 1,800)", [("approximately EUR 1,800", "MONEY")]),
    ("quantity", "about 50 metres at 26 km/h, 12 per cent", [("50 metres", "QUANTITY"), ("26 km/h", "QUANTITY"),
                                                            ("12 per cent", "QUANTITY")]),
    ("quantity", "79 packages, seven other persons and fifty-five hearings",
     [("79 packages", "QUANTITY"), ("seven other persons", "QUANTITY"), ("fifty-five hearings", "QUANTITY")]),
    ("quantity", "one of the judges, no one else", []),
    # the last group of a card number and the verb after it count nothing
    ("quantity", "card 4111 1111 1111 1111 expires in may, four one one one expires", []),
    ("quantity", "the 2 brothers", [("2 brothers", "QUANTITY")]),
    # spelled-out letters
    ("spelled_word", "that's A-L-P-H-A", [("A-L-P-H-A", "SPELLED_WORD")]),
    ("spelled_word", "code M-K two one please", [("M-K two one", "SPELLED_WORD")]),
    ("spelled_word", "a T-shirt, an x-ray, U-S", []),
    # usernames / generic ids
    ("username", "my username is Mrbigchef", [("Mrbigchef", "USERNAME")]),
    ("username", "find enigma52 or @paulwalk", [("enigma52", "USERNAME"), ("@paulwalk", "USERNAME")]),
    ("username", "she didn't handle it; the 1990s, 3rd, 10kg", []),
    # names after an honorific
    ("titled_name", "by Mr Oğuz Atakan Köseoğlu (“the applicant”)", [("Oğuz Atakan Köseoğlu", "PERSON_NAME")]),
    ("titled_name", "Mr Z.M. Necatigil and Mrs A. Demetriades.", [("Z.M. Necatigil", "PERSON_NAME"),
                                                                ("A. Demetriades", "PERSON_NAME")]),
    ("titled_name", "Mr said that dr who", []),
    # codes that identify a case, an application or an account: masked whole
    ("case_code", "application no. 18403/91, Annex E.1, Lambert (no. 2)",
     [("18403/91", "GENERIC_ID"), ("E.1", "GENERIC_ID"), ("2", "GENERIC_ID")]),
    ("case_code", "file 11/2345-A, case NJA 2005 p. 884, [2001] 3 WLR 206",
     [("11/2345-A", "GENERIC_ID"), ("NJA 2005 p. 884", "GENERIC_ID"), ("[2001] 3 WLR 206", "GENERIC_ID")]),
    ("case_code", "it cost 3.5 euros, the 1990s, no one came", []),
    ("case_code", "my account number is 4471-22 and the case of 12/2001",
     [("4471-22", "GENERIC_ID"), ("12/2001", "GENERIC_ID")]),
    ("case_code", "account no. AB-123 and case E 1", [("AB-123", "GENERIC_ID"), ("E 1", "GENERIC_ID")]),
    # names in another script than Latin
    ("non_latin_name", "Mr שמעון פרס met Иван Петров in 北京市 and محمد.",
     [("שמעון פרס", "NON_LATIN_NAME"), ("Иван Петров", "NON_LATIN_NAME"), ("北京市", "NON_LATIN_NAME"),
      ("محمد", "NON_LATIN_NAME")]),
    ("non_latin_name", "Oğuz Köseoğlu, Zoë and naïve café, 5 µm", []),
]


@pytest.mark.parametrize("detector,text,expected", CASES)
def test_detector_table(detector, text, expected):
    assert hits(DLPMasker(detectors=[detector], register="written"), text) == expected


def test_durations_and_quantities_only_in_written_documents():
    from veil.errors import VeilError

    said = "I had it five years and we drove forty miles with two dogs"
    court = ("The applicant was sentenced to 14 years' imprisonment on 5 May 2001. " * 12).strip()
    auto = DLPMasker(detectors=["duration", "quantity"])
    assert hits(auto, said) == []
    written = hits(DLPMasker(detectors=["duration", "quantity"], register="written"), said)
    assert {("five years", "DURATION"), ("forty miles", "QUANTITY"), ("two dogs", "QUANTITY")} <= set(written)
    assert ("14 years", "DURATION") in hits(auto, court)
    assert hits(DLPMasker(detectors=["duration"], register="conversation"), court) == []
    with pytest.raises(VeilError, match="register"):
        DLPMasker(register="legal")


def test_username_hot_word_raises_score():
    m = DLPMasker(detectors=["username"])
    far = "and then " * 20  # common words: only the handle is a hit
    [near_hit] = m.detect("my user name is jsmith1985")
    [far_hit] = m.detect(f"my user name is {far} jsmith1985")
    assert near_hit.score > far_hit.score >= m.min_score


def test_dictionary_and_exclusion(tmp_path):
    d = tmp_path / "dict.tsv"
    d.write_text("# company names\nDunder Mifflin\tORGANIZATION_NAME\nPam\tPERSON_NAME\nzork\n", encoding="utf-8")
    m = DLPMasker(detectors=["number"], dictionary_file=d, exclude=["911"])
    text = "Pam from dunder mifflin called 911 and 4567; Pamela and ZORK"
    assert hits(m, text) == [("Pam", "PERSON_NAME"), ("dunder mifflin", "ORGANIZATION_NAME"),
                             ("4567", "NUMBER"), ("ZORK", "CUSTOM")]


def test_default_dlp_masker_runs_every_detector():
    text = "Mail a@b.com, call (212) 555-0143, ssn 123-45-6789, spell A-B-C, user name zq9x7"
    labels = {s.label for s in DLPMasker().detect(text)}
    assert {"EMAIL_ADDRESS", "PHONE_NUMBER", "US_SOCIAL_SECURITY_NUMBER", "SPELLED_WORD", "USERNAME"} <= labels


def test_bad_options_are_clear_errors(tmp_path):
    with pytest.raises(VeilError, match="unknown detector"):
        DLPMasker(detectors=["email", "nope"])
    with pytest.raises(InputError):
        DLPMasker(dictionary_file=tmp_path / "missing.tsv")
    bad = tmp_path / "bad.tsv"
    bad.write_text("Acme\tnot a type\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        DLPMasker(dictionary_file=bad)
    assert e.value.line == 1
    assert DLPMasker(detectors="email,url").detectors[1].name == "UrlDetector"


@pytest.mark.parametrize("digits,ok", [("4111111111111111", True), ("4111111111111112", False),
                                       ("79927398713", True), ("79927398710", False)])
def test_luhn(digits, ok):
    assert luhn_ok(digits) is ok


def test_run_digits_counts_spoken_numbers():
    assert run_digits("twenty one")[0] == 2
    assert run_digits("double five six")[0] == 3
    assert run_digits("nineteen eighty five")[0] == 4  # 19 85: the unit after a tens word merges
