"""Audit check: `veil verify` as a release gate on real and generated calls, clean and planted, and its cost.

    python bench/bench_verify.py [--out DIR] [--calls 19] [--seed 0] [--filler llm] [--gen-filler faker]
                                 [--gen-seeds 7]

1. **Real calls.** ``--calls`` Switchboard training conversations drawn by ``--seed`` (none of those the
   detector was trained on: ``veil/data/detector/switchboard_train_pii.jsonl``) and the annotated
   validation calls (``switchboard_pii/val_gold.jsonl``), one utterance a record with its call in
   ``call``. Three utterances are added to three of the calls, as a caller says them: a phone number,
   a zip code and an accented name (Switchboard speaks its numbers, so it has none to plant). The
   default ``veil mask --group-field call`` and ``veil fill`` (``--filler``), then ``veil verify``:
   the clean run must exit 0.
2. **Planted.** A copy of the filled corpus with one copy of each kind (:data:`KINDS`): the first name
   of a person's name the masking removed, said again in another utterance of its call; the phone in
   fullwidth digits and in mixed spoken and written digits; the zip in Arabic-Indic digits; a name
   with Cyrillic look-alike letters; the accented name without its accents; and a filler that
   copies one original in ten. It must exit 1 with every kind found.
3. **Generated calls.** ``veil.mask.neural.dialogues`` calls of about 500 utterances on
   ``--gen-seeds`` seeds, masked the same way and filled with ``--gen-filler`` (default faker: the same
   typed draws as every filler, without loading a language model seven times): each must exit 0.
4. **Time.** One document of 1k, 8k, 64k and 250k characters (the real calls' utterances joined,
   their placeholders and substitutions moved with them): seconds per 1,000 characters of
   ``verify`` (reading, aligning, looking for every value, judging chance matches).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
SEEN = ROOT / "veil" / "data" / "detector" / "switchboard_train_pii.jsonl"
#: what step 1 adds to three calls (original text): values the masking removes, for the digit and accent kinds
ADDED = {"phone": "you can call me at (415) 555-0199 any evening", "zip": "the zip code there is 94110",
         "accent": "my neighbour José García said the same thing"}
KINDS = ("name elsewhere in the call", "fullwidth digits", "Arabic-Indic digits", "Cyrillic look-alikes",
         "accents stripped", "mixed spoken and written digits", "filler copies 1 in 10")


def _write(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    return path


def _read(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def real_calls(n_calls: int, seed: int) -> list[dict]:
    """The real calls of step 1 (with the three added utterances), one utterance a record."""
    seen = {json.loads(x)["id"].split("-")[0] for x in SEEN.read_text().splitlines() if x.strip()}
    files = sorted(p for p in (DATA / "switchboard" / "train").glob("*.txt") if p.stem not in seen)
    recs = []
    for f in random.Random(seed).sample(files, n_calls):
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
            parts = line.split("|")
            if len(parts) >= 3 and parts[1].strip():
                recs.append({"id": f"{f.stem}-{n}", "call": f.stem, "text": "|".join(parts[1:-1])})
    for r in _read(DATA / "switchboard_pii" / "val_gold.jsonl"):
        recs.append({"id": r["id"], "call": r["id"].split("-")[0], "text": r["text"]})
    calls = list(dict.fromkeys(r["call"] for r in recs))
    for (kind, text), call in zip(ADDED.items(), calls[1:4]):  # after the first utterance of three calls
        at = next(i for i, r in enumerate(recs) if r["call"] == call)
        recs.insert(at + 1, {"id": f"{call}-{kind}", "call": call, "text": text})
    return recs


def generated_calls(seed: int, lines: int = 500) -> list[dict]:
    from veil.mask.neural.dialogues import generate

    recs: list[dict] = []
    d = 0
    while len(recs) < lines:
        text, _ = generate(1, seed * 1000 + d)[0]
        for n, line in enumerate(text.splitlines()):
            recs.append({"id": f"g{seed}-{d}-{n}", "call": f"g{seed}-{d}", "text": line})
        d += 1
    return recs


def mask_fill(veil, orig: Path, out: Path, filler: str) -> tuple[Path, Path]:
    masked, filled = out / "masked.jsonl", out / "filled.jsonl"
    assert veil(["mask", str(orig), "-o", str(masked), "-q", "--overwrite", "--group-field", "call"]) == 0
    assert veil(["fill", str(masked), "-o", str(filled), "-q", "--overwrite", "--filler", filler]) == 0
    return masked, filled


def run_verify(orig: Path, filled: Path, masked: Path):
    from veil.audit.verify import verify

    return verify(orig, filled, masked)  # the group field: the one veil mask recorded


def removed_values(orig: Path, masked: Path) -> dict[str, list[tuple[int, str, str]]]:
    """document id -> (placeholder index, label, value) of every value the masking removed."""
    from veil.io.records import read_masked
    from veil.mask.align import original_values

    texts = {r["id"]: r["text"] for r in _read(orig)}
    return {md.id: [(i, lab, v) for i, (_, _, lab, v) in enumerate(original_values(texts[md.id], md))]
            for md in read_masked(masked)}


def _fullwidth(s: str) -> str:
    return "".join(chr(ord(c) - 0x30 + 0xFF10) if c.isdigit() else c for c in s)


def _arabic_indic(s: str) -> str:
    return "".join(chr(ord(c) - 0x30 + 0x660) if c.isdigit() else c for c in s)


def _cyrillic(s: str) -> str:
    return s.translate(str.maketrans("aoecpAOECP", "аоесрАОЕСР"))


def _mixed(s: str) -> str:
    from veil.shapes import DIGIT_WORDS

    digits = [c for c in s if c.isdigit()]  # (415) 555-0199 -> four 1 five 555 0199
    return f"{DIGIT_WORDS[int(digits[0])]} {digits[1]} {DIGIT_WORDS[int(digits[2])]} {''.join(digits[3:6])} " \
           f"{''.join(digits[6:])}"


def plant(orig: Path, masked: Path, filled: Path, seed: int) -> dict[str, tuple[str, int, int]]:
    """Plant one copy of each kind into FILLED (and its substitutions file); kind -> (document, start, end)
    of the planted text (for the copier: its first copied substitute)."""
    recs = _read(orig)
    call_of = {r["id"]: r["call"] for r in recs}
    values = removed_values(orig, masked)
    out = _read(filled)
    by_id = {r["id"]: r for r in out}
    planted: dict[str, tuple[str, int, int]] = {}
    used: set[str] = set()

    def other_utterance(doc: str) -> str:  # a later utterance of the call, not yet planted into
        call = call_of[doc]
        ids = [r["id"] for r in recs if r["call"] == call and r["id"] != doc and r["id"] not in used]
        return ids[len(ids) // 2]

    def put(kind: str, doc: str, text: str) -> None:
        target = other_utterance(doc)
        used.add(target)
        rec = by_id[target]
        start = len(rec["text"]) + 1
        rec["text"] += " " + text
        planted[kind] = (target, start, start + len(text))

    # a person's name as a name is written (every word capitalised, three letters or more, none a word the
    # fill writes of its own: "Cafe" of "Cafe Max", "Governor" of "Governor Mario"): the tagger also tags
    # car makes, restaurants and sayings as names
    from veil.mask.value_words import fill_words

    names = [(d, v) for d, vs in sorted(values.items()) for _, lab, v in vs
             if lab == "PERSON_NAME" and " " in v and d.split("-")[1] not in ADDED
             and all(w.istitle() and len(w) > 2 and w.lower() not in fill_words() for w in v.split(" "))]
    rng = random.Random(seed)
    doc, name = rng.choice(names)
    put(KINDS[0], doc, f"yes, {name.split(' ')[0]} said so")  # the first name alone, as in "Hope" of "Hope Ashworth"
    doc, name = rng.choice([x for x in names if x[0] != doc and any(c in x[1] for c in "aoecp")])
    put(KINDS[3], doc, f"yes, {_cyrillic(name)} said so")
    added = {kind: next((d, v) for d, vs in values.items() if d.endswith("-" + kind) for _, _, v in vs
                        if v in ADDED[kind]) for kind in ADDED}
    phone_doc, phone = added["phone"]
    put(KINDS[1], phone_doc, f"that's {_fullwidth(phone)}")
    put(KINDS[5], phone_doc, f"again {_mixed(phone)}")
    zip_doc, zipcode = added["zip"]
    put(KINDS[2], zip_doc, f"it is {_arabic_indic(zipcode)}")
    acc_doc, accented = added["accent"]
    put(KINDS[4], acc_doc, f"ask {_strip(accented)}")
    _copy_originals(out, filled, values, call_of, rng, planted, used)
    _write(filled, out)
    return planted


def _strip(s: str) -> str:
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


def _copy_originals(out: list[dict], filled: Path, values: dict, call_of: dict, rng: random.Random,
                    planted: dict, used: set[str], share: float = 0.1) -> None:
    """A filler that copies the original of one entity in ten (every mention of it), texts and substitutions."""
    subs_path = filled.with_name(filled.name + ".substitutions.jsonl")
    subs = _read(subs_path)
    per_doc: dict[str, list[dict]] = {}
    for s in subs:
        per_doc.setdefault(s["id"], []).append(s)
    chosen: dict[tuple[str, str], bool] = {}
    for rec in out:
        doc = rec["id"]
        if doc in used:
            continue
        shift = 0
        text = rec["text"]
        for i, s in enumerate(per_doc.get(doc, [])):
            s["start"] += shift
            s["end"] += shift
            entity = (call_of[doc], s["key"])
            if entity not in chosen:
                chosen[entity] = rng.random() < share
            if not chosen[entity]:
                continue
            original = values[doc][i][2]
            text = text[:s["start"]] + original + text[s["end"]:]
            shift += len(original) - (s["end"] - s["start"])
            s["substitute"], s["end"] = original, s["start"] + len(original)
            planted.setdefault(KINDS[6], (doc, s["start"], s["end"]))
        rec["text"] = text
    _write(subs_path, subs)


def found_kinds(report, planted: dict[str, tuple[str, int, int]]) -> dict[str, bool]:
    got = {}
    for kind, (doc, start, end) in planted.items():
        if kind == KINDS[6]:
            got[kind] = not report.chance.explained
        else:
            got[kind] = any(s.doc == doc and s.field == "text" and start <= s.start and s.end <= end
                            for s in report.survivors)
    return got


def one_document(orig: Path, masked: Path, filled: Path, chars: int, out: Path) -> tuple[Path, Path, Path]:
    """The first records joined into one document of about ``chars`` characters (placeholders and
    substitutions moved with their text)."""
    o_recs, m_recs, f_recs = _read(orig), _read(masked), _read(filled)
    subs: dict[str, list[dict]] = {}
    for s in _read(filled.with_name(filled.name + ".substitutions.jsonl")):
        subs.setdefault(s["id"], []).append(s)
    o_text, m_text, f_text, phs, new_subs = "", "", "", [], []
    i = 0
    while len(o_text) < chars:
        o, m, f = o_recs[i % len(o_recs)], m_recs[i % len(m_recs)], f_recs[i % len(f_recs)]
        if i:
            o_text, m_text, f_text = o_text + "\n", m_text + "\n", f_text + "\n"
        phs += [{**p, "start": p["start"] + len(m_text), "end": p["end"] + len(m_text),
                 "key": f"{p['key']}@{i}"} for p in m["placeholders"]]
        new_subs += [{**s, "id": "long", "start": s["start"] + len(f_text), "end": s["end"] + len(f_text),
                      "key": f"{s['key']}@{i}"} for s in subs.get(f["id"], [])]
        o_text, m_text, f_text = o_text + o["text"], m_text + m["text"], f_text + f["text"]
        i += 1
    d = out / f"long{chars}"
    d.mkdir(exist_ok=True)
    _write(d / "filled.jsonl.substitutions.jsonl", new_subs)
    return (_write(d / "orig.jsonl", [{"id": "long", "text": o_text}]),
            _write(d / "masked.jsonl", [{"id": "long", "text": m_text, "placeholders": phs, "style": "numbered"}]),
            _write(d / "filled.jsonl", [{"id": "long", "text": f_text}]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="folder for the files (default: a temporary one)")
    ap.add_argument("--calls", type=int, default=19)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--filler", default="llm", help="the filler (default: veil fill's default, llm)")
    ap.add_argument("--gen-filler", default="faker", help="the filler of the generated calls (default: faker)")
    ap.add_argument("--gen-seeds", type=int, default=7)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from veil.cli import main as veil

    out = args.out or Path(tempfile.mkdtemp(prefix="veil-bench-verify-"))
    out.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str]] = []
    t0 = time.perf_counter()
    # 1. real calls, clean
    real = out / "real"
    real.mkdir(exist_ok=True)
    orig = _write(real / "calls.jsonl", real_calls(args.calls, args.seed))
    masked, filled = mask_fill(veil, orig, real, args.filler)
    r = run_verify(orig, filled, masked)
    n_calls = len({x["call"] for x in _read(orig)})
    rows.append((f"real calls ({n_calls} calls, {r.documents} utterances, {r.values} values): exit",
                 f"{0 if r.clean else 1}; {len(r.survivors)} survivors{_by_type(r)}"))
    pools = ", ".join(f"{s.label} 1 in {s.pool:g}" for s in r.substitutes)
    rows.append(("real calls: chance matches (observed / expected of substitutes, P)",
                 f"{r.chance.observed} / {r.chance.expected:.2f} of {r.chance.substitutes}, P = {r.chance.p_value:.3g}"
                 + (f" ({pools})" if pools else "")))
    # 2. planted
    planted_dir = out / "planted"
    planted_dir.mkdir(exist_ok=True)
    for f in real.glob("filled.jsonl*"):
        shutil.copy(f, planted_dir / f.name)
    planted = plant(orig, masked, planted_dir / "filled.jsonl", args.seed)
    p = run_verify(orig, planted_dir / "filled.jsonl", masked)
    found = found_kinds(p, planted)
    rows.append(("planted: exit", f"{0 if p.clean else 1}; {len(p.survivors)} survivors; chance "
                 f"{p.chance.observed} / {p.chance.expected:.2f}, P = {p.chance.p_value:.3g}"))
    for kind in KINDS:
        rows.append((f"planted: {kind}", "found" if found.get(kind) else "MISSED"))
    # 3. generated calls
    gen_exits = []
    for seed in range(args.gen_seeds):
        g = out / f"gen{seed}"
        g.mkdir(exist_ok=True)
        gorig = _write(g / "calls.jsonl", generated_calls(seed))
        gm, gf = mask_fill(veil, gorig, g, args.gen_filler)
        gr = run_verify(gorig, gf, gm)
        gen_exits.append(0 if gr.clean else 1)
        rows.append((f"generated calls, seed {seed} ({gr.documents} utterances, {gr.values} values): exit",
                     f"{0 if gr.clean else 1}; {len(gr.survivors)} survivors{_by_type(gr)}; chance {gr.chance.observed} / "
                     f"{gr.chance.expected:.2f}, P = {gr.chance.p_value:.3g}"))
    # 4. time per character
    for chars in (1000, 8000, 64000, 250000):
        lo, lm, lf = one_document(orig, masked, filled, chars, out)
        best = min(_timed(lo, lf, lm) for _ in range(3 if chars < 100000 else 1))
        rows.append((f"time, one document of {chars // 1000}k characters",
                     f"{best / chars * 1000:.4f} s per 1k characters"))
    width = max(len(a) for a, _ in rows)
    print(f"| {'what'.ljust(width)} | result |\n|{'-' * (width + 2)}|--------|")
    for a, b in rows:
        print(f"| {a.ljust(width)} | {b} |")
    print(f"\n({time.perf_counter() - t0:.0f} s; files in {out})")
    ok = r.clean and not p.clean and all(found.get(k) for k in KINDS) and not any(gen_exits)
    return 0 if ok else 1


def _by_type(report) -> str:
    from collections import Counter

    counts = Counter(s.label for s in report.survivors)
    return f" ({', '.join(f'{k} {n}' for k, n in counts.most_common())})" if counts else ""


def _timed(orig: Path, filled: Path, masked: Path) -> float:
    t = time.perf_counter()
    run_verify(orig, filled, masked)
    return time.perf_counter() - t


if __name__ == "__main__":
    sys.exit(main())
