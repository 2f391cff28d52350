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
import stat
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
    """Each document's state after ``decisions`` (in file order); undone decisions are skipped.

    An undo cancels one decision: the latest one before it with its target number, of its document, not
    an undo and not cancelled already (numbers never repeat in a file veil wrote; this keeps one undo
    one decision in a file that a shared write left with repeats)."""
    decisions = list(decisions)
    cancelled: set[int] = set()  # positions in ``decisions``
    for k, d in enumerate(decisions):
        if d["action"] != "undo":
            continue
        for j in range(k - 1, -1, -1):
            e = decisions[j]
            if (e["n"] == d["target"] and e["doc"] == d["doc"] and e["action"] != "undo"
                    and j not in cancelled):
                cancelled.add(j)
                break
    out: dict[str, DocState] = {}
    for k, d in enumerate(decisions):
        n, action = d["n"], d["action"]
        if action == "undo" or k in cancelled:
            continue
        st = out.setdefault(d["doc"], DocState())
        st.last.append(n)
        if action == "missed":
            st.missed[n] = Missed(n, d["start"], d["end"], d["text"], d["label"], d["itype"], d.get("partial", False))
        elif action == "reject":
            st.rejected[d["ph"]] = n
        elif action == "relabel":
            st.relabeled[d["ph"]] = (d["label"], d["itype"], n)
        elif action == "done":
            st.done = d["value"]
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


#: each action's fields and their checks (a decision a page sends is checked field by field in
#: :meth:`veil.review.session.ReviewSession.decide` first; this is what the file must hold)
_FIELDS: dict[str, dict[str, Any]] = {
    "missed": {"start": _is_int, "end": _is_int, "text": lambda v: isinstance(v, str),
               "label": lambda v: isinstance(v, str), "itype": lambda v: v in IDENTIFIER_TYPES},
    "reject": {"ph": _is_int},
    "relabel": {"ph": _is_int, "label": lambda v: isinstance(v, str), "itype": lambda v: v in IDENTIFIER_TYPES},
    "done": {"value": lambda v: isinstance(v, bool)},
    "undo": {"target": _is_int},
}


def _check(rec: Any, path: str, line: int) -> dict[str, Any]:
    if (not isinstance(rec, dict) or rec.get("action") not in _FIELDS or not isinstance(rec.get("doc"), str)
            or not _is_int(rec.get("n"))):
        raise InputError(path, line, f"not a review decision (need n, doc and an action of {', '.join(ACTIONS)})")
    need = _FIELDS[rec["action"]]
    missing = [k for k in need if k not in rec]
    if missing:
        raise InputError(path, line, f"{rec['action']} decision without {', '.join(missing)}")
    bad = [k for k, ok in need.items() if not ok(rec[k])]
    if "partial" in rec and not isinstance(rec["partial"], bool):
        bad.append("partial")
    if bad:
        raise InputError(path, line, f"{rec['action']} decision with a bad {', '.join(bad)}")
    return rec


def parse_review(raw: bytes, path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, decisions) of a review file's bytes; a last line cut short by a crash is ignored."""
    path = str(path)
    if raw and not raw.endswith(b"\n"):
        raw = raw[: raw.rfind(b"\n") + 1]
    try:
        lines = raw.decode("utf-8", errors="strict").splitlines()
    except UnicodeDecodeError:
        raise InputError(path, None, "not UTF-8: not a veil review file") from None
    if not lines:
        raise InputError(path, None, "empty review file")
    try:
        header = json.loads(lines[0])
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise InputError(path, 1, f"not a veil review file (no {FORMAT} header)")
    decisions = []
    for i, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(path, i, f"invalid JSON ({e.msg})") from None
        except (ValueError, RecursionError):
            raise InputError(path, i, "invalid JSON") from None
        decisions.append(_check(rec, path, i))
    return header, decisions


