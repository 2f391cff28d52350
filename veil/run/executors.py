"""Run stage: executors, where a stage's batches run: ``local`` (this process) or ``ray`` (actors on a Ray cluster).

An executor has one method, ``map(stage, batches)``: it loads the stage where the batches run and
yields the stage's output for every batch, **in input order**. Everything else (reading, checks,
grouping, the locked resumable writer, statistics) is the corpus loop's (:mod:`veil.run.corpus`)
and the same for every executor, so a Ray run writes the same bytes through the same output
checks, lock and manifest as a local one.

Ray: ``workers`` actors each load the stage once (``--device cuda`` asks one GPU per actor); at
most two batches per actor are in flight, so a stream of any length works and memory stays flat;
an actor that dies is restarted by Ray and its batch retried (``max_restarts`` /
``max_task_retries``), which changes nothing in the output.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Iterable, Iterator

from veil.errors import VeilError

log = logging.getLogger(__name__)

EXECUTORS = ("local", "ray")


class LocalExecutor:
    name = "local"

    def map(self, stage: Any, batches: Iterable[Any]) -> Iterator[Any]:
        stage.load()
        for batch in batches:
            yield stage(batch)


class _StageActor:
    """A Ray actor: loads the stage once (the models), then runs it on batch after batch."""

    def __init__(self, stage: Any, threads: int | None = None) -> None:
        if threads:  # torch reads it when first imported; a masking stage need not import torch at all
            os.environ["OMP_NUM_THREADS"] = str(threads)
            if "torch" in sys.modules:
                sys.modules["torch"].set_num_threads(threads)
        self.stage = stage
        stage.load()

    def run(self, batch: Any) -> Any:
        return self.stage(batch)


class RayExecutor:
    name = "ray"

    def __init__(self, workers: int = 1, address: str | None = None, device: str | None = None,
                 cpus_per_worker: float = 1.0) -> None:
        if workers < 1:
            raise VeilError("workers must be at least 1")
        self.workers, self.address, self.device, self.cpus_per_worker = workers, address, device, cpus_per_worker

    def map(self, stage: Any, batches: Iterable[Any]) -> Iterator[Any]:
        import ray

        gpus = 1.0 if self.device and self.device.startswith("cuda") else 0.0
        init_ray(self.address, self.workers)
        actor_cls = ray.remote(num_cpus=self.cpus_per_worker, num_gpus=gpus or None, max_restarts=-1,
                               max_task_retries=-1)(_StageActor)
        actors = [actor_cls.remote(stage, max(1, int(self.cpus_per_worker))) for _ in range(self.workers)]
        pending: list[Any] = []  # futures in submission order
        it = iter(batches)
        n = 0
        try:
            while True:
                while len(pending) < 2 * self.workers:
                    batch = next(it, None)
                    if batch is None:
                        break
                    pending.append(actors[n % self.workers].run.remote(batch))
                    n += 1
                if not pending:
                    return
                yield ray.get(pending.pop(0))
        finally:
            for a in actors:
                ray.kill(a)


def init_ray(address: str | None, workers: int) -> None:
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


def make_executor(name: str = "local", workers: int | None = None, address: str | None = None,
                  device: str | None = None, threads: int | None = None) -> Any:
    """The executor ``name``; options it cannot honour are errors, not quiet defaults."""
    if name not in EXECUTORS:
        raise VeilError(f"unknown executor {name!r}; choose from {', '.join(EXECUTORS)}")
    if workers is not None and workers < 1:
        raise VeilError("workers must be at least 1")
    if name == "local":
        if workers is not None or address is not None:
            raise VeilError("workers and address apply to the ray executor only")
        return LocalExecutor()
    return RayExecutor(workers or 1, address, device, float(threads or 1))


def add_executor_arguments(p: Any) -> None:
    """``--executor`` (alias ``--engine``) / ``--address`` / ``--workers``, shared by ``veil mask`` and ``veil fill``."""
    p.add_argument("--executor", "--engine", dest="executor", choices=EXECUTORS, default="local",
                   help="where batches run: local (this process) or ray (actors on a Ray cluster, each loading "
                        "the models once); the output, its checks and its resume are the same (default: local)")
    p.add_argument("--address", default=None,
                   help="--executor ray: the cluster to join (e.g. auto, or HOST:6379); default: start a local one")
    p.add_argument("--workers", type=int, default=None,
                   help="--executor ray: actors, each loading the models once (default: 1)")


def executor_of(args: Any, device: str | None = None, threads: int | None = None) -> Any:
    given = [f"--{n}" for n in ("address", "workers") if getattr(args, n, None) is not None]
    if args.executor == "local" and given:
        raise VeilError(f"{', '.join(given)} apply to --executor ray only")
    return make_executor(args.executor, args.workers, args.address, device, threads)
