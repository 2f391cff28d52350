"""Corpus I/O stage: generate the bundled demo corpus (call-centre conversations with gold PI spans).

Deterministic: Faker and the template choices are seeded, so re-running writes identical bytes.
Writes veil/data/demo/calls.jsonl (train) and calls_test.jsonl (held-out conversations), one
utterance per line: {id, conversation, speaker, person, text, spans: [{start, end, label}]}.
Gold spans carry offsets and labels only, never the surface text.

    python scripts/make_demo_corpus.py [--conversations 300] [--test-conversations 60]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "veil" / "data" / "demo"

DIGITS = "zero one two three four five six seven eight nine".split()

# {slot} fields become gold spans; plain text around them is ordinary conversation.
AGENT_OPEN = [
    "Thank you for calling {company}, this is {agent}, how can I help you today?",
    "Hi, you've reached {company} customer support, my name is {agent}, what can I do for you?",
    "Good morning, {company}, {agent} speaking, how may I help?",
    "Hello, thanks for calling {company}. My name is {agent}. Who am I speaking with today?",
]
CUSTOMER_INTRO = [
    "Hi {agent}, my name is {customer} and I'm calling about my order.",
    "Yeah hi, this is {customer}, I have a problem with my account.",
    "Hello, um, it's {customer}, I called last week about the same thing.",
    "Hi, my name is {customer}, I'm calling from {city}.",
    "Hey, this is {customer}. I, uh, I need some help with a bill I got.",
]
AGENT_ASK = [
    "Okay {customer_first}, can I get the phone number on the account?",
    "Sure, can you give me the email address we have on file?",
    "No problem. What's the order number?",
    "Can you spell your last name for me please?",
    "And what's the username you log in with?",
    "Could you confirm the billing address for me?",
    "Can you read me the account number, please?",
]
CUSTOMER_GIVE = {
    "phone": ["Sure, it's {phone}.", "Yeah it's {phone}, that's my cell.", "The number is {phone}."],
    "email": ["It's {email}.", "Um, {email}, I think that's the one.", "My email is {email}."],
    "order": ["The order number is {order}.", "It's {order_spoken}.", "I have it here, {order}."],
    "spell": ["Sure, it's {spelled}.", "{spelled}, yeah.", "It's spelled {spelled}."],
    "username": ["My username is {username}.", "I think the user name is {username}.",
                 "It's {username}, all lower case."],
    "address": ["It's {street}, {city}.", "We're at {street} in {city}.", "The address is {street}, {city}, {state}."],
    "account": ["Okay, it's {account}.", "The account number is {account}.", "It's {account_spoken}."],
}
SLOT_OF_ASK = ["phone", "email", "order", "spell", "username", "address", "account"]
AGENT_CONFIRM = [
    "Thank you, I found the account.",
    "Okay, give me one second while I pull that up.",
    "Alright, I see it here.",
    "Perfect, thanks for that.",
    "Let me just check on that for you.",
]
CUSTOMER_PROBLEM = [
    "So I was charged twice this month and I don't know why.",
    "My package was supposed to arrive on Monday and it still isn't here.",
    "I can't log in anymore, it keeps saying my password is wrong.",
    "The internet has been going in and out all week.",
    "I want to cancel the subscription, I'm not really using it.",
    "I got a letter saying my payment was late, but I paid it on time.",
    "The item I received is broken, the screen is cracked.",
    "I moved recently and I need to update my address.",
    "I was told someone would call me back but nobody did.",
    "My card was declined but I have money in the account.",
]
SMALL_TALK = [
    "Uh-huh.", "Okay.", "Yeah.", "Right, right.", "Oh, I see.", "Sure.", "Mm-hmm.", "Okay, that makes sense.",
    "I understand, that sounds frustrating.", "Yeah, it's been a long week, you know.",
    "Sorry, could you say that again?", "No problem at all.", "Thanks for your patience.",
    "I really appreciate it.", "Let me see what I can do.", "Is there anything else I can help with?",
    "No, I think that's it.", "Well, I'm glad we could sort that out.", "That would be great, thank you.",
    "I'll put a note on the account so the next person knows.", "It should take about three to five business days.",
    "You should get a confirmation email shortly.", "I've gone ahead and reset it for you.",
    "Can you try restarting the router and see if that helps?", "I'm going to issue a refund for the second charge.",
    "The weather here has been terrible, so maybe that's why.", "My kids were using it all weekend, so who knows.",
]
AGENT_REFER = [
    "I'm going to transfer you to my colleague {agent2} in the billing team.",
    "If you call back, ask for {agent2}, she handles these cases.",
    "Our office in {city} will send a technician.",
    "You can also stop by the {company} store on {street}.",
]
CUSTOMER_CLOSE = [
    "Thanks {agent}, you've been really helpful.",
    "Okay, thank you so much, bye.",
    "Alright, have a good one.",
    "Great, thanks, I'll keep an eye out for the email at {email}.",
]


def spoken_digits(s: str, rng: random.Random) -> str:
    return " ".join(DIGITS[int(c)] for c in s if c.isdigit())


def make_person(fake, rng: random.Random) -> dict[str, str]:
    first, last = fake.first_name(), fake.last_name()
    year = rng.randint(1950, 2004)
    username = rng.choice([f"{first.lower()}{last.lower()[:4]}{year % 100:02d}", f"{first[0].lower()}{last.lower()}",
                           f"{fake.word()}{rng.randint(10, 999)}", f"Mr{fake.word().capitalize()}{fake.word()}"])
    return {"first": first, "name": f"{first} {last}", "last": last, "username": username,
            "email": f"{first.lower()}.{last.lower()}@{fake.free_email_domain()}",
            "phone": fake.numerify(rng.choice(["###-###-####", "(###) ###-####", "### ### ####"])),
            "city": fake.city(), "state": fake.state(), "street": fake.street_address()}


class Utterance:
    """Builds a text from a template while recording where each slot lands."""

    LABELS = {"company": "ORGANIZATION_NAME", "agent": "PERSON_NAME", "agent2": "PERSON_NAME",
              "customer": "PERSON_NAME", "customer_first": "PERSON_NAME", "city": "LOCATION", "state": "LOCATION",
              "street": "STREET_ADDRESS", "phone": "PHONE_NUMBER", "email": "EMAIL_ADDRESS", "order": "NUMBER",
              "order_spoken": "NUMBER", "account": "NUMBER", "account_spoken": "NUMBER",
              "spelled": "SPELLED_WORD", "username": "USERNAME"}

    def __init__(self, template: str, values: dict[str, str]) -> None:
        self.spans: list[dict[str, object]] = []
        parts, pos = [], 0
        for m in re.finditer(r"\{(\w+)\}", template):
            parts.append(template[pos:m.start()])
            start = sum(len(p) for p in parts)
            value = values[m.group(1)]
            parts.append(value)
            self.spans.append({"start": start, "end": start + len(value), "label": self.LABELS[m.group(1)]})
            pos = m.end()
        parts.append(template[pos:])
        self.text = "".join(parts)


def conversation(conv_id: str, fake, rng: random.Random, agents: list[dict], customers: list[dict],
                 companies: list[str]) -> list[dict]:
    agent, agent2 = rng.sample(agents, 2)
    customer = rng.choice(customers)
    company = rng.choice(companies)
    order = fake.numerify("#######")
    account = fake.numerify("#### #### ##")
    values = {"company": company, "agent": agent["first"], "agent2": agent2["first"], "customer": customer["name"],
              "customer_first": customer["first"], "city": customer["city"], "state": customer["state"],
              "street": customer["street"], "phone": customer["phone"], "email": customer["email"],
              "order": order, "order_spoken": spoken_digits(order, rng), "account": account,
              "account_spoken": spoken_digits(account, rng), "username": customer["username"],
              "spelled": "-".join(customer["last"].upper())}
    turns: list[tuple[str, str]] = [("agent", rng.choice(AGENT_OPEN)), ("customer", rng.choice(CUSTOMER_INTRO)),
                                    ("agent", rng.choice(SMALL_TALK[:8])), ("customer", rng.choice(CUSTOMER_PROBLEM))]
    for ask in rng.sample(range(len(AGENT_ASK)), rng.randint(1, 3)):
        turns.append(("agent", AGENT_ASK[ask]))
        turns.append(("customer", rng.choice(CUSTOMER_GIVE[SLOT_OF_ASK[ask]])))
        turns.append(("agent", rng.choice(AGENT_CONFIRM)))
    for _ in range(rng.randint(2, 5)):
        turns.append((rng.choice(["agent", "customer"]), rng.choice(SMALL_TALK)))
    if rng.random() < 0.5:
        turns.append(("agent", rng.choice(AGENT_REFER)))
    turns.append(("agent", rng.choice(SMALL_TALK[14:17])))
    turns.append(("customer", rng.choice(CUSTOMER_CLOSE)))
    out = []
    for i, (speaker, template) in enumerate(turns, 1):
        u = Utterance(template, values)
        person = agent["id"] if speaker == "agent" else customer["id"]
        out.append({"id": f"{conv_id}:{i}", "conversation": conv_id, "speaker": speaker, "person": person,
                    "text": u.text, "spans": u.spans})
    return out


def generate(n_train: int, n_test: int, seed: int = 13) -> tuple[list[dict], list[dict]]:
    from faker import Faker

    fake = Faker("en_US")
    Faker.seed(seed)
    rng = random.Random(seed)
    agents = [dict(make_person(fake, rng), id=f"agent{i:02d}") for i in range(12)]
    # fewer customers than conversations: some people call several times (per-person audits need that)
    customers = [dict(make_person(fake, rng), id=f"cust{i:03d}") for i in range((n_train + n_test) * 3 // 4)]
    companies = [fake.company() for _ in range(25)]
    convs = [conversation(f"call{c:04d}", fake, rng, agents, customers, companies) for c in range(n_train + n_test)]
    train = [u for conv in convs[:n_train] for u in conv]
    test = [u for conv in convs[n_train:] for u in conv]
    return train, test


def write_jsonl(path: Path, records: list[dict]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=300)
    ap.add_argument("--test-conversations", type=int, default=60)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    train, test = generate(args.conversations, args.test_conversations, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "calls.jsonl", train)
    write_jsonl(args.out / "calls_test.jsonl", test)
    print(f"wrote {len(train)} train and {len(test)} test utterances to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
