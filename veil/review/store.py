"""Review stage: the review file, an append-only JSONL log of a reviewer's decisions, and its fold.

Line 1 is the header: what was reviewed (the masked file's and the original's fingerprints, the
sampled document ids) and by whom. Every later line is one decision, written with one ``write`` on a
file opened ``O_APPEND`` and fsynced before the page is told it is saved: killing the server (or
the machine) loses at most the decision whose request had not yet been answered. A last line cut
short by a crash is dropped with a warning when the file is opened again. Nothing is ever rewritten:
undoing a decision appends an ``undo`` naming it.

Decisions (``doc`` is the document id; ``ph`` a placeholder's index in the masked record):

- ``missed``: ``start``, ``end`` (offsets in the masked text), ``text``, ``label``, ``itype``
  (DIRECT / QUASI), ``partial`` -- PI the masking left visible;
- ``reject``: ``ph``, ``key`` -- the placeholder masks something that is not PI (a false positive);
- ``relabel``: ``ph``, ``label``, ``itype`` -- the placeholder's type is wrong (the latest wins);
- ``done``: ``value`` (true / false);
- ``undo``: ``target`` -- the number ``n`` of an earlier decision of the same document.

:func:`fold` replays them into one :class:`DocState` per document; the exports and the agreement
report read the file the same way.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from veil.errors import InputError, VeilError

log = logging.getLogger(__name__)

FORMAT = "veil-review/1"
IDENTIFIER_TYPES = ("DIRECT", "QUASI")
ACTIONS = ("missed", "reject", "relabel", "done", "undo")


@dataclass(slots=True)
class Missed:
    n: int
    start: int
    end: int
    text: str
    label: str
    itype: str
    partial: bool = False


@dataclass(slots=True)
class DocState:
    """One document's review after every decision so far."""

    missed: dict[int, Missed] = field(default_factory=dict)  # decision number -> mark
    rejected: dict[int, int] = field(default_factory=dict)  # placeholder index -> decision number
    relabeled: dict[int, tuple[str, str, int]] = field(default_factory=dict)  # ph -> (label, itype, n)
    done: bool = False
    last: list[int] = field(default_factory=list)  # numbers of the decisions in force, in order (for undo)

    @property
    def touched(self) -> bool:
        return bool(self.missed or self.rejected or self.relabeled or self.done)


def fold(decisions: Iterable[dict[str, Any]]) -> dict[str, DocState]:
    """Each document's state after ``decisions`` (in file order); undone decisions are skipped."""
    decisions = list(decisions)
    undone = {int(d["target"]) for d in decisions if d.get("action") == "undo"}
    out: dict[str, DocState] = {}
    for d in decisions:
        n, action = int(d["n"]), d["action"]
        if action == "undo" or n in undone:
            continue
        st = out.setdefault(str(d["doc"]), DocState())
        st.last.append(n)
        if action == "missed":
            st.missed[n] = Missed(n, int(d["start"]), int(d["end"]), str(d["text"]), str(d["label"]),
                                  str(d["itype"]), bool(d.get("partial", False)))
        elif action == "reject":
            st.rejected[int(d["ph"])] = n
        elif action == "relabel":
            st.relabeled[int(d["ph"])] = (str(d["label"]), str(d["itype"]), n)
        elif action == "done":
            st.done = bool(d["value"])
    return out


def _check(rec: Any, path: str, line: int) -> dict[str, Any]:
    need = {"missed": ("start", "end", "text", "label", "itype"), "reject": ("ph",), "relabel": ("ph", "label", "itype"),
            "done": ("value",), "undo": ("target",)}
    if not isinstance(rec, dict) or rec.get("action") not in need or "doc" not in rec or "n" not in rec:
        raise InputError(path, line, f"not a review decision (need n, doc and an action of {', '.join(ACTIONS)})")
    missing = [k for k in need[rec["action"]] if k not in rec]
    if missing:
        raise InputError(path, line, f"{rec['action']} decision without {', '.join(missing)}")
    return rec


