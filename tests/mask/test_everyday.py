"""Everyday sentences with no personal data: the default maskers must leave every one of them alone.

Written for this test (not taken from any gold set or training template): what callers and agents say
between the personal data, with filler words, household objects, activities, pronouns, greetings and
the words a tagger trained on spoken e-mails and addresses mistakes for them ("at", "dot", "from",
"new", "small", "card", "bank", "school"). Each sentence is checked as written and lower-cased.
"""

from __future__ import annotations

import pytest

EVERYDAY = [
    # greetings and call-centre formulas
    "Hi, thanks for holding.",
    "Hello, how are you doing today?",
    "Good afternoon, what can I do for you?",
    "Thanks so much, you've been a big help.",
    "Okay, bye now.",
    "Hey, sorry about the wait.",
    "Thank you, have a good one.",
    "Could you hold on for just a moment?",
    "Is there anything else I can help you with?",
    "Sure, let me pull that up.",
    "Alright, I'll put a note on it.",
    "Yes, that's correct.",
    "No, that's everything, thanks.",
    "I appreciate you calling back.",
    "Sorry, you cut out for a second.",
    "Can you hear me okay?",
    # fillers and restarts
    "Uh, I'm not really sure.",
    "Um, well, it depends, you know.",
    "Oh, uh, I see what you mean.",
    "Yeah, yeah, uh-huh.",
    "So, uh, it was, it was kind of strange.",
    "I mean, uh, I guess so.",
    "Well, um, we tried that already.",
    "Hmm, let me think about it.",
    "Uh, you know, it's, it's hard to say.",
    "Right, right, that makes sense.",
    "Oh gosh, I don't know.",
    "Um, so, what happens next?",
    # household objects and things that break
    "The freezer in the garage quit working.",
    "Our treadmill makes a clicking sound.",
    "The space heater keeps shutting off.",
    "We had a flat tire on the highway.",
    "The dishwasher is leaking onto the floor.",
    "My printer won't connect to the laptop.",
    "The ice maker stopped making ice.",
    "The porch light flickers at night.",
    "Our water heater is pretty old.",
    "The blender lid cracked down the side.",
    "The smoke alarm beeps every few minutes.",
    "The remote control needs new batteries.",
    "The vacuum cleaner lost its suction.",
    "The router blinks orange instead of green.",
    "The washing machine shakes when it spins.",
    "Our ceiling fan wobbles a lot.",
    "The toaster burns everything on one side.",
    "The microwave door won't stay shut.",
    "The sprinkler head broke off in the yard.",
    "The car battery died overnight.",
    # the words that fooled the tagger
    "I just got a new phone.",
    "Is this the new policy?",
    "It's a pretty small kitchen.",
    "We only need a small one.",
    "My card keeps getting declined.",
    "Can I pay with a different card?",
    "I went to the bank this morning.",
    "The bank sent me a letter about it.",
    "The kids are still at school.",
    "School lets out early tomorrow.",
    "I'm calling from the car.",
    "I'm at the grocery store right now.",
    "There's a little dot next to the icon.",
    "Click the three dots at the top.",
    "Send it to the address on file.",
    "Just tap the button at the bottom.",
    "I heard it from a neighbor.",
    "The package is sitting at the front door.",
    "We bought it at a yard sale.",
    "It came from the main office.",
    "The new card has a chip in it.",
    "The bank card is in my other wallet.",
    "It's a small town, everybody knows everybody.",
    "The school bus was late again.",
    # activities and everyday life
    "We usually go walking after dinner.",
    "I've been trying to garden more.",
    "They like to fish off the pier.",
    "We watched a movie and went to bed.",
    "I'm baking cookies for the party.",
    "He plays soccer on the weekends.",
    "We're painting the bedroom blue.",
    "She likes reading mystery novels.",
    "We went camping with the kids.",
    "I try to cook at home most nights.",
    "We took the dog to the park.",
    "I was mowing the lawn when you called.",
    "They're cleaning out the attic.",
    "We play cards with friends sometimes.",
    "I like to knit while watching TV.",
    "We're saving up for a vacation.",
    # pronouns and everyday opinions
    "She said it would be fine.",
    "He doesn't like it very much.",
    "They told us to call this number.",
    "We think it's a good idea.",
    "You should try turning it off and on.",
    "I don't think he noticed.",
    "It was nice of them to help.",
    "She's been really busy lately.",
    "He's always running late.",
    "They're not sure what happened.",
    "We're happy with the service.",
    "I'd rather wait and see.",
    "It's hard to find good help these days.",
    "That's what I was afraid of.",
    "Nobody told me about the fee.",
    "Everybody at the table agreed.",
    # small counts, times and amounts that identify no one
    "It takes about ten minutes to warm up.",
    "We have two dogs and a cat.",
    "I waited on hold for twenty minutes.",
    "The store opens at nine.",
    "It only costs a few dollars more.",
    "There were three boxes on the step.",
    "I called a couple of times already.",
    "It happens once or twice a week.",
    "The drive takes about an hour.",
    "We need four chairs for the table.",
]


