"""Corpus I/O stage: the one locked, atomic, resumable output writer (JSONL, plain text, CSV, Parquet).

Every command that writes a corpus (``veil mask``, ``veil fill``, the experiment runner) writes
through :class:`ResumableWriter`:

- ``OUTPUT.lock`` is held (``filelock``, an OS lock that dies with its process) while the run
  writes, so a second run on the same output fails at once, naming the first;
- records go to ``OUTPUT.partial`` batch by batch (JSONL, or the text lines for ``txt``); after
  each batch ``OUTPUT.progress.json`` (written atomically) records how many records and bytes are
  complete and a hash of the run's settings (which include the input's fingerprint). A re-run with
  the same settings truncates the partial file to the last complete batch and continues, so an
  interrupted and resumed run writes the same bytes as an uninterrupted one;
- ``OUTPUT`` appears only, by rename, when the run is complete, with ``OUTPUT.veil.json`` beside it
  (the settings hash, and what the writer was told the output is: ``veil mask`` records its text,
  id, person and group fields there, so ``veil fill`` needs no repeated flags): an existing output
  is reused only when that record matches, and replaced only with ``overwrite``;
- CSV and Parquet are converted from the JSONL partial file at the end (:mod:`veil.io.convert`), so
  their columns are the union of all records' fields (in order of first appearance); a Parquet column
  whose values have several types is written as strings, with a warning naming it;
- an optional *sidecar* (``OUTPUT.substitutions.jsonl`` for ``veil fill``, ``OUTPUT.placeholders.jsonl``
  for a masked CSV or Parquet file) is written in step;
- ``-`` writes standard output (through a temporary file: no resume, no lock);
- every file is created without following symbolic links, only in the output's folder
  (:mod:`veil.io.atomic`): a link at ``OUTPUT`` or at any of its side files is refused before the
  work, and one planted during the run makes the create fail instead of writing through it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import math
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Any, Iterable

from veil.cache import stable_hash
from veil.errors import VeilError
from veil.io.atomic import (check_identity, check_target, identity, open_existing, open_new, read_text,  # noqa: F401
                            replace_file, temp_beside, write_json_atomic)  # (write_json_atomic: re-exported)
from veil.io.convert import jsonl_to_csv, jsonl_to_parquet
from veil.io.scratch import private_dir

log = logging.getLogger(__name__)

OUTPUT_FORMATS = ("jsonl", "txt", "csv", "parquet")
STDIO = "-"


def input_fingerprint(path: str | Path) -> dict[str, Any]:
    """Identity of an input by content (size + SHA-256), so a copied or touched file is still the same input."""
    p = Path(path)
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    h = hashlib.sha256()
    size = 0
    for f in files:
        try:
            with open(f, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
                    size += len(chunk)
        except OSError as e:
            raise VeilError(f"{f}: cannot read ({e.strerror})") from None
        h.update(b"\0" + str(f.relative_to(p) if p.is_dir() else "").encode() + b"\0")
    return {"size": size, "sha256": h.hexdigest()}


#: the files a run writes beside OUTPUT (``companion(OUTPUT, suffix)``)
SIDE_FILES = (".partial", ".progress.json", ".veil.json", ".lock")


def companion(path: str | Path, suffix: str) -> Path:
    path = Path(path)
    return path.with_name(path.name + suffix)


def check_output_path(path: str | Path, inputs: Iterable[str | Path] = ()) -> None:
    """Refuse, before any work, an output that cannot be written or would destroy an input."""
    if str(path) == STDIO:
        return
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise VeilError(f"output {p} is a folder; give a file name (e.g. {p / 'out.jsonl'})")
        if stat.S_ISLNK(st.st_mode):
            raise VeilError(f"output {p} is a symbolic link; give the path of a regular file")
        if not stat.S_ISREG(st.st_mode):
            raise VeilError(f"output {p} is not a regular file (a device, pipe or socket); veil writes regular "
                            "files only (use -o - for standard output)")
    for suffix in SIDE_FILES:
        check_target(companion(p, suffix))
    for src in inputs:
        if str(src) == STDIO:
            continue
        s = Path(src)
        for out in (p, companion(p, ".partial"), companion(p, ".substitutions.jsonl")):
            if s.exists() and (out.resolve() == s.resolve() or (out.exists() and os.path.samefile(out, s))):
                raise VeilError(f"output {p} would overwrite the input {src}; choose another -o")
    parent = p.parent
    existing = parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise VeilError(f"cannot create output folder {parent}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise VeilError(f"cannot write in folder {existing} (read-only or no permission); choose another -o")


def _holder_note(fd: int) -> None:
    """Written into the lock file by its holder, so that a second run can say who holds it."""
    note = json.dumps({"pid": os.getpid(), "command": " ".join(sys.argv)[:300]}).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, note, 0)


def _holder(fd: int) -> str:
    try:
        holder = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
        return f"process {holder['pid']} ({holder['command']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


class OutputLock:
    """``OUTPUT.lock``: an OS lock (``flock``, released when the process dies); a second holder fails at once.

    The lock file is opened with ``O_NOFOLLOW`` (a link planted at its name is refused, never
    truncated through) and removed by its holder on release.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = companion(path, ".lock")
        self._fd: int | None = None
        self._lock: Any = None

    def __enter__(self) -> "OutputLock":
        try:
            import fcntl
        except ImportError:  # not POSIX: filelock's portable lock
            return self._enter_portable()
        from veil.io.atomic import NOFOLLOW

        check_target(self.path)
        for _ in range(20):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644)
            except OSError as e:
                check_target(self.path)  # a link planted since: one line
                raise VeilError(f"cannot create the lock file {self.path}: {e.strerror}") from None
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise VeilError(f"{self.path} is not a regular file; remove it")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                who = _holder(fd)
                os.close(fd)
                raise VeilError(f"{self.path.with_suffix('')} is being written by {who}; wait for it to finish or "
                                f"stop it (lock: {self.path})") from None
            # the holder before us removes the file when it lets go: our lock must be on the file at the name
            mine = os.fstat(fd)
            try:
                there = os.lstat(self.path)
            except FileNotFoundError:
                there = None
            if there is not None and (there.st_ino, there.st_dev) == (mine.st_ino, mine.st_dev):
                _holder_note(fd)
                self._fd = fd
                log.debug("took the lock %s", self.path)
                return self
            os.close(fd)
        raise VeilError(f"cannot take the lock {self.path}: it keeps being replaced")

    def _enter_portable(self) -> "OutputLock":
        from filelock import FileLock, Timeout

        check_target(self.path)
        self._lock = FileLock(self.path, timeout=0, on_acquired=_holder_note)
        try:
            self._lock.acquire()
        except Timeout:
            try:
                holder = json.loads(self.path.read_text(encoding="utf-8"))
                who = f"process {holder['pid']} ({holder['command']})"
            except (OSError, ValueError, KeyError, TypeError):
                who = "another process"
            raise VeilError(f"{self.path.with_suffix('')} is being written by {who}; wait for it to finish or "
                            f"stop it (lock: {self.path})") from None
        return self

    def __exit__(self, *exc: Any) -> None:
        self.path.unlink(missing_ok=True)  # while held: a contender that opened the old inode sees it unlinked
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            self._lock.release()


