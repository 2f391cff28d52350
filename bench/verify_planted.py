"""Audit check: `veil verify` on veil's own output for the README's example, clean and with planted survivors.

    python bench/verify_planted.py [--out DIR] [--show-values]

Masks examples/calls.jsonl with the default maskers, fills it with Faker and runs `veil verify` on the
result (clean: exit 0). Then plants, in a copy, one survivor of each kind the check looks for
(:func:`plant`) and runs it again (exit 1), printing both reports. The planted values are whatever
the masking removed from those documents (read back through the placeholders' alignment), so the
check does not depend on which values a masker finds.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "calls.jsonl"


def _spelled(v: str) -> str:
    return "-".join(c.upper() for c in v if c.isalnum())


def _spoken_digits(v: str) -> str:
    from veil.textforms import DIGIT_WORDS

    return " ".join(DIGIT_WORDS[int(c)] for c in v if c.isdigit())


def removed_by_label(original: Path, masked: Path) -> dict[str, dict[str, str]]:
    """document id -> {type: the value the masking removed} (the last one of each type)."""
    from veil.io.records import read_masked
    from veil.mask.align import original_values

    originals = {json.loads(x)["id"]: json.loads(x)["text"] for x in original.read_text().splitlines()}
    return {md.id: {label: v for _, _, label, v in original_values(originals[md.id], md)}
            for md in read_masked(masked)}


def plant(original: Path, masked: Path, filled: Path) -> list[str]:
    """Plant survivors of every kind into FILLED and the files beside it; returns what was planted."""
    values = removed_by_label(original, masked)
    name = values["c1-2"]["PERSON_NAME"]
    phone, email = values["c1-8"]["PHONE_NUMBER"], values["c1-8"]["EMAIL_ADDRESS"]
    card = values["c1-6"]["CREDIT_CARD_NUMBER"]
    recs = [json.loads(x) for x in filled.read_text().splitlines()]
    by_id = {r["id"]: r for r in recs}
    by_id["c1-2"]["text"] += f" Again: {name}. Or {name.lower().replace(' ', '  ')}! Spelled {_spelled(name)}."
    by_id["c1-8"]["text"] += (f" Say it: {_spoken_digits(phone)}; write "
                              f"{email.replace('.', ' dot ').replace('@', ' at ')}.")
    by_id["c1-6"]["text"] += f" Card {card.replace(' ', '')}, or {_spoken_digits(card)}."
    by_id["c1-2"]["notes"] = f"caller: {name}"  # another field copied through
    by_id["c1-1"]["notes"] = f"caller: {name}"  # another document: its own values only are looked for
    # a substitute that drew the real value back, in the text and in the substitutions file
    subs_path = filled.with_name(filled.name + ".substitutions.jsonl")
    subs = [json.loads(x) for x in subs_path.read_text().splitlines()]
    sub = next(s for s in subs if s["id"] == "c1-2" and s["label"] == "PERSON_NAME")
    text = by_id["c1-2"]["text"]
    by_id["c1-2"]["text"] = text[:sub["start"]] + name + text[sub["end"]:]
    shift = len(name) - (sub["end"] - sub["start"])
    for s in subs:
        if s["id"] == "c1-2" and s["start"] > sub["start"]:
            s["start"], s["end"] = s["start"] + shift, s["end"] + shift
    sub["substitute"], sub["end"] = name, sub["start"] + len(name)
    filled.write_text("".join(json.dumps(r) + "\n" for r in recs))
    subs_path.write_text("".join(json.dumps(s) + "\n" for s in subs))
    manifest = filled.with_name(filled.name + ".veil.json")
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "note": email}, indent=1))
    shutil.copy(filled, filled.with_name(filled.name + ".partial"))  # an unfinished run left behind
    return ["c1-2 text: the name verbatim, lower-cased with doubled spaces, spelled letter by letter",
            "c1-2 text: a substitute equal to the name (also in the substitutions file)",
            "c1-2 notes: the name in another field", "c1-1 notes: c1-2's name (another document: not a survivor)",
            "c1-8 text: the phone number digit by digit, the e-mail spoken",
            "c1-6 text: the card number without spaces and digit by digit",
            "FILLED.veil.json: the e-mail; FILLED.partial: a copy of the planted output"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="folder for the files (default: a temporary one)")
    ap.add_argument("--show-values", action="store_true")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from veil.cli import main as veil

    out = args.out or Path(tempfile.mkdtemp(prefix="veil-verify-"))
    out.mkdir(parents=True, exist_ok=True)
    masked, filled = out / "masked.jsonl", out / "filled.jsonl"
    assert veil(["mask", str(EXAMPLES), "-o", str(masked), "-q", "--overwrite"]) == 0
    assert veil(["fill", str(masked), "-o", str(filled), "--filler", "faker", "-q", "--overwrite"]) == 0
    show = ["--show-values"] if args.show_values else []
    print(f"$ veil verify examples/calls.jsonl {filled.name} --masked {masked.name}")
    clean = veil(["verify", str(EXAMPLES), str(filled), "--masked", str(masked), *show])
    print(f"(exit {clean})\n")
    planted = out / "planted"
    planted.mkdir(exist_ok=True)
    for f in filled.parent.glob(filled.name + "*"):
        shutil.copy(f, planted / f.name)
    for line in plant(EXAMPLES, masked, planted / filled.name):
        print(f"planted: {line}")
    print(f"\n$ veil verify examples/calls.jsonl planted/{filled.name} --masked {masked.name}")
    dirty = veil(["verify", str(EXAMPLES), str(planted / filled.name), "--masked", str(masked), *show])
    print(f"(exit {dirty})")
    return 0 if (clean, dirty) == (0, 1) else 1


if __name__ == "__main__":
    sys.exit(main())
