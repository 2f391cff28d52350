"""Conversation quasi-identifier detectors (``veil.mask.detectors.personal``): (text, expected spans) tables."""

from __future__ import annotations

import pytest

from veil.registry import detectors as DETECTORS


def found(name, text):
    return [(text[s.start:s.end], s.label) for s in DETECTORS.get(name)().find(text, "dlp")]


@pytest.mark.parametrize("text,expected", [
    ("Well, we have a, uh, three year old and a one year old.", ["three year old", "one year old"]),
    ("He's about five and a half years old.", ["five and a half years old"]),
    ("I, I was only twenty-five years old or something", ["twenty-five years old"]),
    ("She's only five,", ["five"]),
    ("Uh, one is twenty-one,", ["twenty-one"]),
    ("He's ninety, I think", ["ninety"]),
    ("My, my grandmother is in her mid eighties", ["mid eighties"]),
    ("Now, my husband is, um, he's ten years older than me,", ["ten years older"]),
    ("I guess he was probably five or six, you know, when he started", ["five or six"]),
    ("she's only about sixty-four,", ["sixty-four"]),
    ("my twelve year old got out the Legos", ["twelve year old"]),
    ("he retired at the age of sixty-two", ["sixty-two"]),
    ("Fifth, that his age is 49, he is of previous good character", ["49"]),
    # not ages: things, durations, times, measures
    ("It was nine years old", []),
    ("the house is about, um, I'd say almost thirty years old.", []),
    ("I had it five years", []),
    ("he's five minutes away", []),
    ("it's five o'clock", []),
    ("she's five feet tall", []),
    ("we waited two years for it", []),
])
def test_spoken_age(text, expected):
    assert [s for s, _ in found("spoken_age", text)] == expected


@pytest.mark.parametrize("text,expected", [
    ("I, we, we got married a few months ago", ["a few months ago"]),
    ("I used to be a college student ten years ago", ["ten years ago"]),
    ("My grand mamma died a couple of years ago", ["a couple of years ago"]),
    ("We just bought, uh, a car, uh, last year and then bought one in eighty-nine", ["last year", "eighty-nine"]),
    ("we bought one in ninety.", ["ninety"]),
    ("I'm going down to El Paso next week", ["next week"]),
    ("I, uh, spent this past summer up in Canada.", ["this past summer"]),
    ("I guess this last weekend", ["this last weekend"]),
    ("On Sunday we just met, uh, a family,", ["Sunday"]),
    ("we lived in the Philippines in eighty-five, eighty-six, and eighty-seven", ["eighty-five, eighty-six, and eighty-seven"]),
    ("my station wagon from seventy-six to eighty.", ["seventy-six to eighty"]),
    ("we had a bad siege last, uh, Christmas a year ago.", ["Christmas a year ago"]),
    # the hedge is no part of the date; "or two" is
    ("I saw it just a few days ago", ["a few days ago"]),
    ("we got married about ten months ago", ["ten months ago"]),
    ("There was a cartoon about a year or two ago", ["a year or two ago"]),
    ("a year or so ago we moved", ["a year or so ago"]),
    # not a date of anyone's life
    ("for about two years", []),
    ("in fifty years nobody will care", []),
    ("it was ninety degrees in the shade", []),
    ("we need to leave in ten minutes", []),
])
def test_life_event_date(text, expected):
    assert [s for s, _ in found("life_event_date", text)] == expected


@pytest.mark.parametrize("text,expected", [
    ("I was a school teacher,", ["school teacher"]),
    ("and I was an engineer so I was always with men,", ["engineer"]),
    ("I have a daughter who's a nurse", ["nurse"]),
    ("and I have a daughter, who's a beautician.", ["beautician"]),
    ("I'm a quality manager", ["quality manager"]),
    ("He's a translator.", ["translator"]),
    ("Well actually right now I'm a full time college student", ["college student"]),
    ("My, I have a brother who's a vet", ["vet"]),
    ("I was a baby-sitter in high school.", ["baby-sitter"]),
    ("So, I'm a licensed teacher", ["licensed teacher"]),
    ("And the mom was a dentist", ["dentist"]),
    ("I've worked in public relations a lot", ["public relations"]),
    ("and we were in the retail milk business", ["retail milk business"]),
    ("my husband's in construction", ["construction"]),
    ("but jobs being what they are, I substitute teach", ["substitute teach"]),
    ("she works as a paralegal downtown", ["paralegal"]),
    ("he passed an exam for the post of a private security guard", ["private security guard"]),
    ("she was employed as a nurse until 2001", ["nurse"]),
    # an occupation said of nobody in particular
    ("teachers don't get paid enough", []),
    ("I'm not a doctor, but", []),
    ("the doctor said to rest", []),
    ("these are the people that make the policy", []),
    ("they majored in engineering", []),
])
def test_occupation(text, expected):
    assert [s for s, _ in found("occupation", text)] == expected


@pytest.mark.parametrize("text,expected", [
    ("she had contracted chicken pox first", ["chicken pox"]),
    ("My mamma is a dialysis patient", ["dialysis patient"]),
    ("and my daddy has to drive her to dialysis now", ["dialysis"]),
    ("she's, uh, suffering from, uh, well, uh, progressive Alzheimer's Disease", ["Alzheimer's Disease"]),
    ("my daughter has asthma", ["asthma"]),
    ("he died of a heart attack", ["heart attack"]),
    # the topic, not a person's condition
    ("cancer research needs more money", []),
    ("asthma is common in cities", []),
])
def test_health(text, expected):
    assert [s for s, _ in found("health", text)] == expected


@pytest.mark.parametrize("text,expected", [
    ("I worked with Spanish people for about two years", ["Spanish"]),
    ("she's Catholic", ["Catholic"]),
    ("I'm half Italian", ["Italian"]),
    ("we're Baptist", ["Baptist"]),
    ("a Mexican family moved in", ["Mexican"]),
    # a nationality of things
    ("if you are looking for a French recipe", []),
    ("Was British racing green", []),
    ("the white car", []),
])
def test_nationality(text, expected):
    assert [s for s, _ in found("nationality", text)] == expected


def test_labels_and_every_form():
    text = "My daughter's a nurse and she's twenty-five; she had asthma a few months ago."
    labels = {label for name in ("spoken_age", "life_event_date", "occupation", "health", "nationality")
              for _, label in found(name, text)}
    assert labels == {"AGE", "DATE", "OCCUPATION", "DEMOGRAPHIC"}
    from veil.textforms import transform

    asr = transform(text, [], "asr")[0]
    assert [s for s, _ in found("spoken_age", asr)] == ["twenty five"]
    assert [s for s, _ in found("occupation", asr)] == ["nurse"]


@pytest.mark.parametrize("name,text,expected", [
    ("service", "My husband was in the Air Force", ["Air Force"]),
    ("service", "I am, I work at, for the Air Force.", ["Air Force"]),
    ("service", "we should send the army in", []),
    ("spoken_price", "I sold it myself for forty-two hundred.", ["forty-two hundred"]),
    ("spoken_price", "we drove about five hundred miles", []),
    ("spoken_age", "i have two two boys twelve and sixteen", ["twelve and sixteen"]),
    ("life_event_date", "it will be a year in august", ["august"]),
    ("life_event_date", "I get married in a couple of weeks", ["a couple of weeks"]),
    ("life_event_date", "we went, I guess it was two weekends ago", ["two weekends ago"]),
    ("number", "we usually eat at five thirty", []),
    ("number", "my extension is six fifteen", ["six fifteen"]),
])
def test_more_conversation_patterns(name, text, expected):
    assert [s for s, _ in found(name, text)] == expected