class ResumableWriter:
    """``with ResumableWriter(out, settings, fmt="jsonl") as w: if not w.complete: skip = w.done; ...; w.write(recs)``.

    ``settings`` must identify the run (input fingerprint, options): it decides whether an
    unfinished run is resumed and whether an existing output is reused (``w.complete``). Records
    are dicts; ``txt`` writes their ``text_field``. ``sidecar`` names a JSONL file written in step
    (``write(records, sidecar_records)``).
    """

    def __init__(self, path: str | Path, settings: dict[str, Any], fmt: str = "jsonl", *, resume: bool = True,
                 overwrite: bool = False, sidecar: str | Path | None = None, text_field: str = "text",
                 lock: bool = True, describe: dict[str, Any] | None = None) -> None:
        if fmt not in OUTPUT_FORMATS:
            raise VeilError(f"unknown output format {fmt!r}; choose from {', '.join(OUTPUT_FORMATS)}")
        self.stdout = str(path) == STDIO
        # standard output goes through a private folder, removed on exit (and by the next run after a SIGKILL)
        self._tmpdir = str(private_dir("veil-stdout-")) if self.stdout else None
        self.path = Path(self._tmpdir, "out") if self.stdout else Path(path)
        self.fmt = fmt
        self.text_field = text_field
        self.describe = dict(describe or {})  # what the output is, for the tools that read it (its fields)
        self.sidecar = None if (sidecar is None or self.stdout) else Path(sidecar)
        self.partial = companion(self.path, ".partial")
        self.progress = companion(self.path, ".progress.json")
        self.manifest = companion(self.path, ".veil.json")
        self.hash = stable_hash({**settings, "format": fmt})
        self.input_hash = stable_hash(settings.get("input"))  # a changed input makes an unfinished run worthless
        self.resume = resume and not overwrite and not self.stdout
        self.overwrite = overwrite
        self.complete = False
        self.done = 0
        self.state: dict[str, Any] = {}  # the resumed run's extra state (see ``write(state=)``)
        self._bytes = [0, 0]
        self._files: list[Any] = []
        self._ids: list[tuple[int, int]] = []  # the partial files' identities, checked before they are renamed
        self._lock = OutputLock(self.path) if lock and not self.stdout else None

    def _targets(self) -> list[Path]:
        return [self.partial] + ([companion(self.sidecar, ".partial")] if self.sidecar else [])

    def __enter__(self) -> "ResumableWriter":
        check_output_path(self.path)
        if self.sidecar is not None:
            for p in (self.sidecar, companion(self.sidecar, ".partial")):
                check_target(p)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._lock is not None:
            self._lock.__enter__()
        try:
            self._open()
        except BaseException:
            if self._lock is not None:
                self._lock.__exit__(None, None, None)
            raise
        return self

    def _open(self) -> None:
        if self.path.exists() and not self.stdout:
            recorded = None
            try:
                recorded = json.loads(read_text(self.manifest)).get("settings")
            except (OSError, ValueError, AttributeError):
                pass
            if recorded == self.hash and not self.overwrite and (self.sidecar is None or self.sidecar.exists()):
                self.complete = True
                log.info("%s is complete already with these settings and input; nothing to do "
                         "(--overwrite writes it again)", self.path)
                return
            if not self.overwrite:
                why = ("has lost its substitutions file" if recorded == self.hash
                       else "was written from another input or with other settings" if recorded
                       else "was not written by veil (no OUTPUT.veil.json beside it)")
                raise VeilError(f"output {self.path} exists and {why}; pass --overwrite to replace it, "
                                "or choose another -o")
        state = None
        if self.resume and all(p.exists() for p in self._targets()) and self.progress.exists():
            try:
                state = json.loads(read_text(self.progress))
            except (OSError, ValueError):
                state = None
            if state and state.get("settings") != self.hash and state.get("input") != self.input_hash:
                log.warning("%s: the input changed since the unfinished run; starting again", self.path)
                state = None
            elif state and state.get("settings") != self.hash:  # hours of model work may be in it: never discard
                raise VeilError(f"{self.path}: an unfinished run with other settings or another input exists "
                                f"({self.progress.name}); re-run it as it was to resume, or pass --overwrite to "
                                "start again")
        try:
            if state:
                self.done = int(state["records"])
                self._bytes = [int(b) for b in state["bytes"]]
                self.state = state.get("state") or {}
                for p, size in zip(self._targets(), self._bytes):
                    f = open_existing(p)
                    f.truncate(size)  # drop a batch that was half written when interrupted
                    f.seek(size)
                    self._files.append(f)
                log.info("resuming %s after %d records", self.path, self.done)
            else:
                self._files = [open_new(p) for p in self._targets()]
                self._save_progress()
        except OSError as e:
            raise _write_error(self.partial, e) from None
        self._ids = [identity(f) for f in self._files]

    def _encode(self, rec: dict[str, Any]) -> bytes:
        if self.fmt == "txt":
            text = rec.get(self.text_field)
            text = "" if text is None else str(text)
            if "\n" in text or "\r" in text:
                raise VeilError(f"record {rec.get('id')!r} contains a line break and cannot be written "
                                "as one line of plain text; choose --output-format jsonl")
            return (text + "\n").encode("utf-8")
        try:  # JSONL output is JSON: NaN / Infinity are refused (the internal partial file of CSV / Parquet keeps them)
            return (json.dumps(rec, ensure_ascii=False, allow_nan=self.fmt != "jsonl") + "\n").encode("utf-8")
        except ValueError:
            bad = [k for k, v in rec.items() if isinstance(v, float) and not math.isfinite(v)]
            raise VeilError(f"record {rec.get('id', '?')!r}: field(s) {', '.join(map(repr, bad)) or '(nested)'} hold "
                            "NaN or Infinity, which JSON cannot carry; choose --output-format parquet or csv, or "
                            "replace them in the input") from None

    def write(self, records: Iterable[dict[str, Any]], sidecar_records: Iterable[dict[str, Any]] = (),
              state: dict[str, Any] | None = None) -> None:
        """Append one batch (and its sidecar records) and mark it complete; ``state`` is kept for a resume."""
        try:
            encoded = [self._encode(r) for r in records]
            n = len(encoded)
            blobs = [b"".join(encoded)]
            if self.sidecar is not None:
                blobs.append(b"".join((json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8")
                                      for r in sidecar_records))
            for i, (f, blob) in enumerate(zip(self._files, blobs)):
                f.write(blob)
                self._bytes[i] += len(blob)
            for f in self._files:
                f.flush()
                os.fsync(f.fileno())
            self.done += n
            if state is not None:
                self.state = state
            self._save_progress()
        except OSError as e:
            raise _write_error(self.partial, e) from None

    def _save_progress(self) -> None:
        write_json_atomic(self.progress, {"settings": self.hash, "input": self.input_hash, "records": self.done,
                                          "bytes": self._bytes, "state": self.state})

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            for f in self._files:
                f.close()
            if self.complete:
                return
            if exc_type is not None:
                if self.done == 0 or self.stdout:  # nothing worth resuming: leave nothing behind
                    self._cleanup()
                return  # keep .partial and .progress.json for the next run to resume
            try:
                self._finish()
            except OSError as e:
                raise _write_error(self.path, e) from None
        finally:
            if self._lock is not None:
                self._lock.__exit__(None, None, None)
            if self._tmpdir:
                shutil.rmtree(self._tmpdir, ignore_errors=True)

    def _cleanup(self) -> None:
        for p in self._targets() + [self.progress]:
            p.unlink(missing_ok=True)

    def _finish(self) -> None:
        final, final_id = self.partial, self._ids[0]
        check_identity(self.partial, final_id)  # read below: it must be the file this run wrote
        if self.fmt in ("csv", "parquet"):  # converted into a fresh file beside the output, never a fixed name
            fd, final = temp_beside(self.path)
            try:
                with os.fdopen(fd, "wb") as f:
                    final_id = identity(f)
                    (jsonl_to_csv if self.fmt == "csv" else jsonl_to_parquet)(self.partial, f)
                    f.flush()
                    os.fsync(f.fileno())
            except BaseException:
                final.unlink(missing_ok=True)
                raise
        if self.stdout:
            with open(final, "rb") as f:
                shutil.copyfileobj(f, sys.stdout.buffer)
            sys.stdout.buffer.flush()
            return
        if self.sidecar is not None:
            replace_file(companion(self.sidecar, ".partial"), self.sidecar, self._ids[1])
        self.manifest.unlink(missing_ok=True)  # the old output's record must not outlive it
        replace_file(final, self.path, final_id)
        self.partial.unlink(missing_ok=True)
        write_json_atomic(self.manifest, {**self.describe, "settings": self.hash, "records": self.done,
                                          "format": self.fmt})
        self.progress.unlink(missing_ok=True)


def _write_error(path: Path, e: OSError) -> VeilError:
    if e.errno == errno.ENOSPC:
        return VeilError(f"{path}: the disk is full; free some space and re-run the same command to resume")
    return VeilError(f"cannot write {path}: {e.strerror or e}")


def recorded(path: str | Path) -> dict[str, Any]:
    """What ``OUTPUT.veil.json`` says of a finished output (``{}`` without one, or for standard input)."""
    if str(path) == STDIO:
        return {}
    try:
        rec = json.loads(companion(path, ".veil.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return rec if isinstance(rec, dict) else {}
