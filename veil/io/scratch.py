"""Corpus I/O stage: scratch copies that never outlive the process, whatever ends it.

``veil mask - -o -`` reads standard input twice (checked whole before the work, then read for it),
so it keeps a copy of it: the *unmasked* corpus. That copy must not survive a ``SIGKILL`` (which
no program can catch) any more than a normal exit:

- where the system can reopen a file by its descriptor (Linux's ``/proc/self/fd``), the copy is an
  anonymous file: created without a name (``O_TMPFILE``) or unlinked at once, reopened through
  ``/proc/self/fd/N``. The kernel frees it when the process ends, however it ends; there is never a
  name to find or to leave behind (:func:`anonymous_copy`);
- elsewhere it lives in a private folder named after the process (``veil-stdin-PID-*``, mode 0700),
  removed on exit (``SIGTERM`` included: the CLI turns it into a clean exit), and removed by the
  next veil run if a ``SIGKILL`` left it (:func:`private_dir`, :func:`remove_abandoned`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, BinaryIO

FD_FOLDER = Path("/proc/self/fd")


def anonymous_copy(src: BinaryIO) -> tuple[IO[bytes], Path] | None:
    """``(file, path)``: a nameless copy of ``src`` and a path that reopens it; None where the system
    cannot reopen a file by descriptor (then use :func:`private_dir`). Close the file to free it."""
    if not FD_FOLDER.is_dir():
        return None
    f = tempfile.TemporaryFile()  # Linux: O_TMPFILE (never named), else unlinked right after creation
    try:
        path = FD_FOLDER / str(f.fileno())
        with open(path, "rb"):
            pass
    except OSError:
        f.close()
        return None
    shutil.copyfileobj(src, f)
    f.flush()
    return f, path


def private_dir(prefix: str) -> Path:
    """A new folder (mode 0700) in the temporary folder, named ``PREFIX<pid>-<random>``; remove it when done."""
    remove_abandoned(prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))


def remove_abandoned(prefix: str) -> list[Path]:
    """Remove this user's ``PREFIX<pid>-*`` folders whose process is gone (left by a ``SIGKILL``)."""
    removed = []
    root = Path(tempfile.gettempdir())
    try:
        candidates = list(root.glob(f"{prefix}*"))
    except OSError:
        return removed
    for p in candidates:
        pid = p.name[len(prefix):].split("-", 1)[0]
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if not pid.isdigit() or (hasattr(os, "getuid") and st.st_uid != os.getuid()) or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
