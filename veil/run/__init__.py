"""Corpus execution engines for the mask and fill stages: ``local`` (this process) or ``ray`` (a Ray cluster).

Both engines run the same per-batch stage function (:class:`MaskStage` / :class:`FillStage` from
:mod:`veil.run.stages`) on the same documents, and every document draws from its own seeded RNG,
so their outputs, ordered by id, are identical; the ``ray`` engine only changes where batches run.
"""

from __future__ import annotations

ENGINES = ("local", "ray")


def add_engine_arguments(p) -> None:
    """``--engine`` / ``--address`` / ``--workers`` / ``--shard-size``, shared by ``veil mask`` and ``veil fill``."""
    p.add_argument("--engine", choices=ENGINES, default="local",
                   help="local: this process; ray: Ray Data actor pools on a Ray cluster (default: local)")
    p.add_argument("--address", default=None,
                   help="--engine ray: the cluster to join (e.g. auto, or HOST:6379); default: start a local one")
    p.add_argument("--workers", type=int, default=None,
                   help="--engine ray: actors, each loading the models once (default: 1)")
    p.add_argument("--shard-size", type=int, default=10_000,
                   help="--engine ray: records per output shard, the unit a restarted run resumes from (default 10000)")


def check_engine_arguments(args, local_only: dict[str, bool]) -> None:
    """Options the chosen engine cannot honour are errors, not quiet defaults."""
    from veil.errors import VeilError

    if args.engine == "local":
        given = [f"--{n}" for n in ("address", "workers") if getattr(args, n) is not None]
        if given:
            raise VeilError(f"{', '.join(given)} apply to --engine ray only")
        return
    bad = [name for name, used in local_only.items() if used]
    if bad:
        raise VeilError(f"{', '.join(bad)} cannot be used with --engine ray")
    if args.workers is not None and args.workers < 1:
        raise VeilError("--workers must be at least 1")
