"""Agreement between two independent annotations of the same conversations (switchboard_pii format).

    python scripts/annotation_agreement.py A.jsonl B.jsonl [--data ../shared/data] [--json OUT]

A and B are switchboard_pii JSONL files with or without text (``{id, length, spans}`` as shipped, the text then
read from the Switchboard train folder). Prints, over the utterances both annotated:

- span agreement: exact (same start, end) F1 of B against A, for every span and for DIRECT + QUASI spans, and the
  share of exactly matched spans that also agree on type and on class;
- word-level Cohen's kappa over the labels O / DIRECT / QUASI / OPTIONAL of every word.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

WORD = re.compile(r"\S+")


def load(path: Path) -> dict[str, dict]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            out[rec["id"]] = rec
    return out


def text_of(rec: dict, data: Path, cache: dict[str, list[str]]) -> str:
    if "text" in rec:
        return rec["text"]
    conv, line = rec["id"].rsplit("-", 1)
    if conv not in cache:
        cache[conv] = (data / "switchboard" / "train" / f"{conv}.txt").read_text(encoding="utf-8").split("\n")
    return cache[conv][int(line)].split("|")[1]


def word_labels(text: str, spans: list[dict]) -> list[str]:
    out = []
    for m in WORD.finditer(text):
        cls = next((s["class"] for s in spans if s["start"] < m.end() and m.start() < s["end"]), "O")
        out.append(cls)
    return out


def kappa(a: list[str], b: list[str]) -> float:
    n = len(a)
    po = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    return (po - pe) / (1 - pe) if pe < 1 else 1.0


def agreement(a: dict[str, dict], b: dict[str, dict], data: Path) -> dict:
    ids = sorted(set(a) & set(b))
    cache: dict[str, list[str]] = {}
    res: dict = {"utterances": len(ids), "conversations": len({i.rsplit("-", 1)[0] for i in ids})}
    for name, keep in (("all", None), ("direct_quasi", ("DIRECT", "QUASI"))):
        sa = {(i, s["start"], s["end"]): s for i in ids for s in a[i]["spans"] if keep is None or s["class"] in keep}
        sb = {(i, s["start"], s["end"]): s for i in ids for s in b[i]["spans"] if keep is None or s["class"] in keep}
        both = set(sa) & set(sb)
        p, r = len(both) / max(1, len(sb)), len(both) / max(1, len(sa))
        res[name] = {"spans_a": len(sa), "spans_b": len(sb), "exact": len(both),
                     "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0,
                     "same_type": round(sum(sa[k]["type"] == sb[k]["type"] for k in both) / max(1, len(both)), 4),
                     "same_class": round(sum(sa[k]["class"] == sb[k]["class"] for k in both) / max(1, len(both)), 4)}
    la, lb = [], []
    for i in ids:
        text = text_of(a[i], data, cache)
        la += word_labels(text, a[i]["spans"])
        lb += word_labels(text, b[i]["spans"])
    res["words"] = len(la)
    res["word_kappa"] = round(kappa(la, lb), 4)
    res["word_kappa_personal"] = round(kappa(["O" if x == "OPTIONAL" else x for x in la],
                                             ["O" if x == "OPTIONAL" else x for x in lb]), 4)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    res = agreement(load(args.a), load(args.b), args.data)
    print(json.dumps(res, indent=1))
    if args.json:
        args.json.write_text(json.dumps(res, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
