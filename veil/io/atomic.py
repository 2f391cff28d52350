"""Corpus I/O stage: how veil creates every file it writes -- never through a symbolic link, atomically.

veil runs unattended, sometimes as root, sometimes in shared folders where another user can plant
a symbolic link at a name veil is about to write (``OUT.partial`` pointing at someone's file). So:

- a new file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW``: if anything exists at the name
  (a link, a file, a pipe), the call fails instead of writing through it (:func:`create_new`);
- a file that replaces another (an output, a manifest, ``progress.json``, a table) is written to a
  fresh, randomly named temporary file in the *same folder*, created that way, flushed to disk and
  renamed onto the target (:func:`atomic_write`); a rename replaces a link itself, never its
  target, and a reader never sees half a file. A target that is a link, a folder or not a
  regular file is refused before anything is written;
- a file veil appends to between runs (a resumable ``.partial``) is reopened with ``O_NOFOLLOW``
  and must still be a regular file (:func:`open_existing`).

Temporary names are ``.NAME.RANDOM.tmp`` beside the target; a failed write removes its own.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator

from veil.errors import VeilError

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_COMMON = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def check_target(path: str | Path, what: str = "") -> None:
    """Refuse (one line) a path that is a symbolic link, a folder or not a regular file; nothing there is fine."""
    p = Path(path)
    what = what or str(p)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise VeilError(f"cannot write {what}: a part of its folder path is a file") from None
    if stat.S_ISLNK(st.st_mode):
        raise VeilError(f"{what} is a symbolic link; veil never writes through links (remove it, or choose "
                        "another path)")
    if stat.S_ISDIR(st.st_mode):
        raise VeilError(f"{what} is a folder; give a file name")
    if not stat.S_ISREG(st.st_mode):
        raise VeilError(f"{what} is not a regular file (a device, pipe or socket); veil writes regular files only")


def create_new(path: str | Path, mode: int = 0o666) -> int:
    """A file descriptor of a file created now at ``path`` (``O_EXCL | O_NOFOLLOW``: fails if anything is there)."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | _COMMON, mode)


def open_new(path: str | Path) -> IO[bytes]:
    """``path`` created afresh for writing: a regular file already there is replaced (unlinked first);
    a link or anything else there is refused. The create is exclusive, so a link planted between
    the unlink and the create makes it fail, never write through."""
    path = Path(path)
    check_target(path)
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    try:
        fd = create_new(path)
    except FileExistsError:
        raise VeilError(f"{path} appeared while veil was creating it; is another program writing there?") from None
    return os.fdopen(fd, "wb")


def open_existing(path: str | Path) -> IO[bytes]:
    """An existing regular file opened for update (read and write) without following a link."""
    try:
        fd = os.open(path, os.O_RDWR | NOFOLLOW | _COMMON)
    except OSError:
        if os.path.islink(path):
            raise VeilError(f"{path} is a symbolic link; veil never writes through links (remove it)") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise VeilError(f"{path} is not a regular file; remove it")
    return os.fdopen(fd, "r+b")


def open_read(path: str | Path, mode: str = "rb", **kwargs: Any) -> IO[Any]:
    """A file veil wrote beside an output (a manifest, a partial file), opened for reading, not through a link."""
    return os.fdopen(os.open(path, os.O_RDONLY | NOFOLLOW | _COMMON), mode, **kwargs)


def read_text(path: str | Path) -> str:
    with open_read(path) as f:
        return f.read().decode("utf-8")


def temp_beside(path: str | Path) -> tuple[int, Path]:
    """(descriptor, path) of a new, randomly named file in ``path``'s folder, created exclusively."""
    path = Path(path)
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return create_new(tmp), tmp
        except FileExistsError:
            continue
    raise VeilError(f"cannot create a temporary file beside {path}")  # pragma: no cover (100 random collisions)


@contextmanager
def atomic_write(path: str | Path, mode: str = "wb", *, encoding: str | None = "utf-8", newline: str | None = None,
                 make_parents: bool = True) -> Iterator[IO[Any]]:
    """Write ``path`` atomically: ``with atomic_write(p, "w") as f: f.write(...)``.

    The block writes a fresh temporary file in ``path``'s folder; on success it is flushed, synced and
    renamed onto ``path``; on any error it is removed and ``path`` is untouched. ``path`` must be
    absent or a regular file (a link, a folder, a device is refused before anything is written).
    """
    path = Path(path)
    check_target(path)
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_beside(path)
    try:
        kwargs = {} if "b" in mode else {"encoding": encoding, "newline": newline}
        with os.fdopen(fd, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    with atomic_write(path, "wb") as f:
        f.write(data)


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_write(path, "w", newline="") as f:
        f.write(text)


def write_json_atomic(path: str | Path, obj: Any, *, indent: int | None = 1, sort_keys: bool = True) -> None:
    """``obj`` as JSON, atomically; non-finite numbers are refused (``NaN`` is not JSON)."""
    try:
        text = json.dumps(obj, indent=indent, sort_keys=sort_keys, allow_nan=False)
    except ValueError:
        raise VeilError(f"cannot write {path}: it would hold NaN or Infinity, which JSON cannot carry") from None
    write_text_atomic(path, text + "\n")


def identity(f: IO[Any]) -> tuple[int, int]:
    """(device, inode) of an open file: what :func:`replace_file` checks the name still refers to."""
    st = os.fstat(f.fileno())
    return st.st_dev, st.st_ino


def check_identity(path: str | Path, expect: tuple[int, int] | None) -> None:
    """``path`` must still be the regular file veil wrote (``expect``: its :func:`identity`), not a link put there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise VeilError(f"{path} disappeared during the run; re-run") from None
    if not stat.S_ISREG(st.st_mode) or (expect is not None and (st.st_dev, st.st_ino) != tuple(expect)):
        raise VeilError(f"{path} was replaced during the run (by a link or another file); nothing was written "
                        "from it. Is another program writing in this folder?")


def replace_file(src: str | Path, dest: str | Path, expect: tuple[int, int] | None = None) -> None:
    """Rename ``src`` (a file veil wrote: ``expect`` is its :func:`identity`) onto ``dest``, which must be
    absent or a regular file; a link put in ``src``'s place would otherwise become ``dest``."""
    check_target(dest)
    check_identity(src, expect)
    os.replace(src, dest)
