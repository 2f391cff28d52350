"""Train stage command: ``veil adapt REVIEWED -o DIR`` fine-tunes the detector on a human review of your own corpus.

REVIEWED is what ``veil review --export gold`` writes (``--format review``, the default) or switchboard_pii gold
JSONL. The folder DIR is a detector: ``veil mask --set neural_tagger.model=DIR`` (or the API's
``options={"neural_tagger": {"model": DIR}}``) masks with it. See docs/adapt.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import shutil
import tempfile
from dataclasses import fields
from pathlib import Path

from veil.errors import VeilError

log = logging.getLogger(__name__)

FORMATS = ("review", "switchboard_pii", "sgd")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from veil.mask.neural.adapt import AdaptConfig

    p.add_argument("reviewed", help="the reviewed documents: `veil review --export gold` JSONL, or switchboard_pii gold")
    p.add_argument("-o", "--output", "--out", dest="out", required=True,
                   help="new detector folder (use it with --set neural_tagger.model=OUT)")
    p.add_argument("--format", choices=FORMATS, default="review", help="format of REVIEWED (default review)")
    p.add_argument("--base", default=None, help="detector folder to start from (default: the one shipped with veil)")
    p.add_argument("--add-terms", default=None, metavar="FILE",
                   help="terms the reviewer added (`veil review --export terms`, term<TAB>TYPE): labelled wherever "
                        "they occur in the training text")
    p.add_argument("--exclude", default=None, metavar="FILE",
                   help="terms the reviewer excluded (`veil review --export exclude`, one a line): not personal "
                        "wherever they were masked alone")
    defaults = AdaptConfig()
    for f in fields(AdaptConfig):
        value = getattr(defaults, f.name)
        p.add_argument("--" + f.name.replace("_", "-"), type=type(value), default=value, help=f"(default {value})")


def _exclude(path: str | None) -> list[str]:
    from veil.io.formats import read_text

    if not path:
        return []
    return [ln.strip() for ln in read_text(path, "--exclude file").splitlines() if ln.strip() and not ln.startswith("#")]


def run(args: argparse.Namespace) -> int:
    from veil.cli.common import progress_of
    from veil.mask.gold import read_gold
    from veil.mask.neural.adapt import AdaptConfig, adapt, file_sha256
    from veil.mask.neural.saved import PACKAGED_DIR

    config = AdaptConfig(**{f.name: getattr(args, f.name) for f in fields(AdaptConfig)})
    if not all(math.isfinite(getattr(config, f.name)) for f in fields(AdaptConfig)):
        raise VeilError("every number must be finite")
    if config.steps < 0 or config.batch_size < 1 or config.threads < 1 or config.dialogues < 0 or \
            config.distil < 0 or config.distil_weight < 0:
        raise VeilError("--steps, --dialogues, --distil and --distil-weight must be 0 or more, --batch-size and "
                        "--threads at least 1")
    if not 0.0 < config.reviewed_share <= 1.0 or not 0.0 <= config.holdout < 1.0 or config.lr <= 0 or \
            not 0.0 <= config.asr_share <= 1.0 or config.anchor < 0 or config.weight_decay < 0 or config.warmup < 0:
        raise VeilError("--reviewed-share must be in (0, 1], --holdout in [0, 1), --asr-share in [0, 1], --lr above "
                        "0, --anchor, --weight-decay and --warmup 0 or more")
    out = Path(args.out)
    if out.resolve() == PACKAGED_DIR.resolve():
        raise VeilError("-o: that is the detector shipped with veil; choose another folder")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise VeilError(f"-o: {out} already exists and is not empty; choose another folder")
    golds = read_gold(args.reviewed, args.format)
    terms = {}
    if args.add_terms:
        from veil.mask.deny_list import read_terms

        terms = read_terms(args.add_terms)
    exclude = _exclude(args.exclude)
    source = {"path": os.path.basename(args.reviewed), "sha256": file_sha256(args.reviewed), "format": args.format}
    out.parent.mkdir(parents=True, exist_ok=True)
    # written beside the target and renamed at the end: an interrupted run leaves no half detector at OUT
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        record = adapt(golds, tmp, base=Path(args.base) if args.base else None, config=config, add_terms=terms,
                       exclude=exclude, source=source, progress=progress_of(args))
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    log.info("adapted detector saved to %s in %.0f s; mask with --set neural_tagger.model=%s", out,
             record["seconds"], out)
    print(json.dumps({k: record[k] for k in ("documents", "trained_on", "held_out", "spans", "steps", "seconds")}))
    return 0
