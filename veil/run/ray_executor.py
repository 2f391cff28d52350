"""Mask / fill stage on a Ray cluster: Ray Data reads the corpus, actor pools run the stage, shards plus a manifest come out.

Data flow::

    input file(s) --(Ray Data datasource: veil's own readers, one read task per file)-->
      rows (file index, document number, document) --(map_batches: an actor pool; each actor loads
      the models once; --device cuda asks one GPU per actor)--> output records --(driver, in input
      order)--> OUTPUT/part-00000.jsonl, part-00001.jsonl, ... + OUTPUT/manifest.json

The documents are read by the same reader functions the local engine uses, and every document draws
from its own seeded RNG, so the records are those of the local engine, in the same order. Rows keep
their input position (file index, document number) and Ray Data preserves the order, so shard *k*
always holds records ``k * shard_size`` to ``(k + 1) * shard_size - 1``. After each shard the
manifest records it (name, record count, input position of its last record); a driver restarted after
a crash keeps the shards the manifest lists and skips the documents up to the last one's position.
A worker that dies is restarted by Ray and its batch retried (Ray Data's actor defaults), which
changes nothing in the output.

``OUTPUT`` ending in ``.jsonl`` is one file: the shards are written to ``OUTPUT.shards/`` and
concatenated into ``OUTPUT`` (and the fill stage's ``OUTPUT.substitutions.jsonl``) at the end.
Otherwise ``OUTPUT`` is a folder of ``part-*.jsonl`` shards (fill: ``substitutions/part-*.jsonl``
beside them). On a multi-node cluster, inputs and outputs must be on a filesystem every node sees.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import sys
import time
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from veil.errors import VeilError

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
SUBSTITUTIONS_DIR = "substitutions"
SHARD_FORMAT = "part-{:05d}.jsonl"


def input_files(path: str | Path, suffixes: Sequence[str] | None = None) -> list[Path]:
    """One file, or the files of a folder (sorted by name; ``suffixes`` filters a folder's files)."""
    p = Path(path)
    if p.is_file():
        return [p.resolve()]
    if p.is_dir():
        files = sorted(f.resolve() for f in p.iterdir() if f.is_file() and not f.name.startswith(".")
                       and (not suffixes or f.suffix.lower() in suffixes))
        if not files:
            raise VeilError(f"{path}: the folder holds no input files"
                            + (f" ({', '.join(suffixes)})" if suffixes else ""))
        return files
    raise VeilError(f"{path}: no such file or folder")


def _documents_datasource(paths: list[Path], read: Callable[[str], Iterator[Any]], block_rows: int) -> Any:
    """A Ray Data datasource yielding (file, n, doc) rows: ``read(path)`` is veil's reader for one file."""
    import pyarrow as pa
    from ray.data.datasource import FileBasedDatasource

    class VeilDocuments(FileBasedDatasource):
        def __init__(self) -> None:
            super().__init__([str(p) for p in paths])
            self._index = {os.path.normpath(str(p)): i for i, p in enumerate(paths)}

        def _read_stream(self, f: Any, path: str) -> Iterator[Any]:
            i = self._index[os.path.normpath(path if path.startswith("/") else "/" + path)]
            rows: list[tuple[int, bytes]] = []
            for n, doc in enumerate(read(str(paths[i])), 1):
                rows.append((n, pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL)))
                if len(rows) >= block_rows:
                    yield _doc_block(pa, i, rows)
                    rows = []
            if rows:
                yield _doc_block(pa, i, rows)

    return VeilDocuments()


def _doc_block(pa: Any, file_index: int, rows: list[tuple[int, bytes]]) -> Any:
    return pa.table({"file": pa.array([file_index] * len(rows), pa.int32()),
                     "n": pa.array([n for n, _ in rows], pa.int64()),
                     "doc": pa.array([d for _, d in rows], pa.binary())})


class StageWorker:
    """A Ray Data actor: loads the stage once, then turns document rows into output-record rows."""

    def __init__(self, stage: Any, skip_to: tuple[int, int] | None = None, threads: int | None = None) -> None:
        if threads:  # torch reads it when first imported; a masking stage need not import torch at all
            os.environ["OMP_NUM_THREADS"] = str(threads)
            if "torch" in sys.modules:
                sys.modules["torch"].set_num_threads(threads)
        self.stage, self.skip_to = stage, tuple(skip_to) if skip_to else None
        stage.load()

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        files, ns, docs = batch.column("file").to_pylist(), batch.column("n").to_pylist(), batch.column("doc").to_pylist()
        keep = [i for i in range(len(files)) if self.skip_to is None or (files[i], ns[i]) > self.skip_to]
        out = self.stage([pickle.loads(docs[i]) for i in keep]) if keep else []
        return pa.table({
            "file": pa.array([files[i] for i in keep], pa.int32()),
            "n": pa.array([ns[i] for i in keep], pa.int64()),
            "id": pa.array([r.id for r in out], pa.string()),
            "line": pa.array([_jsonl(r.record) for r in out], pa.string()),
            "extra": pa.array(["".join(_jsonl(e) for e in r.extra) for r in out], pa.string()),
        })


