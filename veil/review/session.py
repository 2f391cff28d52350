"""Review stage: a review session -- the sampled masked documents, their originals, and the decisions on them.

Documents pair by id (the masked record keeps the input's id). With an original, each placeholder's
original span comes from :func:`veil.mask.align.align` (the text between placeholders is verbatim
original text, so each placeholder is the stretch between two such literals). The sample is seeded
and recorded in the review file's header, so a restart (or a second reviewer with the same
``--sample`` and ``--seed``) reviews the same documents.

:meth:`ReviewSession.decide` is the one place a decision is checked and written; the web app only
parses requests and calls it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from veil.errors import VeilError
from veil.io.formats import Fields
from veil.mask.align import Alignment, align
from veil.review.store import IDENTIFIER_TYPES, DocState, ReviewStore, fold, read_review_file
from veil.types import MaskedDocument

#: types offered for a missed piece of PI besides those the masking used (veil's maskers' labels)
DEFAULT_LABELS = ("PERSON_NAME", "ORGANIZATION_NAME", "LOCATION", "STREET_ADDRESS", "EMAIL_ADDRESS",
                  "PHONE_NUMBER", "GENERIC_ID", "CREDIT_CARD_NUMBER", "US_SOCIAL_SECURITY_NUMBER", "URL",
                  "USERNAME", "DATE", "AGE", "NATIONALITY", "OCCUPATION", "DEMOGRAPHIC", "QUASI_ID")
#: labels whose values identify someone alone (Elliot et al.'s direct identifiers; the paper's §4.2)
DIRECT_LABELS = frozenset({"PERSON_NAME", "PERSON", "STREET_ADDRESS", "EMAIL_ADDRESS", "PHONE_NUMBER", "GENERIC_ID",
                           "CREDIT_CARD_NUMBER", "US_SOCIAL_SECURITY_NUMBER", "USERNAME", "IP_ADDRESS",
                           "IBAN_CODE", "PASSPORT", "SPELLED_WORD", "CUSTOM"})
_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_LABEL_RE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")


def default_itype(label: str) -> str:
    return "DIRECT" if label in DIRECT_LABELS else "QUASI"


def review_path(masked: str | Path, reviewer: str | None = None, review_file: str | Path | None = None) -> Path:
    """``--review-file``, else ``MASKED.review.jsonl`` (``MASKED.review-NAME.jsonl`` with ``--reviewer NAME``)."""
    if review_file:
        return Path(review_file)
    masked = Path(masked)
    if reviewer is None:
        return masked.with_name(masked.name + ".review.jsonl")
    if not _NAME_RE.fullmatch(reviewer):
        raise VeilError(f"--reviewer {reviewer!r}: use letters, digits, '-' and '_' only (it names a file)")
    return masked.with_name(masked.name + f".review-{reviewer}.jsonl")


@dataclass(slots=True)
class ReviewDoc:
    index: int
    masked: MaskedDocument
    original: str | None
    alignment: Alignment | None


def _sample_ids(ids: Sequence[str], n: int | None, seed: int) -> list[str]:
    if n is None:
        return list(ids)
    if n < 1:
        raise VeilError("--sample must be at least 1")
    keep = set(random.Random(seed).sample(range(len(ids)), min(n, len(ids))))
    return [d for i, d in enumerate(ids) if i in keep]  # file order: a call reads in order


def load_documents(masked: str | Path, original: str | Path | None = None, *, sample: int | None = None,
                   seed: int = 0, ids: Sequence[str] | None = None, fields: Fields | None = None,
                   masked_format: str | None = None, original_format: str | None = None) -> list[ReviewDoc]:
    """The sampled masked documents (or exactly ``ids``), each with its original text and alignment."""
    from veil.io.formats import read_documents
    from veil.io.records import VEIL_FIELDS, read_masked

    fields = fields or VEIL_FIELDS
    if ids is None:
        all_ids = [d.id for d in read_masked(masked, masked_format, fields)]
        if not all_ids:
            raise VeilError(f"{masked}: no documents")
        if len(set(all_ids)) != len(all_ids):
            raise VeilError(f"{masked}: document ids repeat; a review pairs documents by id (--id-field)")
        ids = _sample_ids(all_ids, sample, seed)
    wanted = set(ids)
    by_id = {d.id: d for d in read_masked(masked, masked_format, fields) if d.id in wanted}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise VeilError(f"{masked}: {len(missing)} reviewed document(s) are no longer in the file (e.g. id "
                        f"{missing[0]!r})")
    originals: dict[str, str] = {}
    if original is not None:
        originals = {d.id: d.text for d in read_documents(original, original_format, fields) if d.id in wanted}
        lost = [i for i in ids if i not in originals]
        if lost:
            raise VeilError(f"{original}: {len(lost)} of the {len(ids)} reviewed documents have no record with the "
                            f"same id (e.g. {lost[0]!r}); the original must be the file that was masked")
    out = []
    for i, doc_id in enumerate(ids):
        md = by_id[doc_id]
        text = originals.get(doc_id)
        out.append(ReviewDoc(i, md, text, align(text, md) if text is not None else None))
    return out


class ReviewSession:
    """A review in progress: ``ReviewSession(masked, original, sample=100, seed=0, reviewer="ann")``.

    Use as a context manager (it holds the review file open and locked). Without ``original`` a
    review file that recorded one reuses it (same fingerprint), so a restart needs only MASKED.
    """

    def __init__(self, masked: str | Path, original: str | Path | None = None, *, sample: int | None = None,
                 seed: int = 0, reviewer: str | None = None, review_file: str | Path | None = None,
                 fields: Fields | None = None, masked_format: str | None = None,
                 original_format: str | None = None) -> None:
        from veil.io.output import input_fingerprint

        self.masked_path = Path(masked)
        if not self.masked_path.is_file():
            raise VeilError(f"{masked}: no such masked file")
        self.path = review_path(masked, reviewer, review_file)
        masked_fp = input_fingerprint(self.masked_path)["sha256"]
        ids = None
        prior = None
        if self.path.exists() and self.path.stat().st_size:
            prior, _ = read_review_file(self.path)
            if prior.get("masked_sha256") != masked_fp:
                raise VeilError(f"{self.path} holds a review of another masked file (or {masked} changed since); "
                                "give --review-file / --reviewer for a new review")
            if sample is not None and (prior.get("sample"), prior.get("seed")) != (sample, seed):
                raise VeilError(f"{self.path} reviews --sample {prior.get('sample')} --seed {prior.get('seed')}; "
                                "resume it with those (or none), or give --review-file / --reviewer for a new review")
            ids = prior.get("docs")
            if original is None and prior.get("original"):
                original = prior["original"]
                if not Path(original).is_file():
                    raise VeilError(f"{self.path} was reviewed beside the original {original}, which is gone; "
                                    "pass --original")
            sample, seed = prior.get("sample"), prior.get("seed", 0)
        self.original_path = Path(original) if original is not None else None
        self.docs = load_documents(masked, original, sample=sample, seed=seed, ids=ids, fields=fields,
                                   masked_format=masked_format, original_format=original_format)
        self.by_id = {d.masked.id: d for d in self.docs}
        # absolute paths: a restart or an export from another folder finds the files again
        header = {"masked": str(self.masked_path.resolve()), "masked_sha256": masked_fp,
                  "original": str(self.original_path.resolve()) if self.original_path else None,
                  "original_sha256": (input_fingerprint(self.original_path)["sha256"] if self.original_path
                                      else None),
                  "sample": sample, "seed": seed, "reviewer": reviewer, "docs": [d.masked.id for d in self.docs]}
        self.store = ReviewStore(self.path, header)
        present = {p.label for d in self.docs for p in d.masked.placeholders if p.label != "MASK"}
        self.labels = sorted(present) + [lab for lab in DEFAULT_LABELS if lab not in present]

    def __enter__(self) -> "ReviewSession":
        self.store.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.store.__exit__(*exc)

    # --- what the page shows ------------------------------------------------------------------
    def states(self) -> dict[str, DocState]:
        return self.store.state()

    def summary(self) -> dict[str, Any]:
        states = self.states()
        docs = []
        for d in self.docs:
            st = states.get(d.masked.id, DocState())
            labels = {_current(d, st, i)[0] for i in range(len(d.masked.placeholders)) if i not in st.rejected}
            labels |= {m.label for m in st.missed.values()}
            docs.append({"index": d.index, "id": d.masked.id, "done": st.done, "touched": st.touched,
                         "labels": sorted(labels), "masks": len(d.masked.placeholders), "missed": len(st.missed),
                         "rejected": len(st.rejected)})
        return {"total": len(self.docs), "done": sum(x["done"] for x in docs), "docs": docs,
                "labels": self.labels, "itypes": {lab: default_itype(lab) for lab in self.labels},
                "reviewer": self.store.header.get("reviewer"), "has_original": self.original_path is not None}

    def doc(self, index: int) -> ReviewDoc:
        if not (0 <= index < len(self.docs)):
            raise VeilError(f"no document {index} (the sample has {len(self.docs)})")
        return self.docs[index]

    def view(self, index: int) -> dict[str, Any]:
        d = self.doc(index)
        st = self.states().get(d.masked.id, DocState())
        phs = []
        for i, p in enumerate(d.masked.placeholders):
            label, itype = _current(d, st, i)
            phs.append({"i": i, "start": p.start, "end": p.end, "label": label, "itype": itype, "key": p.key,
                        "masked_label": p.label, "rejected": i in st.rejected, "reject_n": st.rejected.get(i),
                        "relabeled": i in st.relabeled})
        view: dict[str, Any] = {
            "index": index, "id": d.masked.id, "group": d.masked.group, "text": d.masked.text, "placeholders": phs,
            "missed": [{"n": m.n, "start": m.start, "end": m.end, "label": m.label, "itype": m.itype,
                        "partial": m.partial} for m in st.missed.values()],
            "done": st.done, "last": st.last[-1] if st.last else None, "original": None}
        if d.original is not None and d.alignment is not None:
            a = d.alignment
            view["original"] = {"text": d.original,
                                "spans": [{"i": i, "start": s, "end": e} for i, (s, e) in enumerate(a.spans)],
                                "missed": [{"n": m.n, "start": a.to_original(m.start), "end": a.to_original(m.end)}
                                           for m in st.missed.values()]}
        return view

    # --- what the page may change -------------------------------------------------------------
    def decide(self, index: int, req: dict[str, Any]) -> dict[str, Any]:
        """Check one decision from the page against the document, write it, return the new view."""
        d = self.doc(index)
        st = self.states().get(d.masked.id, DocState())
        action = req.get("action")
        n_ph = len(d.masked.placeholders)
        rec: dict[str, Any] = {"doc": d.masked.id, "action": action}
        if action == "missed":
            start, end = _int(req, "start"), _int(req, "end")
            text = d.masked.text
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if not (0 <= start < end <= len(text)):
                raise VeilError("select some text of the masked document first")
            if any(p.start < end and start < p.end for p in d.masked.placeholders):
                raise VeilError("a missed piece cannot include a placeholder; select only the text beside it")
            if any(m.start < end and start < m.end for m in st.missed.values()):
                raise VeilError("this text overlaps a piece already tagged; remove that one first")
            label = _label(req.get("label"))
            rec.update(start=start, end=end, text=text[start:end], label=label,
                       itype=_itype(req.get("itype"), label), partial=bool(req.get("partial", False)))
        elif action in ("reject", "relabel"):
            ph = _int(req, "ph")
            if not (0 <= ph < n_ph):
                raise VeilError(f"no placeholder {ph} in this document")
            rec.update(ph=ph, key=d.masked.placeholders[ph].key)
            if action == "reject" and ph in st.rejected:
                raise VeilError("this mask is rejected already (undo restores it)")
            if action == "relabel":
                label = _label(req.get("label"))
                rec.update(label=label, itype=_itype(req.get("itype"), label))
        elif action == "done":
            rec["value"] = bool(req.get("value", True))
        elif action == "undo":
            target = req.get("target")
            if target is None:  # the document's latest decision in force
                if not st.last:
                    raise VeilError("nothing to undo in this document")
                target = st.last[-1]
            target = int(target)
            if target not in st.last:
                raise VeilError(f"decision {target} is not in force in this document")
            rec["target"] = target
        else:
            raise VeilError(f"unknown action {action!r}")
        self.store.append(rec)
        return self.view(index)


def _current(d: ReviewDoc, st: DocState, i: int) -> tuple[str, str]:
    if i in st.relabeled:
        label, itype, _ = st.relabeled[i]
        return label, itype
    label = d.masked.placeholders[i].label
    return label, default_itype(label)


def _int(req: dict[str, Any], key: str) -> int:
    try:
        return int(req[key])
    except (KeyError, TypeError, ValueError):
        raise VeilError(f"the decision needs an integer {key!r}") from None


def _label(value: Any) -> str:
    from veil.markers import LABELS

    label = str(value or "").strip().upper()
    if not _LABEL_RE.fullmatch(label):
        raise VeilError("a type is upper case letters, digits and '_' (e.g. PERSON_NAME)")
    if label not in LABELS:  # an exported term of another type could not be masked (veil mask --add-terms)
        raise VeilError(f"{label} is not one of veil's placeholder labels (e.g. PERSON_NAME, LOCATION, CUSTOM)")
    return label


def _itype(value: Any, label: str) -> str:
    if value in (None, ""):
        return default_itype(label)
    itype = str(value).upper()
    if itype not in IDENTIFIER_TYPES:
        raise VeilError(f"identifier type {value!r}: choose {' or '.join(IDENTIFIER_TYPES)}")
    return itype


def reviewed(path: str | Path, masked: str | Path | None = None, original: str | Path | None = None,
             fields: Fields | None = None, masked_format: str | None = None,
             original_format: str | None = None) -> tuple[dict[str, Any], list[ReviewDoc], dict[str, DocState]]:
    """A review file read back for export: (header, documents, states), without locking it.

    ``masked`` / ``original`` default to the paths the header recorded; their fingerprints must match.
    """
    from veil.io.output import input_fingerprint

    header, decisions = read_review_file(path)
    masked = Path(masked or header.get("masked") or "")
    if not masked.is_file():
        raise VeilError(f"{path}: its masked file {masked} is gone; pass the masked file it reviewed")
    if input_fingerprint(masked)["sha256"] != header.get("masked_sha256"):
        raise VeilError(f"{path} reviews another masked file (or {masked} changed since the review)")
    if original is None and header.get("original"):
        original = header["original"]
    if original is not None:
        if not Path(original).is_file():
            raise VeilError(f"{path}: its original {original} is gone; pass --original")
        if header.get("original_sha256") and input_fingerprint(original)["sha256"] != header["original_sha256"]:
            raise VeilError(f"{original} is not the original this review was made beside (it changed since?)")
    docs = load_documents(masked, original, ids=header.get("docs"), fields=fields, masked_format=masked_format,
                          original_format=original_format)
    return header, docs, fold(decisions)