def read_review_file(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, decisions) of a review file (read only); a last line cut short by a crash is ignored."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(str(path), None, "no such review file") from None
    except OSError as e:
        raise VeilError(f"{path}: cannot read ({e.strerror})") from None
    return parse_review(raw, path)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ReviewStore:
    """An open review file: ``with ReviewStore(path, header) as s: s.append({...})``.

    ``header`` describes the review being started; an existing file must have been started with the
    same ``expect`` keys of it (the same masked file, original and sample), else ``VeilError``.

    The file is never reached through a symbolic link: it is created with ``O_CREAT | O_EXCL |
    O_NOFOLLOW`` (:mod:`veil.io.atomic`), an existing one reopened with ``O_NOFOLLOW`` and must be a
    regular file. While open it is locked (``flock`` on the file itself, released when the process
    dies): a second server on it under any name -- a link, a hard link, a relative path -- is
    refused, so decision numbers never repeat.
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
        from veil.io.atomic import check_target

        check_target(self.path, f"the review file {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd, created = self._open_fd()
        try:
            self._take_lock()
            self._open(created)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _open_fd(self) -> tuple[int, bool]:
        from veil.io.atomic import NOFOLLOW, check_target

        flags = os.O_RDWR | os.O_APPEND | NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            return os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o600), True
        except FileExistsError:
            pass
        except OSError as e:
            raise VeilError(f"cannot create the review file {self.path}: {e.strerror}") from None
        try:
            fd = os.open(self.path, flags)
        except OSError as e:
            check_target(self.path, f"the review file {self.path}")  # a link planted since: one line
            raise VeilError(f"cannot open the review file {self.path}: {e.strerror}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise VeilError(f"the review file {self.path} is not a regular file; remove it")
        return fd, False

    def _take_lock(self) -> None:
        assert self._fd is not None
        try:
            import fcntl
        except ImportError:  # not POSIX: the output lock beside the file (by name only)
            from veil.io.output import OutputLock

            self._lock = OutputLock(self.path).__enter__()
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise VeilError(f"{self.path} is open in another veil review (under this or another name: a link or "
                            "a hard link to it); stop that one first, or give --reviewer NAME for a review of "
                            "your own") from None
        mine = os.fstat(self._fd)
        try:
            there = os.lstat(self.path)
        except FileNotFoundError:
            there = None
        if there is None or (there.st_dev, there.st_ino) != (mine.st_dev, mine.st_ino):
            raise VeilError(f"{self.path} was replaced while veil review opened it; is another program writing there?")
        log.debug("took the lock on %s", self.path)

    def _open(self, created: bool) -> None:
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        if size:
            raw = os.pread(self._fd, size, 0)
            cut = raw.rfind(b"\n") + 1
            if cut < size:  # a last line a crash left without its newline
                os.ftruncate(self._fd, cut)
                os.fsync(self._fd)
                log.warning("%s: dropped an unfinished last line (%d bytes) written when the review was interrupted",
                            self.path, size - cut)
            header, self.decisions = parse_review(raw[:cut], self.path)
            for k in self.MATCH:
                if header.get(k) != self.header.get(k):
                    what = {"masked_sha256": "another masked file (or the masked file changed since)",
                            "original_sha256": "another original file (or none)",
                            "docs": "another sample of documents"}[k]
                    raise VeilError(f"{self.path} holds a review of {what}; review with the same arguments to "
                                    "resume it, or give --review-file / --reviewer for a new review")
            self.header = header
        else:  # new, or created by a server that lost the race for the lock before writing its header
            self.header.setdefault("created", _now())
            self._write(self.header)
            if created:
                dir_fd = os.open(self.path.parent, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)

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
        n = max((d["n"] for d in self.decisions), default=0) + 1
        rec = {"n": n, "at": _now(), **decision}
        _check(rec, str(self.path), len(self.decisions) + 2)
        self._write(rec)
        self.decisions.append(rec)
        return rec

    def state(self) -> dict[str, DocState]:
        return fold(self.decisions)

    def __exit__(self, *exc: Any) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the flock
            self._fd = None
        if self._lock is not None:
            self._lock.__exit__(None, None, None)
            self._lock = None