def read_review_file(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, decisions) of a review file; a last line cut short by a crash is ignored."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(str(path), None, "no such review file") from None
    except OSError as e:
        raise VeilError(f"{path}: cannot read ({e.strerror})") from None
    if raw and not raw.endswith(b"\n"):
        raw = raw[: raw.rfind(b"\n") + 1]
    lines = raw.decode("utf-8", errors="strict").splitlines()
    if not lines:
        raise InputError(str(path), None, "empty review file")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise InputError(str(path), 1, f"not a veil review file (no {FORMAT} header)")
    decisions = []
    for i, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(str(path), i, f"invalid JSON ({e.msg})") from None
        decisions.append(_check(rec, str(path), i))
    return header, decisions


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ReviewStore:
    """An open review file: ``with ReviewStore(path, header) as s: s.append({...})``.

    ``header`` describes the review being started; an existing file must have been started with the
    same ``expect`` keys of it (the same masked file, original and sample), else ``VeilError``. The
    file is locked (``PATH.lock``) while open, so two servers never write one file.
    """

    #: header fields an existing file must match
    MATCH = ("masked_sha256", "original_sha256", "docs")

    def __init__(self, path: str | Path, header: dict[str, Any]) -> None:
        self.path = Path(path)
        self.header = {"format": FORMAT, **header}
        self.decisions: list[dict[str, Any]] = []
        self._fd: int | None = None
        self._lock: Any = None

    def __enter__(self) -> "ReviewStore":
        from veil.io.output import OutputLock

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = OutputLock(self.path).__enter__()
        try:
            self._open()
        except BaseException:
            self._lock.__exit__(None, None, None)
            raise
        return self

    def _open(self) -> None:
        if self.path.exists() and self.path.stat().st_size:
            size = self.path.stat().st_size
            raw_tail_ok = self._repair()
            header, self.decisions = read_review_file(self.path)
            for k in self.MATCH:
                if header.get(k) != self.header.get(k):
                    what = {"masked_sha256": "another masked file (or the masked file changed since)",
                            "original_sha256": "another original file (or none)",
                            "docs": "another sample of documents"}[k]
                    raise VeilError(f"{self.path} holds a review of {what}; review with the same arguments to "
                                    "resume it, or give --review-file / --reviewer for a new review")
            self.header = header
            if not raw_tail_ok:
                log.warning("%s: dropped an unfinished last line (%d bytes) written when the review was interrupted",
                            self.path, size - self.path.stat().st_size)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        else:
            self.header.setdefault("created", _now())
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self._write(self.header)
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    def _repair(self) -> bool:
        """Cut a last line that a crash left without its newline; True when there was none."""
        with open(self.path, "rb+") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 1))
            if f.read(1) == b"\n":
                return True
            f.seek(0)
            data = f.read()
            f.truncate(data.rfind(b"\n") + 1)
            f.flush()
            os.fsync(f.fileno())
            return False

    def _write(self, rec: dict[str, Any]) -> None:
        assert self._fd is not None
        data = (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            written = os.write(self._fd, data)
            if written != len(data):  # a regular file takes the whole line or fails; never leave half of one
                raise OSError(f"short write to {self.path}")
            os.fsync(self._fd)
        except OSError as e:
            raise VeilError(f"cannot write the review file {self.path}: {e.strerror or e}") from None

    def append(self, decision: dict[str, Any]) -> dict[str, Any]:
        """Write one decision (numbered and time-stamped here) durably; returns it."""
        rec = {"n": (int(self.decisions[-1]["n"]) + 1) if self.decisions else 1, "at": _now(), **decision}
        _check(rec, str(self.path), len(self.decisions) + 2)
        self._write(rec)
        self.decisions.append(rec)
        return rec

    def state(self) -> dict[str, DocState]:
        return fold(self.decisions)

    def __exit__(self, *exc: Any) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            self._lock.__exit__(None, None, None)
            self._lock = None
