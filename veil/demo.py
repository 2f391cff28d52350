"""The README's main job (`make demo`): run veil end to end on the bundled demo corpus.

Masks the demo call transcripts with each technique, prints the share of masked tokens
(the paper's Table 2 layout), then runs the utility experiment in experiments/demo.yaml (fill, adapt
the pre-trained downstream LM, SmolLM2-135M, on every variant with LoRA, perplexity, and the word
error rate of Whisper tiny.en with each LM fused in), prints both tables and writes the HTML report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent / "data" / "demo"
TECHNIQUES = ("allow_list", "vocab_threshold", "entity_tagger", "dlp")


def mask_demo(out: Path, progress: bool = True) -> None:
    from veil.cli import main as veil
    from veil.io.formats import Fields
    from veil.run.corpus import mask_corpus

    corpus = DEMO_DIR / "calls.jsonl"
    fields = Fields(person="person", group="conversation")
    for tech in TECHNIQUES:
        dest = out / f"masked_{tech}.jsonl"
        # the demo's outputs are its own: a re-run replaces them (experiment files use the paper's [MASK])
        mask_corpus(corpus, dest, [tech], placeholder="mask", fields=fields, drop=["spans"], overwrite=True,
                    progress=progress)
        print(f"masked with {tech:16s} -> {dest}")
    common = ["--person-field", "person", "--group-field", "conversation", "--drop-field", "spans"]
    stats_args = ["mask", str(corpus), "--stats", "--stats-json", str(out / "masked_share.json"), *common,
                  *([] if progress else ["--no-progress"]), "--masker", *TECHNIQUES]
    if veil(stats_args):
        raise SystemExit("statistics failed")


def audit_demo(experiment: Path, out: Path) -> None:
    """The privacy side of the same run: residual risk of each technique on the experiment's training
    documents (the demo corpus has gold spans), written where the report picks it up (OUT/audit/)."""
    from veil.audit.compare import gold_from_documents, risk_by_masking, write_risk_by_masking
    from veil.experiment.runner import load_corpus
    from veil.experiment.spec import load_spec

    spec = load_spec(experiment)
    gold = gold_from_documents(load_corpus(spec.train))
    maskings = {t: [t] for t in spec.techniques}
    from veil.run.components import DEFAULT_MASKERS

    maskings[f"{' + '.join(DEFAULT_MASKERS)} (veil mask's default)"] = list(DEFAULT_MASKERS)
    rows = risk_by_masking(gold, maskings)
    write_risk_by_masking(out / "residual_risk.md", rows, f"the {len(gold)} training utterances")
    print(f"residual risk -> {out / 'residual_risk.md'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m veil.demo", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/demo"), help="output folder (default out/demo)")
    ap.add_argument("--mask-only", action="store_true", help="stop after masking and statistics")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    mask_demo(args.out, progress=not args.no_progress)
    if args.mask_only:
        return 0
    experiment = Path(__file__).resolve().parent.parent / "experiments" / "demo.yaml"
    if not experiment.exists():
        print(f"{experiment} is not in this checkout; stopped after masking", file=sys.stderr)
        return 0
    from veil.experiment import run_experiment

    audit_demo(experiment, args.out / "experiment" / "audit")
    run_experiment(experiment, args.out / "experiment", progress=not args.no_progress)
    print((args.out / "experiment" / "results.md").read_text(encoding="utf-8"))
    print(f"report: {(args.out / 'experiment' / 'report.html').resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
