"""Audit stage, CLI: ``veil audit ppmlm CORPUS`` — fine-tune a masked LM per method, then audit utility, privacy, MIA.

For each method (mlm, mlma, dppmlm, ippmlm, ppmlm, dp; ``base`` = no fine-tuning) a fresh copy of
the masked LM is fine-tuned on the members' text and probed on members' and non-members' text.
Writes under ``--out``: ``results.json`` (everything), ``table.csv`` / ``table.md`` (PPMLM Table 2's
layout plus AUC, utility and privacy), ``roc.png``, ``privacy_utility.png``, ``regurgitation.png``,
and per method ``methods/NAME.json``, ``NAME.scores.csv`` (MIA score per person) and
``NAME.regurgitation.csv``. A finished method is not re-run when the same command is repeated.
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

from veil.audit.ppmlm.methods import method_label
from veil.errors import VeilError
from veil.io.tables import csv_text

log = logging.getLogger(__name__)



def add_arguments(p: argparse.ArgumentParser) -> None:
    # every default is the dataclass's own (veil.audit.ppmlm, veil.models.minilm): one place to change it
    from veil.audit.ppmlm.audit import AuditConfig
    from veil.audit.ppmlm.methods import DEFAULT_METHODS, TrainConfig
    from veil.models.minilm import WarmupConfig

    p.add_argument("corpus", metavar="CORPUS", help="corpus path (Switchboard: the folder with train/ and speakers/)")
    p.add_argument("--format", default="switchboard", help="corpus format (a registered reader; default switchboard)")
    from veil.cli.common import add_list

    add_list(p, "--methods", DEFAULT_METHODS, metavar="METHOD", help="methods to run (base = no fine-tuning)")
    p.add_argument("--model", default=None,
                   help="masked LM name or path (default: the packaged all-MiniLM-L6-v2 encoder with a warmed-up MLM head)")
    p.add_argument("-o", "--output", "--out", dest="out", required=True, help="output folder for tables, plots and per-method results")
    p.add_argument("--json", action="store_true", help="print {method: {utility, privacy, auc, tpr_at_fpr}} as JSON")
    g = p.add_argument_group("persons and identifiers")
    g.add_argument("--persons", type=int, default=None, help="sample this many persons (default: all)")
    g.add_argument("--member-share", type=float, default=AuditConfig.member_share,
                   help="share of persons fine-tuned on (default %(default)s)")
    g.add_argument("--max-words-per-person", type=int, default=AuditConfig.max_words_per_person,
                   help="cap each person's text (first documents)")
    g.add_argument("--k", type=int, default=AuditConfig.k,
                   help="indirect identifier: used by fewer than k persons (default %(default)s)")
    g.add_argument("--max-n", type=int, default=AuditConfig.max_n,
                   help="indirect identifiers up to n-grams (default %(default)s)")
    add_list(g, "--direct-masker", AuditConfig.direct_maskers, help="maskers that find direct identifiers")
    g.add_argument("--seed", type=int, default=AuditConfig.seed, help="seed of the person split, masking and training")
    w = p.add_argument_group("MLM head warm-up of the default MiniLM model (ignored with --model)")
    w.add_argument("--warmup-steps", type=int, default=None,
                   help=f"generic MLM warm-up steps on Brown before the audit (default {WarmupConfig.steps}; "
                        "each setting is trained once and cached)")
    w.add_argument("--warmup-lr", type=float, default=None,
                   help=f"warm-up peak learning rate (default {WarmupConfig.lr:g})")
    w.add_argument("--warmup-layers", type=int, default=None,
                   help=f"top encoder layers trained in the warm-up (default {WarmupConfig.trainable_layers}; "
                        "0 or less: all)")
    t = p.add_argument_group("fine-tuning")
    t.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    t.add_argument("--batch-size", type=int, default=TrainConfig.batch_size)
    t.add_argument("--max-length", type=int, default=TrainConfig.max_length,
                   help="tokens per sequence (default %(default)s)")
    t.add_argument("--lr", type=float, default=TrainConfig.lr)
    t.add_argument("--mask-share", type=float, default=TrainConfig.mask_share,
                   help="share of eligible words masked per epoch")
    t.add_argument("--trainable-layers", type=int, default=TrainConfig.trainable_layers,
                   help="train only the top N encoder layers + head")
    t.add_argument("--dp-epsilon", type=float, default=TrainConfig.dp_epsilon)
    t.add_argument("--dp-delta", type=float, default=TrainConfig.dp_delta)
    t.add_argument("--dp-max-grad-norm", type=float, default=TrainConfig.dp_max_grad_norm)
    t.add_argument("--dp-grad-sample-mode", default=TrainConfig.dp_grad_sample_mode,
                   choices=["hooks", "functorch", "ew", "ghost"],
                   help="how Opacus computes per-sample gradients (default %(default)s)")
    t.add_argument("--save-models", action="store_true", help="save each fine-tuned model under OUT/models/NAME")


def _atomic_write(path: Path, text: str | bytes) -> None:
    from veil.io.atomic import write_bytes_atomic

    write_bytes_atomic(path, text.encode() if isinstance(text, str) else text)


def _save_png(fig: Any, path: Path, written: list[str]) -> None:
    """Write a matplotlib figure atomically as PNG and note its name."""
    from veil.io.tables import figure_png

    fig.tight_layout()
    _atomic_write(path, figure_png(fig, tight=False))
    written.append(path.name)


def public(result: dict) -> dict:
    """The ``--json`` view of one method; a utility that could not be measured (no held-out word) is null."""
    from veil.audit.ppmlm import finite

    return {"utility": finite(result["utility"]), "privacy": result["privacy"], "auc": result["auc"],
            "tpr_at_fpr": result["tpr_at_fpr"]}


def table_rows(results: dict[str, dict]) -> list[dict]:
    rows = []
    for m, r in results.items():
        t = r["tpr_at_fpr"]
        strict = r.get("tpr_at_fpr_strict") or {}
        sig = r.get("mia_signal") or {}
        rows.append({"method": method_label(m), "tpr_at_0.1%_fpr": t["0.001"], "tpr_at_1%_fpr": t["0.01"],
                     "tpr_at_10%_fpr": t["0.1"], "auc": r["auc"], "utility": r["utility"], "privacy": r["privacy"],
                     "privacy_direct": r.get("privacy_direct"), "privacy_indirect": r.get("privacy_indirect"),
                     "strict_tpr_at_0.1%_fpr": strict.get("0.001"), "strict_tpr_at_1%_fpr": strict.get("0.01"),
                     "strict_tpr_at_10%_fpr": strict.get("0.1"),
                     "members_scored": sig.get("members_scored"), "non_members_scored": sig.get("non_members_scored"),
                     "leaked_identifiers": r.get("leaked_identifiers"), "mia_degenerate": sig.get("degenerate")})
    return rows


def table_markdown(results: dict[str, dict], model_label: str, stats: dict | None = None) -> str:
    """PPMLM Table 2's layout (TPR at 0.1%, 1%, 10% FPR) plus AUC, utility, privacy and how many
    persons the attack scored above 0; footnotes say when a row carries no signal at all."""
    from veil.audit.membership import no_signal_note

    pct = lambda x: f"{100 * x:.2f}%"  # noqa: E731
    lines = ["| FPR@ | 0.1% | 1% | 10% | AUC | utility | privacy | persons scored > 0 (members / non-members) |",
             "|---|---|---|---|---|---|---|---|", f"| **{model_label}** | | | | | | | |"]
    notes: list[str] = []
    for m, r in results.items():
        t = r["tpr_at_fpr"]
        sig = r.get("mia_signal") or {}
        note = no_signal_note(sig)
        mark = ""
        if note:
            notes.append(f"{method_label(m)}: {note}; the attack has nothing to rank, so its ROC is the "
                         f"diagonal by construction (TPR = FPR, AUC 0.5) — not a measured chance-level result.")
            mark = f" [{len(notes)}]"
        scored = (f"{sig['members_scored']} / {sig['non_members_scored']}" if "members_scored" in sig else "")
        lines.append(f"| {method_label(m)} | {pct(t['0.001'])} | {pct(t['0.01'])} | {pct(t['0.1'])} | "
                     f"{r['auc']:.3f} | {r['utility']:.3f} | {r['privacy']:.4f} | {scored}{mark} |")
    out = "\n".join(lines) + "\n"
    if notes:
        out += "\n" + "\n".join(f"[{i}] {n}" for i, n in enumerate(notes, 1)) + "\n"
    if stats and stats.get("non_members"):
        n = int(stats["non_members"])
        out += (f"\n{stats.get('members')} members, {n} non-members: the smallest non-zero FPR an attack can "
                f"realise is 1/{n} = {100 / n:.2f}%; TPR at lower FPRs is interpolated from the ROC vertex at "
                f"FPR 0 (the share of members scored above every non-member). Utility: top-1 accuracy on "
                f"masked non-identifier words of non-members' text; privacy: 1 - leaked / "
                f"{stats.get('identifiers')} training identifiers.\n")
    return out


def write_plots(results: dict[str, dict], out: Path) -> list[str]:
    from veil.audit.metrics import regurgitation_by_repetition
    from veil.io.tables import pyplot

    plt = pyplot()

    written = []
    fig, ax = plt.subplots(figsize=(5, 5))
    for m, r in results.items():
        roc = r["_roc"]
        ax.plot([max(x, 1e-4) for x in roc["fpr"]], [max(y, 1e-4) for y in roc["tpr"]],
                label=f"{method_label(m)} (AUC {r['auc']:.3f})"
                      + (" — nobody scored" if (r.get("mia_signal") or {}).get("degenerate") else ""))
    ax.plot([1e-4, 1], [1e-4, 1], "k--", lw=0.8, label="random guess")
    ax.set(xscale="log", yscale="log", xlabel="false-positive rate", ylabel="true-positive rate",
           title="Membership inference (indirect identifiers)")
    ax.legend(fontsize=8)
    _save_png(fig, out / "roc.png", written)

    fig, ax = plt.subplots(figsize=(6, 4))
    markers = "osD^vP*Xh"
    for i, (m, r) in enumerate(results.items()):
        # a legend, not text beside the points: methods with close scores would print over each other
        ax.scatter(r["utility"], r["privacy"], s=45, marker=markers[i % len(markers)], label=method_label(m))
    ax.margins(0.08)
    ax.legend(fontsize=8, loc="best")
    ax.set(xlabel="utility (masked-word accuracy, held-out persons)", ylabel="privacy (share of identifiers never predicted)",
           title="Privacy-utility trade-off")
    ax.grid(alpha=0.3)
    _save_png(fig, out / "privacy_utility.png", written)

    fig, ax = plt.subplots(figsize=(5, 4))
    for m, r in results.items():
        curve = regurgitation_by_repetition(r["_regurgitation"])
        if curve:
            ax.step([c["repetitions"] for c in curve], [c["cumulative_predicted"] for c in curve], where="post",
                    label=method_label(m))
    ax.set(xscale="log", xlabel="repetitions of the identifier in the training text",
           ylabel="cumulative predictions of identifiers", title="Regurgitation")
    ax.legend(fontsize=8)
    _save_png(fig, out / "regurgitation.png", written)
    return written


def write_outputs(results: dict[str, dict], stats: dict, config: dict, out: Path, model_label: str) -> None:
    rows = table_rows(results)
    _atomic_write(out / "table.csv", csv_text(rows, list(rows[0]) if rows else ["method"]))
    _atomic_write(out / "table.md", table_markdown(results, model_label, stats))
    full = {"config": config, "data": stats,
            "methods": {m: {k: v for k, v in r.items() if not k.startswith("_")} for m, r in results.items()}}
    _atomic_write(out / "results.json", json.dumps(full, indent=1, default=str))
    write_plots(results, out)


def run(args: argparse.Namespace) -> int:
    from veil.audit import ppmlm
    from veil.models.minilm import load_masked_lm

    from veil.cli.common import list_value

    from veil.registry import ppmlm_methods

    methods = list_value(args.methods, ppmlm.DEFAULT_METHODS)
    unknown = [m for m in methods if m not in ppmlm_methods]
    if not methods or unknown:
        raise VeilError(f"unknown method(s) {', '.join(unknown) or '(none given)'}; "
                        f"known: {', '.join(ppmlm_methods.names())}")
    if not 0 < args.mask_share < 1:
        raise VeilError(f"--mask-share must lie strictly between 0 and 1, got {args.mask_share}")
    if args.epochs < 1 or args.batch_size < 1:
        raise VeilError("--epochs and --batch-size must be at least 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    audit_cfg = ppmlm.AuditConfig(persons=args.persons, member_share=args.member_share,
                                  max_words_per_person=args.max_words_per_person, k=args.k, max_n=args.max_n,
                                  direct_maskers=tuple(list_value(args.direct_masker, ppmlm.AuditConfig.direct_maskers)),
                                  seed=args.seed)
    train_cfg = ppmlm.TrainConfig(epochs=args.epochs, batch_size=args.batch_size, max_length=args.max_length,
                                  lr=args.lr, mask_share=args.mask_share, seed=args.seed,
                                  trainable_layers=args.trainable_layers, dp_epsilon=args.dp_epsilon,
                                  dp_delta=args.dp_delta, dp_max_grad_norm=args.dp_max_grad_norm,
                                  dp_grad_sample_mode=args.dp_grad_sample_mode)
    warmup = _warmup_config(args)
    from veil.io.corpora import load_corpus

    docs = load_corpus(args.corpus, args.format)
    _, tok = load_masked_lm(args.model, warmup=warmup)
    data = ppmlm.prepare(docs, tok, audit_cfg, train_cfg)
    log.info("data: %s", json.dumps(data.stats))
    config = {"corpus": str(args.corpus), "format": args.format, "model": args.model or "minilm",
              "audit": asdict(audit_cfg), "train": asdict(train_cfg)}
    if warmup is not None:
        config["warmup"] = asdict(warmup)
    from veil.cache import stable_hash

    fp = stable_hash([config, data.stats])
    results: dict[str, dict] = {}
    for m in methods:
        path = out / "methods" / f"{m}.json"
        if path.is_file():
            saved = json.loads(path.read_text())
            if saved.get("fingerprint") == fp:
                log.info("%s: reusing %s", m, path)
                results[m] = saved["result"]
                continue
        log.info("method %s", m)
        try:
            r = ppmlm.run_method(m, data, args.model, tok, audit_cfg, train_cfg,
                                 save_to=(out / "models" / m) if args.save_models else None, warmup=warmup)
        except VeilError:
            raise
        except Exception as e:  # a method that cannot run (DP on an unsupported layer) must not sink the others
            if m != "dp":
                raise
            log.error("dp failed: %s: %s", type(e).__name__, e)
            _atomic_write(out / "methods" / "dp.error.txt", f"{type(e).__name__}: {e}\n")
            continue
        err = out / "methods" / f"{m}.error.txt"
        if err.is_file():
            err.unlink()
        _atomic_write(path, json.dumps({"fingerprint": fp, "result": r}, default=str))
        _atomic_write(out / "methods" / f"{m}.scores.csv",
                      csv_text(r["_scores"], ["person", "member", "score", "indirect_identifiers"]))
        _atomic_write(out / "methods" / f"{m}.regurgitation.csv",
                      csv_text(r["_regurgitation"], ["identifier", "kind", "repetitions", "predicted",
                                                      "predicted_in_place"]))
        results[m] = r
        write_outputs(results, data.stats, config, out, _model_label(args.model, warmup))
    if not results:
        raise VeilError("no method finished")
    write_outputs(results, data.stats, config, out, _model_label(args.model, warmup))
    if args.json:
        print(json.dumps({m: public(r) for m, r in results.items()}, indent=1))
    else:
        print(table_markdown(results, _model_label(args.model, warmup), data.stats))
        print(f"tables and plots under {out}")
    return 0


def _warmup_config(args: argparse.Namespace) -> Any:
    """A WarmupConfig when any --warmup-* option is given (only the default MiniLM uses it), else None."""
    if args.warmup_steps is None and args.warmup_lr is None and args.warmup_layers is None:
        return None
    from dataclasses import replace

    from veil.models.minilm import WarmupConfig

    cfg = WarmupConfig()
    if args.warmup_steps is not None:
        if args.warmup_steps < 1:
            raise VeilError(f"--warmup-steps must be at least 1, got {args.warmup_steps}")
        cfg = replace(cfg, steps=args.warmup_steps)
    if args.warmup_lr is not None:
        cfg = replace(cfg, lr=args.warmup_lr)
    if args.warmup_layers is not None:
        cfg = replace(cfg, trainable_layers=args.warmup_layers if args.warmup_layers > 0 else None)
    return cfg


def _model_label(model: str | None, warmup: Any = None) -> str:
    if model and model != "minilm":
        return str(model)
    from veil.models.minilm import WarmupConfig

    steps = (warmup or WarmupConfig()).steps
    return f"all-MiniLM-L6-v2 + MLM head (warmed up {steps} steps on Brown)"