def _cases():
    for s in EVERYDAY:
        yield s
        yield s.lower()


CASES = list(_cases())


def test_the_table_is_big_enough():
    assert len(set(EVERYDAY)) == len(EVERYDAY) >= 100
    assert len(CASES) >= 200


@pytest.fixture(scope="module")
def default_engine():
    from veil.run.components import build_engine
    from veil.run.corpus import DEFAULT_MASKERS

    return build_engine(DEFAULT_MASKERS)


def _masked(engine, texts):
    from veil.types import Document

    docs = [Document(id=str(i), text=t) for i, t in enumerate(texts)]
    return [(t, [t[s.start:s.end] + ":" + s.label for s in spans]) for t, spans in zip(texts, engine.detect(docs))]


def test_dlp_masks_nothing_in_everyday_sentences():
    from veil.run.components import build_engine

    hits = [(t, s) for t, s in _masked(build_engine(["dlp"], "mask"), CASES) if s]
    assert hits == []


#: the words of a date said relative to the call ("early tomorrow", "this morning"): it dates the caller's
#: day, and the goal allows it in everyday sentences (a placeholder for it is no false alarm)
RELATIVE_DATE_WORDS = {"today", "tomorrow", "tonight", "yesterday", "this", "next", "last", "ago", "early", "late",
                       "morning", "afternoon", "evening", "night", "week", "weekend", "month", "year"}


def _relative_date(found: str) -> bool:
    surface, label = found.rsplit(":", 1)
    words = surface.lower().replace(",", " ").split()
    return label == "DATE" and bool(words) and set(words) <= RELATIVE_DATE_WORDS and bool(
        set(words) & {"today", "tomorrow", "tonight", "yesterday", "ago", "this", "next", "last"})


def test_a_relative_date_is_told_from_any_other_placeholder():
    assert _relative_date("early tomorrow:DATE") and _relative_date("this morning:DATE")
    assert not _relative_date("Monday:DATE") and not _relative_date("early tomorrow:PERSON_NAME")
    assert not _relative_date("morning:DATE")


@pytest.mark.slow
def test_default_maskers_mask_nothing_in_everyday_sentences_but_relative_dates(default_engine):
    hits = [(t, s) for t, s in _masked(default_engine, CASES) if [f for f in s if not _relative_date(f)]]
    assert hits == []


#: (text, [(surface, label), ...]) with the default maskers: what the issue's examples must give
SPANS = [
    ("Northwind Bank, Priya speaking.", [("Northwind Bank", "ORGANIZATION_NAME"), ("Priya", "PERSON_NAME")]),
    ("What's the new street address", []),
    ("Thanks Maria.", [("Maria", "PERSON_NAME")]),
    ("I am calling about my daughter Emily who has asthma, she is at Lincoln Elementary in Springfield.",
     [("Emily", "PERSON_NAME"), ("asthma", "DEMOGRAPHIC"), ("Lincoln Elementary", "ORGANIZATION_NAME"),
      ("Springfield", "LOCATION")]),
    ("Dr. Sarah Connor will call you back.", [("Sarah Connor", "PERSON_NAME")]),
    ("My zip is 94110, card 4111 1111 1111 1111", [("94110", None), ("4111 1111 1111 1111", "CREDIT_CARD_NUMBER")]),
    ("Call John Smith at 555-123-4560.", [("John Smith", "PERSON_NAME"), ("555-123-4560", "PHONE_NUMBER")]),
    ("Hi, this is Maria Lopez from Denver", [("Maria Lopez", "PERSON_NAME"), ("Denver", "LOCATION")]),
    ("It was 3.5 out of five.", []),
    ("my sister's a principal in dallas", [("principal", "OCCUPATION"), ("dallas", "LOCATION")]),
    ("we have a two year old and he's starting school", [("two year old", "AGE")]),
]


@pytest.mark.slow
@pytest.mark.parametrize("text,expected", SPANS)
def test_default_spans_hold_the_value_and_nothing_else(default_engine, text, expected):
    [(_, got)] = _masked(default_engine, [text])
    got = [tuple(g.rsplit(":", 1)) for g in got]
    assert [s for s, _ in got] == [s for s, _ in expected]
    assert all(label is None or (s, label) in got for s, label in expected)
