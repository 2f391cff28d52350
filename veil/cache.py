"""Core: caches. The experiment's stage cache (every stage's output lives under ``CACHE/STAGE/KEY``, KEY the
hash of its inputs and settings), the one settings hash (:func:`stable_hash`) every cache key and
resumable output is made with, and the folder of models veil builds once (:func:`cache_root`).

A stage is written into a temporary folder and renamed into place when complete, so an interrupted
run leaves no half-written entry and the next run resumes at the first missing stage.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable


def cache_root() -> Path:
    """Where models veil builds once are kept (de-quantised SmolLM2, the warmed-up MiniLM):
    ``$VEIL_CACHE_DIR`` if set, else ``~/.cache/veil``."""
    env = os.environ.get("VEIL_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "veil"


def stable_hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def texts_hash(texts: list[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


class StageCache:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.computed: list[str] = []  # "stage/key" of the stages this process computed
        self.reused: list[str] = []

    def path(self, stage: str, key: str) -> Path:
        return self.root / stage / key

    def meta(self, stage: str, key: str) -> dict[str, Any] | None:
        f = self.path(stage, key) / "done.json"
        return json.loads(f.read_text(encoding="utf-8")) if f.is_file() else None

    def run(self, stage: str, key: str, settings: dict[str, Any], fn: Callable[[Path], dict[str, Any]]) -> tuple[Path, dict[str, Any]]:
        """Return (folder, meta) of a finished entry, computing it with ``fn(tmp_folder) -> info`` if missing.

        ``meta["seconds"]`` is the wall time of ``fn`` plus ``info["seconds_earlier"]`` when ``fn``
        resumed work that interrupted runs had begun (a fill), so it states what the entry cost.
        """
        dest = self.path(stage, key)
        meta = self.meta(stage, key)
        if meta is not None:
            self.reused.append(f"{stage}/{key}")
            return dest, meta
        tmp = dest.with_name(f"{key}.tmp-{os.getpid()}")
        if tmp.exists():
            shutil.rmtree(tmp)
        _remove_abandoned(dest)
        tmp.mkdir(parents=True)
        t0 = time.time()
        info = fn(tmp) or {}
        secs = time.time() - t0 + float(info.get("seconds_earlier", 0.0))
        meta = {"stage": stage, "key": key, "settings": settings, "seconds": round(secs, 2),
                "info": info, "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
        (tmp / "done.json").write_text(json.dumps(meta, indent=1, default=str), encoding="utf-8")
        if dest.exists():  # a concurrent run finished first; keep its entry
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, dest)
        self.computed.append(f"{stage}/{key}")
        return dest, meta


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _remove_abandoned(dest: Path) -> None:
    """Delete ``KEY.tmp-PID`` folders of ``dest`` left by runs that were killed (their PID is gone)."""
    if not dest.parent.is_dir():
        return
    for old in dest.parent.glob(f"{dest.name}.tmp-*"):
        pid = old.name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
