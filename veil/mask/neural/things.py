"""Train stage: generated talk where foods, drinks, plants, medicines, cars, sports and hobbies are things.

A tagger that learned names from news reads an unknown word as a person; in a company's own calls the
unknown words are its products, menu items and the words that modify them. These examples teach the
evidence that tells a thing from a name, not a list of one domain's products: a thing is ordered,
bought, taken, planted, driven, played, comes in a size or a flavour, follows an article or a quantity;
a name follows "this is", "my name is", "for", "ask for", a greeting, and is on the name lists. The same
templates carry customers' names (labelled ``PER``) beside the things, in one sentence or the next, so
the model learns both sides of the line. The word lists (``veil/data/things/*.txt``) span many domains;
menu items are also made up from adjectives and nouns ("the Smoky Ranger"), cased as a menu prints them.
"""

from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path

THINGS_DIR = Path(__file__).resolve().parents[2] / "data" / "things"

# {t}: a thing of the template's kind; {n}: a customer's first name (a PER span); {q}: a quantity or size
ORDER = (
    "can i get a {q} {t} and a {q} {t}", "i'll have the {t} with extra {t}", "could i get a {t} no {t}",
    "one {t} and two {t} please", "do you have {t} today", "is the {t} spicy", "can i swap the {t} for {t}",
    "i'd like to order a {q} {t} for pickup", "the {t} comes with {t} or {t}", "we're out of {t} sorry",
    "add a side of {t}", "how much is the {q} {t}", "make that a {q} {t} with {t}", "a {t} to go please",
    "that's one {t}, one {t} and a {q} {t}", "is the {t} gluten free", "i'll try the {t} this time",
)
ORDER_NAMED = (
    "can i get a name for the order? it's {n}", "a {q} {t} for {n}", "order for {n}, one {t}",
    "{n}, your {t} is ready", "this is {n}, i ordered a {t} earlier", "hi, my name is {n} and i'd like a {t}",
    "i have a {t} here for {n}", "thanks {n}, your {t} will be about ten minutes", "ask for {n} at the counter",
)
CHAT = {
    "plants": ("we planted {t} along the fence", "the {t} are blooming early this year", "my {t} died over the winter",
               "you have to cut the {t} back in the fall", "we put in some {t} and a little {t}"),
    "medicines": ("i took some {t} for the headache", "the doctor put him on {t}", "{t} makes me drowsy",
                  "she's allergic to {t}", "i keep {t} in the cabinet"),
    "vehicles": ("we traded in the old {t} for a {t}", "my {t} has two hundred thousand miles on it",
                 "he drives a {t}", "the {t} needs new tires", "we rented a {t} for the trip"),
    "pastimes": ("we used to play {t} on friday nights", "she got into {t} last year", "i'm no good at {t}",
                 "the kids love {t}", "he bought a {t} for the basement"),
    "drinks": ("i'll take a {q} {t}", "a {t} with oat milk", "they make a good {t} there", "one {t} and one {t}"),
    "food": ("we had {t} for dinner", "she makes the best {t}", "the {t} there is really good",
             "i'm trying to cut back on {t}"),
}
CHAT_NAMED = ("my neighbor {n} grows {t}", "{n} said the {t} was great", "i told {n} to try the {t}",
              "this is {n}, we talked about the {t}", "oh hi {n}, did you get the {t}")
QUANTITIES = ("small", "medium", "large", "regular", "double", "half", "dozen", "twelve ounce", "family size",
              "extra large", "tall", "grande", "venti", "single", "triple")
MENU_ADJECTIVES = ("smoky", "spicy", "classic", "golden", "crispy", "garden", "sunrise", "big", "little", "royal",
                   "country", "coastal", "harvest", "midnight", "rustic", "honey", "southern", "wild")
MENU_NOUNS = ("ranger", "stack", "melt", "bowl", "wrap", "club", "deluxe", "supreme", "special", "platter", "crunch",
              "twist", "blast", "classic", "combo", "feast")


@lru_cache(maxsize=1)
def thing_lists() -> dict[str, tuple[str, ...]]:
    """Kind -> its words, from ``veil/data/things/KIND.txt`` (``#`` lines are comments)."""
    out = {}
    for f in sorted(THINGS_DIR.glob("*.txt")):
        out[f.stem] = tuple(w.strip() for w in f.read_text(encoding="utf-8").splitlines()
                            if w.strip() and not w.startswith("#"))
    return out


@lru_cache(maxsize=1)
def _first_names() -> tuple[str, ...]:
    from faker import Faker

    names: set[str] = set()
    for loc in ("en_US", "en_GB", "es_MX", "en_IN"):
        fk = Faker(loc)
        provider = fk.provider("faker.providers.person")
        for attr in ("first_names", "first_names_female", "first_names_male"):
            names |= set(getattr(provider, attr, ()) or ())
    return tuple(sorted(n for n in names if n.isalpha()))


def _menu_item(rng: random.Random) -> str:
    return f"{rng.choice(MENU_ADJECTIVES)} {rng.choice(MENU_NOUNS)}"


def _fill(template: str, kind: str, rng: random.Random, cased: bool) -> tuple[str, list[tuple[int, int, str]]]:
    words = thing_lists()[kind]
    out, spans, i = [], [], 0
    pos = 0
    while i < len(template):
        if template.startswith("{t}", i):
            w = _menu_item(rng) if kind == "food" and rng.random() < 0.25 else rng.choice(words)
            w = w.title() if cased and rng.random() < 0.5 else w
            out.append(w)
            pos += len(w)
            i += 3
        elif template.startswith("{q}", i):
            w = rng.choice(QUANTITIES)
            out.append(w)
            pos += len(w)
            i += 3
        elif template.startswith("{n}", i):
            w = rng.choice(_first_names())
            w = w if cased else w.lower()
            spans.append((pos, pos + len(w), "PER"))
            out.append(w)
            pos += len(w)
            i += 3
        else:
            out.append(template[i])
            pos += 1
            i += 1
    text = "".join(out)
    if cased:
        text = text[0].upper() + text[1:]
    return text, spans


def generate(n: int, seed: int) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """``n`` texts of one to three lines (order talk or chat about things), with the customers' names as spans."""
    rng = random.Random(seed)
    kinds = sorted(thing_lists())
    out = []
    for _ in range(n):
        kind = rng.choice(kinds)
        cased = rng.random() < 0.5
        lines, spans, pos = [], [], 0
        for _ in range(rng.randint(1, 3)):
            if kind in ("food", "drinks") and rng.random() < 0.6:
                template = rng.choice(ORDER_NAMED if rng.random() < 0.3 else ORDER)
            else:
                template = rng.choice(CHAT_NAMED if rng.random() < 0.25 else CHAT[kind])
            text, sp = _fill(template, kind, rng, cased)
            spans += [(s + pos, e + pos, k) for s, e, k in sp]
            lines.append(text)
            pos += len(text) + 1
        out.append(("\n".join(lines), spans))
    return out
