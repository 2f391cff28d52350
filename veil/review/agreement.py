"""Review stage: agreement between two reviewers of the same sample (two review files of one masked file).

On the documents both marked done:

- **masks**: each placeholder is kept or rejected by each reviewer; observed agreement and Cohen's
  kappa (chance agreement from each reviewer's own reject rate); of the masks both kept, the share
  given the same type (and identifier type);
- **missed PI**: reviewer A's tags and B's are paired by overlap in the masked text (largest overlap
  first, each tag paired once); F1 = 2·paired / (A's + B's) (the Dice coefficient: symmetric, no
  reviewer is the reference), the share of pairs with the same boundaries and with the same type;
- **documents**: whether a document has any missed PI, per reviewer; agreement and kappa.

Kappa is ``None`` where chance agreement is 1 (both reviewers made one same choice throughout).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from veil.errors import VeilError
from veil.review.session import ReviewDoc, _current
from veil.review.store import DocState


def kappa(pairs: Sequence[tuple[bool, bool]]) -> tuple[float | None, float | None]:
    """(observed agreement, Cohen's kappa) of two raters' yes/no labels."""
    n = len(pairs)
    if not n:
        return None, None
    po = sum(a == b for a, b in pairs) / n
    pa = sum(a for a, _ in pairs) / n
    pb = sum(b for _, b in pairs) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    return po, (None if pe >= 1 else (po - pe) / (1 - pe))


def _pair_tags(a: list[Any], b: list[Any]) -> list[tuple[Any, Any]]:
    cand = []
    for x in a:
        for y in b:
            ov = min(x.end, y.end) - max(x.start, y.start)
            if ov > 0:
                cand.append((ov, x.n, y.n, x, y))
    cand.sort(key=lambda c: (-c[0], c[1], c[2]))
    used_a: set[int] = set()
    used_b: set[int] = set()
    out = []
    for _, na, nb, x, y in cand:
        if na in used_a or nb in used_b:
            continue
        used_a.add(na)
        used_b.add(nb)
        out.append((x, y))
    return out


def agreement(docs: Sequence[ReviewDoc], a: Mapping[str, DocState], b: Mapping[str, DocState]) -> dict[str, Any]:
    both = [d for d in docs if a.get(d.masked.id, DocState()).done and b.get(d.masked.id, DocState()).done]
    if not both:
        raise VeilError("no document is marked done in both reviews; nothing to compare")
    keep: list[tuple[bool, bool]] = []
    same_type = kept_both = 0
    n_a = n_b = paired = same_bounds = same_label = 0
    doc_any: list[tuple[bool, bool]] = []
    for d in both:
        sa, sb = a[d.masked.id], b[d.masked.id]
        for i in range(len(d.masked.placeholders)):
            ka, kb = i not in sa.rejected, i not in sb.rejected
            keep.append((ka, kb))
            if ka and kb:
                kept_both += 1
                same_type += _current(d, sa, i) == _current(d, sb, i)
        ma, mb = list(sa.missed.values()), list(sb.missed.values())
        n_a, n_b = n_a + len(ma), n_b + len(mb)
        for x, y in _pair_tags(ma, mb):
            paired += 1
            same_bounds += (x.start, x.end) == (y.start, y.end)
            same_label += (x.label, x.itype) == (y.label, y.itype)
        doc_any.append((bool(ma), bool(mb)))
    keep_po, keep_k = kappa(keep)
    doc_po, doc_k = kappa(doc_any)
    return {
        "documents": len(both),
        "masks": {"compared": len(keep), "agreement": keep_po, "kappa": keep_k,
                  "rejected_a": sum(not x for x, _ in keep), "rejected_b": sum(not y for _, y in keep),
                  "kept_by_both": kept_both, "same_type": same_type / kept_both if kept_both else None},
        "missed": {"a": n_a, "b": n_b, "paired": paired,
                   "f1": 2 * paired / (n_a + n_b) if n_a + n_b else None,
                   "same_boundaries": same_bounds / paired if paired else None,
                   "same_type": same_label / paired if paired else None},
        "documents_with_missed": {"a": sum(x for x, _ in doc_any), "b": sum(y for _, y in doc_any),
                                  "agreement": doc_po, "kappa": doc_k},
    }


def format_agreement(r: Mapping[str, Any], name_a: str, name_b: str) -> str:
    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    m, t, dm = r["masks"], r["missed"], r["documents_with_missed"]
    rows = [
        ("documents done by both", str(r["documents"])),
        ("masks compared", str(m["compared"])),
        (f"masks rejected ({name_a} / {name_b})", f"{m['rejected_a']} / {m['rejected_b']}"),
        ("keep/reject agreement", f(m["agreement"])),
        ("keep/reject Cohen's kappa", f(m["kappa"])),
        ("same type, of masks both kept", f(m["same_type"])),
        (f"missed PI tags ({name_a} / {name_b})", f"{t['a']} / {t['b']}"),
        ("missed PI tags paired (overlap)", str(t["paired"])),
        ("missed PI F1 (Dice)", f(t["f1"])),
        ("same boundaries, of pairs", f(t["same_boundaries"])),
        ("same type, of pairs", f(t["same_type"])),
        (f"documents with missed PI ({name_a} / {name_b})", f"{dm['a']} / {dm['b']}"),
        ("any-missed agreement", f(dm["agreement"])),
        ("any-missed Cohen's kappa", f(dm["kappa"])),
    ]
    w = max(len(k) for k, _ in rows)
    v = max(len(x) for _, x in rows)
    lines = [f"| {'measure'.ljust(w)} | {'value'.rjust(v)} |", f"|{'-' * (w + 2)}|{'-' * (v + 2)}|"]
    lines += [f"| {k.ljust(w)} | {x.rjust(v)} |" for k, x in rows]
    return "\n".join(lines)