def _jsonl(rec: dict[str, Any]) -> str:
    # the local writer's JSONL encoding (veil.io.output.ResumableWriter._encode): same bytes
    return json.dumps(rec, ensure_ascii=False) + "\n"


def init_ray(address: str | None, workers: int, num_gpus: float = 0) -> None:
    """Connect to ``address`` (a running cluster, ``auto``), or start a local one sized for ``workers``."""
    import ray

    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = dict(include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    if address:
        ray.init(address=address, **kwargs)
        return
    for attempt in range(3):
        try:
            ray.init(num_cpus=max(workers, os.cpu_count() or 1), **kwargs)
            return
        except Exception as e:  # Ray waits a fixed 30 s for its own processes: too short on an overloaded machine
            if "timed out during startup" not in str(e) or attempt == 2:
                raise
            log.warning("the local Ray cluster did not start in time (%s); trying again", e)
            ray.shutdown()


def run_stage(stage: Any, inputs: list[Path], read: Callable[[str], Iterator[Any]], output: str | Path, *,
              settings: dict[str, Any], workers: int = 1, address: str | None = None, device: str | None = None,
              batch_size: int = 64, shard_size: int = 10_000, resume: bool = True, progress: bool = False,
              cpus_per_worker: float = 1.0, extra_name: str | None = None) -> dict[str, Any]:
    """Run ``stage`` over ``inputs`` on Ray and write ``output`` (see the module docstring); returns statistics.

    ``extra_name``: for the fill stage, where a single-file output's substitutions go
    (``OUTPUT.substitutions.jsonl``); a folder output keeps them in ``substitutions/``."""
    import ray

    from veil.io.output import settings_hash, write_json_atomic

    if workers < 1 or batch_size < 1 or shard_size < 1:
        raise VeilError("--workers, --batch-size and the shard size must be at least 1")
    output = Path(output)
    single = output.suffix.lower() == ".jsonl"
    if output.suffix and not single:
        raise VeilError(f"{output}: the ray engine writes JSONL: one .jsonl file or a folder of shards")
    folder = output.with_name(output.name + ".shards") if single else output
    gpus = 1.0 if device and device.startswith("cuda") else 0.0
    state = {"settings": settings_hash(settings), "inputs": [str(p) for p in inputs], "shard_size": shard_size}
    manifest_path = folder / MANIFEST
    shards: list[dict[str, Any]] = []
    if folder.exists():
        old = _read_manifest(manifest_path)
        if resume and old and all(old.get(k) == v for k, v in state.items()):
            if old.get("complete"):
                if not single:
                    log.info("%s is complete already; nothing to do", output)
                    return {"records": old["records"], "shards": len(old["shards"]), "complete_already": True}
            shards = old["shards"]
        elif any(folder.iterdir()) and not (old or not resume):
            raise VeilError(f"{folder} exists and is not a veil shard folder; choose another output")
        keep = {s["name"] for s in shards}
        for f in list(folder.glob("part-*.jsonl")) + list((folder / SUBSTITUTIONS_DIR).glob("part-*.jsonl")):
            if f.name not in keep:  # a shard of another run, or one a crash left half written
                f.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    if extra_name:
        (folder / SUBSTITUTIONS_DIR).mkdir(exist_ok=True)
    skip_to = tuple(shards[-1]["last"]) if shards else None
    if shards:
        log.info("resuming %s after %d finished shards (%d records)", output, len(shards), sum(s["records"] for s in shards))

    init_ray(address, workers, gpus)
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True  # shard k = records k*S..(k+1)*S-1, on every run
    ctx.enable_progress_bars = progress
    # reading reserves no CPU: with every CPU given to a stage actor, a read task needing one would
    # wait for ever (the actors wait for its blocks)
    ds = ray.data.read_datasource(_documents_datasource(inputs, read, block_rows=batch_size), num_cpus=0)
    ds = ds.map_batches(StageWorker, fn_constructor_kwargs=dict(stage=stage, skip_to=skip_to,
                                                                threads=max(1, int(cpus_per_worker))),
                        batch_size=batch_size, batch_format="pyarrow",
                        compute=ray.data.ActorPoolStrategy(size=workers),
                        num_cpus=cpus_per_worker, num_gpus=gpus or None)
    t0 = time.perf_counter()
    buf: list[dict[str, Any]] = []
    last = skip_to
    n_new = 0

    def flush(rows: list[dict[str, Any]]) -> None:
        name = SHARD_FORMAT.format(len(shards))
        _write_atomic(folder / name, "".join(r["line"] for r in rows))
        if extra_name:
            _write_atomic(folder / SUBSTITUTIONS_DIR / name, "".join(r["extra"] for r in rows))
        shards.append({"name": name, "records": len(rows), "last": [rows[-1]["file"], rows[-1]["n"]]})
        write_json_atomic(manifest_path, {**state, "shards": shards, "complete": False})

    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        for row in batch.to_pylist():
            key = (row["file"], row["n"])
            if last is not None and key <= last:  # never silently wrong: a shard must hold one range
                raise VeilError(f"records came back out of input order ({key} after {last})")
            last = key
            buf.append(row)
            n_new += 1
        while len(buf) >= shard_size:
            flush(buf[:shard_size])
            buf = buf[shard_size:]
    if buf:
        flush(buf)
    total = sum(s["records"] for s in shards)
    if total == 0:
        raise VeilError(f"{', '.join(map(str, inputs))}: the corpus is empty")
    write_json_atomic(manifest_path, {**state, "shards": shards, "complete": True, "records": total})
    if single:
        _concatenate([folder / s["name"] for s in shards], output)
        if extra_name:
            _concatenate([folder / SUBSTITUTIONS_DIR / s["name"] for s in shards], output.with_name(extra_name))
        shutil.rmtree(folder)
    secs = time.perf_counter() - t0
    return {"records": total, "processed_now": n_new, "shards": len(shards), "workers": workers,
            "seconds": round(secs, 2)}


class _MapActor:
    """A Ray actor for :func:`map_batches_ordered`: builds ``make()`` once (loads the models), then maps batches."""

    def __init__(self, make: Callable[[], Callable[[list[Any]], list[Any]]], threads: int | None = None) -> None:
        if threads:
            os.environ["OMP_NUM_THREADS"] = str(threads)
            if "torch" in sys.modules:
                sys.modules["torch"].set_num_threads(threads)
        self.fn = make()

    def run(self, items: list[Any]) -> list[Any]:
        out = list(self.fn(items))
        if len(out) != len(items):  # never silently wrong: one result per item
            raise VeilError(f"a batch of {len(items)} items gave {len(out)} results")
        return out


def map_batches_ordered(make: Callable[[], Callable[[list[Any]], list[Any]]], items: Iterable[Any], *,
                        workers: int = 1, address: str | None = None, device: str | None = None,
                        batch_size: int = 64, cpus_per_worker: float = 1.0) -> Iterator[Any]:
    """Map ``items`` in batches over ``workers`` Ray actors, each building ``make()`` once; results in input order.

    The Python API's ``engine="ray"`` (and the experiment runner's mask stage) run on this: items stream
    (at most two batches per actor are in flight, so a generator of any length works), an actor that
    dies is restarted by Ray and its batch retried (``max_restarts`` / ``max_task_retries``), and the
    results are those of ``make()(batch)`` in this process, batch by batch, in order.
    """
    import ray

    if workers < 1 or batch_size < 1:
        raise VeilError("workers and batch_size must be at least 1")
    gpus = 1.0 if device and device.startswith("cuda") else 0.0
    init_ray(address, workers, gpus)
    actor_cls = ray.remote(num_cpus=cpus_per_worker, num_gpus=gpus or None, max_restarts=-1,
                           max_task_retries=-1)(_MapActor)
    actors = [actor_cls.remote(make, max(1, int(cpus_per_worker))) for _ in range(workers)]
    pending: list[Any] = []  # futures in submission order
    it = iter(items)
    n = 0
    try:
        while True:
            while len(pending) < 2 * workers:
                batch = list(islice(it, batch_size))
                if not batch:
                    break
                pending.append(actors[n % workers].run.remote(batch))
                n += 1
            if not pending:
                return
            yield from ray.get(pending.pop(0))
    finally:
        for a in actors:
            ray.kill(a)


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def _write_atomic(path: Path, text: str) -> None:
    from veil.io.atomic import write_text_atomic

    write_text_atomic(path, text)


def _concatenate(parts: list[Path], dest: Path) -> None:
    from veil.io.atomic import atomic_write

    with atomic_write(dest, "wb") as out:
        for p in parts:
            with open(p, "rb") as f:
                shutil.copyfileobj(f, out)


def read_output(output: str | Path) -> Iterator[str]:
    """The JSONL lines of a ray-engine output, one file or a folder of shards, in shard order."""
    output = Path(output)
    files = [output] if output.is_file() else sorted(output.glob("part-*.jsonl"))
    for f in files:
        with open(f, encoding="utf-8") as fh:
            yield from fh
