"""Train stage command: ``veil train-detector --data ../shared/data -o DIR`` fine-tunes the neural entity detector."""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import fields
from pathlib import Path

from veil.errors import VeilError

log = logging.getLogger(__name__)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from veil.mask.neural.train import DetectorTrainConfig

    p.add_argument("--data", required=True,
                   help="the shared data folder (conll2003/, wnut17/, tab/, presidio_synth/, switchboard/); held-out "
                        "parts are never read for training")
    p.add_argument("-o", "--output", "--out", dest="out", required=True, help="output folder (detector.json, detector.safetensors for torch, "
                                                "detector.onnx and detector.int8.onnx for masking); "
                                                "use it with --masker neural_tagger --set neural_tagger.model=OUT")
    p.add_argument("--progress", default=None, help="append one progress line per log interval to this file")
    defaults = DetectorTrainConfig()
    for f in fields(DetectorTrainConfig):
        value = getattr(defaults, f.name)
        if isinstance(value, bool):
            p.add_argument("--" + f.name.replace("_", "-"), action=argparse.BooleanOptionalAction, default=value,
                           help=f"(default {value})")
            continue
        p.add_argument("--" + f.name.replace("_", "-"), type=type(value), default=value, help=f"(default {value})")


def run(args: argparse.Namespace) -> int:
    from veil.mask.neural.train import DetectorTrainConfig, train

    data = Path(args.data)
    if not data.is_dir():
        raise VeilError(f"no data folder {data}")
    config = DetectorTrainConfig(**{f.name: getattr(args, f.name) for f in fields(DetectorTrainConfig)})
    if config.layers < 1 or config.layers > 6:
        raise VeilError("--layers must be 1 to 6 (MiniLM-L6 has six)")
    if not 0.0 < config.written_threshold <= 1.0:
        raise VeilError("--written-threshold must be in (0, 1]")
    summary = train(config, Path(args.out), data, progress=Path(args.progress) if args.progress else None)
    log.info("detector saved to %s in %.0f s", args.out, summary["seconds"])
    print(json.dumps({k: summary[k] for k in ("examples", "windows", "word_pieces", "seconds")}))
    return 0
