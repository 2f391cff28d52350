"""Review stage: a review session -- the sampled masked documents, their originals, and the decisions on them.

Documents pair by id (the masked record keeps the input's id). With an original, each placeholder's
original span comes from :func:`veil.mask.align.align` (the text between placeholders is verbatim
original text, so each placeholder is the stretch between two such literals). The sample is seeded
and recorded in the review file's header, so a restart (or a second reviewer with the same
``--sample`` and ``--seed``) reviews the same documents. With a group field the review's unit is the
group (a call): the sample picks calls, kept whole, and a page shows one call's documents in order
(:attr:`ReviewSession.pages`); decisions stay per document.

:meth:`ReviewSession.decide` is the one place a decision is checked and written; the web app only
parses requests and calls it.
"""

from __future__ import annotations

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


def _units(docs: Sequence[Any], grouped: bool) -> list[list[int]]:
    """Indices of ``docs`` per review unit: a group's documents in file order (first appearance orders the
    groups), else one document each. A document without a group value is a unit of its own."""
    if not grouped:
        return [[i] for i in range(len(docs))]
    units: dict[Any, list[int]] = {}
    for i, d in enumerate(docs):
        units.setdefault(("g", d.group) if d.group is not None else ("d", i), []).append(i)
    return list(units.values())


def load_documents(masked: str | Path, original: str | Path | None = None, *, sample: int | None = None,
                   seed: int = 0, ids: Sequence[str] | None = None, fields: Fields | None = None,
                   masked_format: str | None = None, original_format: str | None = None, pick: str = "random",
                   scorer: Any = None) -> list[ReviewDoc]:
    """The sampled masked documents (or exactly ``ids``), each with its original text and alignment.

    With a group field (``fields.group``) the sample is of groups (calls), each kept whole; ``pick``
    chooses them (:func:`veil.review.pick.pick_documents`): a random sample is reviewed in file order,
    an ``uncertain`` one in pick order (the most useful first)."""
    from veil.io.formats import read_documents
    from veil.io.records import VEIL_FIELDS, read_masked

    fields = fields or VEIL_FIELDS
    if pick not in ("random", "uncertain"):
        raise VeilError(f"--pick {pick!r}: choose random or uncertain")
    if ids is None:
        every = list(read_masked(masked, masked_format, fields))
        all_ids = [d.id for d in every]
        if not all_ids:
            raise VeilError(f"{masked}: no documents")
        if len(set(all_ids)) != len(all_ids):
            raise VeilError(f"{masked}: document ids repeat; a review pairs documents by id (--id-field)")
        units = _units(every, fields.group is not None)
        if sample is None:
            chosen = list(range(len(units)))
        else:
            from veil.review.pick import pick_documents

            texts: list[list[str]] = []
            if pick == "uncertain":
                if original is None:
                    raise VeilError("--pick uncertain scores the tagger's reading of the original texts: pass "
                                    "--original")
                by = {d.id: d.text for d in read_documents(original, original_format, fields)}
                texts = [[by.get(every[i].id, "") for i in u] for u in units]
            chosen = pick_documents(texts if pick == "uncertain" else units, sample, pick, seed, scorer)
            if pick == "random":
                chosen.sort()  # file order: a call reads in order
        ids = [every[i].id for u in chosen for i in units[u]]
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
                 original_format: str | None = None, pick: str = "random", scorer: Any = None) -> None:
        from veil.io.atomic import check_target
        from veil.io.output import input_fingerprint

        self.masked_path = Path(masked)
        if not self.masked_path.is_file():
            raise VeilError(f"{masked}: no such masked file")
        self.path = review_path(masked, reviewer, review_file)
        check_target(self.path, f"the review file {self.path}")  # a link (even a dangling one) is never followed
        self.fields = fields
        self.grouped = fields is not None and fields.group is not None
        masked_fp = input_fingerprint(self.masked_path)["sha256"]
        ids = None
        prior = None
        if self.path.exists() and self.path.stat().st_size:
            prior, _ = read_review_file(self.path)
            if prior.get("masked_sha256") != masked_fp:
                raise VeilError(f"{self.path} holds a review of another masked file (or {masked} changed since); "
                                "give --review-file / --reviewer for a new review")
            was = (prior.get("sample"), prior.get("seed"), prior.get("pick", "random"))
            if sample is not None and was != (sample, seed, pick):
                raise VeilError(f"{self.path} reviews --sample {was[0]} --seed {was[1]} --pick {was[2]}; resume it "
                                "with those (or none), or give --review-file / --reviewer for a new review")
            ids = prior.get("docs")
            if original is None and prior.get("original"):
                original = prior["original"]
                if not Path(original).is_file():
                    raise VeilError(f"{self.path} was reviewed beside the original {original}, which is gone; "
                                    "pass --original")
            sample, seed, pick = prior.get("sample"), prior.get("seed", 0), prior.get("pick", "random")
        self.original_path = Path(original) if original is not None else None
        self.docs = load_documents(masked, original, sample=sample, seed=seed, ids=ids, fields=fields,
                                   masked_format=masked_format, original_format=original_format, pick=pick,
                                   scorer=scorer)
        self.by_id = {d.masked.id: d for d in self.docs}
        self.pages = _units([d.masked for d in self.docs], self.grouped)
        # absolute paths: a restart or an export from another folder finds the files again
        header = {"masked": str(self.masked_path.resolve()), "masked_sha256": masked_fp,
                  "original": str(self.original_path.resolve()) if self.original_path else None,
                  "original_sha256": (input_fingerprint(self.original_path)["sha256"] if self.original_path
                                      else None),
                  "sample": sample, "seed": seed, "reviewer": reviewer, "docs": [d.masked.id for d in self.docs],
                  "group_field": fields.group if fields is not None else None}
        if pick != "random":  # (absent: random, as review files written before --pick read)
            header["pick"] = pick
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
        pages = []
        for k, members in enumerate(self.pages):
            ds = [docs[i] for i in members]
            first = self.docs[members[0]].masked
            pages.append({"index": k, "docs": members, "title": first.group if self.grouped and first.group is not None
                          else first.id, "done": all(x["done"] for x in ds), "touched": any(x["touched"] for x in ds),
                          "labels": sorted({lab for x in ds for lab in x["labels"]}),
                          "masks": sum(x["masks"] for x in ds), "missed": sum(x["missed"] for x in ds),
                          "rejected": sum(x["rejected"] for x in ds)})
        return {"total": len(self.docs), "done": sum(x["done"] for x in docs), "docs": docs, "pages": pages,
                "grouped": self.grouped,
                "labels": self.labels, "itypes": {lab: default_itype(lab) for lab in self.labels},
                "reviewer": self.store.header.get("reviewer"), "has_original": self.original_path is not None}

    def doc(self, index: int) -> ReviewDoc:
        if not (0 <= index < len(self.docs)):
            raise VeilError(f"no document {index} (the sample has {len(self.docs)})")
        return self.docs[index]

    def page(self, index: int) -> dict[str, Any]:
        """A page: one document, or with a group field every document of one group, in order."""
        if not (0 <= index < len(self.pages)):
            raise VeilError(f"no page {index} (the review has {len(self.pages)})")
        members = self.pages[index]
        first = self.docs[members[0]].masked
        return {"index": index, "title": first.group if self.grouped and first.group is not None else first.id,
                "docs": [self.view(i) for i in members]}

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
        """Check one decision from the page against the document, write it, return the new view.

        Every field is checked for its JSON type and range before anything is written (an integer is a JSON
        integer, not ``0.5``, ``1e400`` or ``"3"``; a flag is ``true`` / ``false``, not ``"false"``); a bad
        one is a ``VeilError`` naming the field, never a value of the document."""
        d = self.doc(index)
        st = self.states().get(d.masked.id, DocState())
        action = req.get("action")
        n_ph = len(d.masked.placeholders)
        rec: dict[str, Any] = {"doc": d.masked.id, "action": action}
        if action == "missed":
            start, end = _int(req, "start"), _int(req, "end")
            text = d.masked.text
            if not (0 <= start < end <= len(text)):
                raise VeilError("select some text of the masked document first (start and end must lie in it)")
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if start == end:
                raise VeilError("select some text of the masked document first")
            if any(p.start < end and start < p.end for p in d.masked.placeholders):
                raise VeilError("a missed piece cannot include a placeholder; select only the text beside it")
            if any(m.start < end and start < m.end for m in st.missed.values()):
                raise VeilError("this text overlaps a piece already tagged; remove that one first")
            label = _label(req.get("label"))
            rec.update(start=start, end=end, text=text[start:end], label=label,
                       itype=_itype(req.get("itype"), label), partial=_flag(req, "partial", False))
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
            rec["value"] = _flag(req, "value", True)
        elif action == "undo":
            if req.get("target") is None:  # the document's latest decision in force
                if not st.last:
                    raise VeilError("nothing to undo in this document")
                target = st.last[-1]
            else:
                target = _int(req, "target")
            if target not in st.last:
                raise VeilError(f"decision {target} is not in force in this document")
            rec["target"] = target
        elif isinstance(action, str):
            raise VeilError(f"unknown action {action[:40]!r}; choose missed, reject, relabel, done or undo")
        else:
            raise VeilError("the decision needs an action (missed, reject, relabel, done or undo)")
        self.store.append(rec)
        return self.view(index)


def _current(d: ReviewDoc, st: DocState, i: int) -> tuple[str, str]:
    if i in st.relabeled:
        label, itype, _ = st.relabeled[i]
        return label, itype
    label = d.masked.placeholders[i].label
    return label, default_itype(label)


def _int(req: dict[str, Any], key: str) -> int:
    value = req.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise VeilError(f"the decision needs an integer {key!r}")
    return value


def _flag(req: dict[str, Any], key: str, default: bool) -> bool:
    value = req.get(key, default)
    if not isinstance(value, bool):
        raise VeilError(f"{key!r} must be true or false")
    return value


def _label(value: Any) -> str:
    from veil.markers import LABELS

    if not isinstance(value, str):
        raise VeilError("the decision needs a type (a label such as PERSON_NAME)")
    label = value.strip().upper()
    if not _LABEL_RE.fullmatch(label):
        raise VeilError("a type is upper case letters, digits and '_' (e.g. PERSON_NAME)")
    if label not in LABELS:  # an exported term of another type could not be masked (veil mask --add-terms)
        raise VeilError(f"{label} is not one of veil's placeholder labels (e.g. PERSON_NAME, LOCATION, CUSTOM)")
    return label


def _itype(value: Any, label: str) -> str:
    if value is None or value == "":
        return default_itype(label)
    itype = value.upper() if isinstance(value, str) else None
    if itype not in IDENTIFIER_TYPES:
        raise VeilError(f"the identifier type must be {' or '.join(IDENTIFIER_TYPES)}")
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
