"""Train stage: adapt the neural detector to a user's corpus from a human review of some of its documents.

``veil adapt REVIEWED -o DIR`` (:mod:`veil.cli.adapt`) starts from a saved detector (the shipped one by
default), fine-tunes it on the reviewed documents and writes a detector folder that ``--set
neural_tagger.model=DIR`` loads. What the reviewer said becomes word-piece labels
(:func:`reviewed_examples`): a kept or missed span its type, a rejected mask ``O``, an OPTIONAL mention (a
public name: may be masked or not) no loss either way; the terms a reviewer added (``--add-terms``) are
labelled wherever they occur, an excluded term (``--exclude``) is ``O`` wherever it was masked alone.

A user has their files and what ships with veil, nothing else, so what keeps the model from forgetting is
made of those (:func:`adapt`): every batch is half reviewed windows; the other half is generated call-centre
dialogues (:mod:`veil.mask.neural.dialogues`, labelled by construction) and sentences of the Brown corpus that
ships with veil (``veil/data/generic``), on which the model is held to the base model's own readings
(distillation: the KL divergence from the base model's label distribution per word piece). An L2 pull towards
the starting weights (``anchor``, L2-SP) is there but off: on the ordering dialogues it cost most of what the
review taught and kept little of what real calls lost (docs/adapt.md).

A share of the reviewed documents (whole groups, ``holdout``) is kept out of training and the per-type
thresholds are chosen again on it (:func:`recalibrate`), starting from the base detector's and moving only
where the held-out documents say it pays.

The folder's ``detector.json`` records what it was adapted on (``adapted``: the review file's sha256,
document and span counts, the added and excluded terms, the base detector's path, weights hash and veil
version, seed, steps, learning rate and seconds).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from veil.errors import VeilError
from veil.mask.gold import TO_MASK, GoldDocument
from veil.mask.neural.data import TYPE_TO_LABEL, TYPES, Example

log = logging.getLogger(__name__)

#: switchboard_pii / review gold types (and veil's masker labels) -> the detector's type; None: no loss
GOLD_TO_TYPE: dict[str, str | None] = {
    "PERSON": "PER", "LOCATION": "LOC", "ORGANIZATION": "ORG", "DATE_TIME": "DATE", "AGE": "AGE",
    "OCCUPATION": "OCC", "DEMOGRAPHIC": "DEM", "MONEY": "MONEY", "EMAIL": "EMAIL", "ADDRESS": "ADDR",
    "MISC": "MISC", "NUMBER": None,  # a phone, an id or a count: the detector has three types for it
    **{label: kind for kind, label in TYPE_TO_LABEL.items()},
    "SPELLED_WORD": "PER", "NON_LATIN_NAME": "PER", "CREDIT_CARD_NUMBER": "ID", "US_SOCIAL_SECURITY_NUMBER": "ID",
    "IP_ADDRESS": "ID", "FACILITY": "LOC", "GPE": "LOC", "NATIONALITY": "DEM", "PRODUCT": "MISC",
}


@dataclass
class AdaptConfig:
    """Every adaptation setting; ``veil adapt`` exposes each as a flag."""

    steps: int = 0  # optimiser steps; 0: from the reviewed data (:func:`auto_steps`)
    batch_size: int = 8  # windows per step
    reviewed_share: float = 0.5  # share of each batch drawn from the reviewed documents (the rest: replay)
    lr: float = 2e-4  # AdamW peak learning rate (as in training)
    warmup: int = 10
    weight_decay: float = 0.0  # the anchor replaces it: decay pulls towards 0, the anchor towards the base
    anchor: float = 0.0  # L2 pull towards the base weights (sum of squared differences, times this); off: see docs
    dialogues: int = 400  # generated call-centre dialogues replayed with their labels
    distil: int = 2000  # sentences of the Brown corpus that ships with veil, replayed with the base model's readings
    distil_weight: float = 1.0  # weight of the distillation loss (KL from the base model's piece distributions)
    asr_share: float = 0.3  # share of training texts shown in the speech-recognition form
    holdout: float = 0.2  # share of reviewed documents (whole groups) kept to recalibrate the thresholds
    interpolate: float = 0.5  # the weights saved: base + interpolate x (adapted - base) (WiSE-FT); 1: the adapted ones
    seed: int = 0
    threads: int = 2


#: passes over the reviewed windows that :func:`auto_steps` aims at, and its bounds
EPOCHS, MIN_STEPS, MAX_STEPS = 12, 60, 300


def auto_steps(reviewed_windows: int, config: AdaptConfig) -> int:
    per_step = max(1, round(config.batch_size * config.reviewed_share))
    return max(MIN_STEPS, min(MAX_STEPS, math.ceil(EPOCHS * reviewed_windows / per_step)))


# --- what the review says, as labels ---------------------------------------------------------
def _occurrences(text: str, term: str) -> Iterator[tuple[int, int]]:
    words = term.split()
    if not words:
        return
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)"
    for m in re.finditer(pattern, text, re.IGNORECASE):
        yield m.start(), m.end()


def apply_terms(text: str, spans: Sequence[tuple[int, int, str]], ignore: Sequence[tuple[int, int]],
                add_terms: Mapping[str, str], exclude: Sequence[str]) -> tuple[list, list]:
    """``(spans, ignore)`` with the reviewer's term lists applied: an added term is labelled (its type mapped by
    :data:`GOLD_TO_TYPE`) wherever it occurs outside every span, an excluded term is ``O`` wherever a span
    is that term alone (a longer span holding it, a name the reviewer kept, stays)."""
    from veil.textutil import normalise_surface

    out, skip = list(spans), list(ignore)
    dropped = {normalise_surface(t) for t in exclude if t.strip()}
    if dropped:
        out = [s for s in out if normalise_surface(text[s[0]:s[1]]) not in dropped]
        for term in exclude:
            for s, e in _occurrences(text, term):  # no longer unsure either: the reviewer said it is not PI
                skip = [(a, b) for a, b in skip if b <= s or a >= e]
    for term, label in add_terms.items():
        kind = GOLD_TO_TYPE.get(label)
        if kind is None:
            continue
        for s, e in _occurrences(text, term):
            if all(e <= a or s >= b for a, b, _ in out):
                out.append((s, e, kind))
                skip = [(a, b) for a, b in skip if b <= s or a >= e]
    return sorted(out), skip


def reviewed_examples(golds: Sequence[GoldDocument], add_terms: Mapping[str, str] | None = None,
                      exclude: Sequence[str] = ()) -> list[Example]:
    """Training examples of reviewed documents: DIRECT and QUASI mentions labelled with their type, OPTIONAL
    mentions and types the detector has no one label for (:data:`GOLD_TO_TYPE`) without loss, the rest ``O``."""
    out = []
    for gd in golds:
        spans, ignore = [], []
        for g in gd.spans:
            kind = GOLD_TO_TYPE.get(g.label)
            if g.identifier_type in (None, "DIRECT", "QUASI") and kind is not None:
                spans.append((g.start, g.end, kind))
            elif g.identifier_type != "NO_MASK":
                ignore.append((g.start, g.end))
        spans, ignore = apply_terms(gd.doc.text, spans, ignore, add_terms or {}, exclude)
        out.append(Example(gd.doc.text, tuple(spans), frozenset(TYPES), "reviewed", tuple(ignore)))
    return out


#: a review is split for recalibration only from this many documents, and only when the held-out part holds this
#: many DIRECT or QUASI mentions: fewer moved a threshold on one or two mentions (DATE from 0.15 to 0.95 on six
#: ordering utterances, costing real calls 0.05 of precision); below it every document is trained on
MIN_HELD_DOCUMENTS, MIN_HELD_MENTIONS = 50, 20


def split_reviewed(golds: Sequence[GoldDocument], holdout: float, seed: int) -> tuple[list, list]:
    """(training documents, held-out documents): whole groups (calls) held out, about ``holdout`` of the documents;
    none held out under :data:`MIN_HELD_DOCUMENTS` documents or when the held-out part would hold fewer than
    :data:`MIN_HELD_MENTIONS` personal mentions (too few to choose a threshold on)."""
    if holdout <= 0 or len(golds) < MIN_HELD_DOCUMENTS:
        return list(golds), []
    groups: dict[str, list[GoldDocument]] = {}
    for gd in golds:
        groups.setdefault(gd.doc.group or gd.doc.id, []).append(gd)
    keys = sorted(groups)
    random.Random(seed).shuffle(keys)
    held: list[GoldDocument] = []
    want = max(1, round(holdout * len(golds)))
    for k in keys:
        if len(held) >= want or len(groups[k]) + len(held) > len(golds) - 5:
            continue
        held += groups[k]
    if sum(sp.identifier_type in TO_MASK for g in held for sp in g.spans) < MIN_HELD_MENTIONS:
        return list(golds), []
    keep = {id(g) for g in held}
    return [g for g in golds if id(g) not in keep], held


# --- training --------------------------------------------------------------------------------
def _mixed(reviewed: Sequence[Any], replay: Sequence[Any], distil: Sequence[Any], config: AdaptConfig,
           rng: random.Random) -> Iterator[tuple[list, list]]:
    """Endless ``(labelled windows, windows to distil)`` batches: ``reviewed_share`` of each from the reviewed
    windows, the rest split between the generated dialogues and the distilled sentences; each pool shuffled once
    per pass."""
    from veil.mask.neural.train import batches

    pools = [p for p in (replay, distil) if p]
    take = max(1, round(config.batch_size * config.reviewed_share)) if pools else config.batch_size
    rest = max(0, config.batch_size - take)
    per = [rest // len(pools) + (i < rest % len(pools)) for i in range(len(pools))] if pools else []
    mine = batches(reviewed, take, rng)
    gens = {id(p): batches(p, n, rng) for p, n in zip(pools, per) if n}
    while True:
        labelled = next(mine) + (next(gens[id(replay)]) if id(replay) in gens else [])
        yield labelled, (next(gens[id(distil)]) if id(distil) in gens else [])


def distil_texts(n: int, seed: int) -> list[str]:
    """``n`` sentences of the Brown corpus that ships with veil (``veil/data/generic``), seeded; the tokenised
    spacing undone where it is plain ("word ," -> "word,")."""
    import gzip

    from veil.models.minilm import BUNDLED_WARMUP_CORPUS

    if n <= 0 or not BUNDLED_WARMUP_CORPUS.is_file():
        return []
    lines = [ln for ln in gzip.decompress(BUNDLED_WARMUP_CORPUS.read_bytes()).decode("utf-8").splitlines()
             if len(ln.split()) >= 6]
    picked = random.Random(seed).sample(lines, min(n, len(lines)))
    return [re.sub(r" ([,.;:!?'])", r"\1", t) for t in picked]


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _base_record(base: Path, meta: Mapping[str, Any]) -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    from veil.mask.neural.saved import PACKAGED_DIR, WEIGHTS_FILE

    try:
        veil_version = version("veil")
    except PackageNotFoundError:
        veil_version = "unknown"
    return {"path": "veil/data/detector (shipped)" if base.resolve() == PACKAGED_DIR.resolve() else str(base),
            "weights_sha256": file_sha256(base / WEIGHTS_FILE), "veil_version": veil_version,
            "adapted_before": bool(meta.get("adapted"))}


def adapt(golds: Sequence[GoldDocument], out_dir: Path, *, base: Path | None = None, config: AdaptConfig | None = None,
          add_terms: Mapping[str, str] | None = None, exclude: Sequence[str] = (),
          source: Mapping[str, Any] | None = None, model: Any = None, progress: bool = True) -> dict[str, Any]:
    """Fine-tune the detector in ``base`` (default: the shipped one) on reviewed documents and save it to
    ``out_dir``; returns the ``adapted`` record written into its ``detector.json``.

    ``model`` (tests): a torch model to start from instead of ``base``'s, with ``base`` still giving the
    thresholds and config it is recorded against.
    """
    import torch

    from veil.mask.neural.saved import META_FILE, PACKAGED_DIR, load, load_tokenizer, save
    from veil.mask.neural.dialogues import generate
    from veil.mask.neural.train import LABELS, collate, encode, in_form, masked_loss, pack
    from veil.training import adamw, matrix_decay_groups, optimise

    config = config or AdaptConfig()
    if not golds:
        raise VeilError("adapt: no reviewed documents")
    if not 0.0 < config.reviewed_share <= 1.0 or not 0.0 <= config.holdout < 1.0:
        raise VeilError("adapt: reviewed_share must be in (0, 1] and holdout in [0, 1)")
    if not 0.0 < config.interpolate <= 1.0:
        raise VeilError("adapt: interpolate must be in (0, 1] (1: the adapted weights; 0.5: halfway from the base)")
    t0 = time.time()
    base = Path(base) if base is not None else PACKAGED_DIR
    base_model, meta = load(base)
    if model is None:
        model = base_model
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    rng = random.Random(config.seed)
    tokenizer = load_tokenizer()
    max_length = int(meta.get("config", {}).get("max_length", 128))
    train_docs, held = split_reviewed(golds, config.holdout, config.seed)
    mine = reviewed_examples(train_docs, add_terms, exclude)
    replay = [Example(t, tuple(s), frozenset(TYPES), "dialogue") for t, s in generate(config.dialogues, config.seed)]
    replay = [apply_terms_example(ex, add_terms or {}, exclude) for ex in replay]
    form = random.Random(config.seed + 1)
    mine = [in_form(ex, "asr") if form.random() < config.asr_share else ex for ex in mine]
    replay = [in_form(ex, "asr") if form.random() < config.asr_share else ex for ex in replay]
    reviewed_windows = pack(encode(mine, tokenizer, max_length), max_length)
    replay_windows = pack(encode(replay, tokenizer, max_length), max_length)
    distilled = [Example(t, (), frozenset(TYPES), "distil") for t in distil_texts(config.distil, config.seed)]
    distil_windows = pack(encode(distilled, tokenizer, max_length), max_length)
    if not reviewed_windows:
        raise VeilError("adapt: the reviewed documents hold no text")
    steps = config.steps or auto_steps(len(reviewed_windows), config)
    log.info("adapting %s on %d reviewed documents (%d held out to recalibrate), %d windows; %d replay and %d "
             "distillation windows; %d steps", base, len(train_docs), len(held), len(reviewed_windows),
             len(replay_windows), len(distil_windows), steps)
    model.get_input_embeddings().weight.requires_grad_(False)
    model.train()
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    params = [p for _, p in named]
    start = [p.detach().clone() for p in params]
    teacher = None
    if distil_windows and config.distil_weight > 0:
        import copy

        teacher = copy.deepcopy(model).eval()  # the starting point, before any step
        for p in teacher.parameters():
            p.requires_grad_(False)
    opt, sched = adamw(matrix_decay_groups(params, config.weight_decay), lr=config.lr, total=steps,
                       warmup=min(config.warmup, steps // 2), warmup_from_one=True)

    def loss_of(windows: tuple[list, list]) -> Any:
        labelled, soft = windows
        batch = collate(labelled, tokenizer.pad_token_id)
        allowed, labels = batch.pop("allowed"), batch.pop("labels")
        loss = masked_loss(model(**batch).logits, labels, allowed)
        if soft and teacher is not None:
            loss = loss + config.distil_weight * _distillation(model, teacher, collate(soft, tokenizer.pad_token_id))
        if config.anchor > 0:
            loss = loss + config.anchor * sum(((p - s) ** 2).sum() for p, s in zip(params, start))
        return loss

    losses = optimise(_mixed(reviewed_windows, replay_windows, distil_windows, config, rng), loss_of, opt, sched, steps=steps,
                      clip_params=params, clip=1.0, desc="adapt", progress=progress)
    model.eval()
    if config.interpolate != 1.0:  # weight-space ensemble of the base and the adapted model (Wortsman et al., 2022)
        import torch

        with torch.no_grad():
            for p, s in zip(params, start):
                p.copy_(s + config.interpolate * (p - s))
    trained = time.time() - t0
    own_embeddings = _has_own_embeddings(base)
    summary = {k: v for k, v in meta.items() if k not in ("bert_config", "embedding_fingerprint", "adapted", "calibration")}
    record = {"file": dict(source or {}), "documents": len(golds), "trained_on": len(train_docs),
              "held_out": len(held), "spans": sum(len(ex.spans) for ex in mine),
              "added_terms": len(add_terms or {}), "excluded_terms": len([t for t in exclude if t.strip()]),
              "replay_dialogues": config.dialogues, "distilled_sentences": len(distilled), "base": _base_record(base, meta), "config": asdict(config),
              "steps": steps, "loss_first": round(losses[0], 4) if losses else None,
              "loss_last": round(sum(losses[-10:]) / max(1, len(losses[-10:])), 4) if losses else None}
    summary["adapted"] = record
    summary["labels"] = list(LABELS)
    out_dir = Path(out_dir)
    save(model, out_dir, summary, with_embeddings=own_embeddings)
    base_thresholds = {k: float(v) for k, v in (meta.get("thresholds") or {}).items()}
    record["calibration"] = recalibrate(out_dir, held, base_thresholds) if held else {"thresholds": base_thresholds,
                                                                                     "documents": 0}
    record["seconds"] = round(time.time() - t0, 1)
    record["training_seconds"] = round(trained, 1)
    saved = json.loads((out_dir / META_FILE).read_text(encoding="utf-8"))
    saved["thresholds"] = record["calibration"]["thresholds"]
    saved["adapted"] = record
    from veil.io.atomic import write_text_atomic

    write_text_atomic(out_dir / META_FILE, json.dumps(saved, indent=1, default=str))
    return record


def _distillation(model: Any, teacher: Any, batch: dict[str, Any]) -> Any:
    """Mean KL divergence, over the text pieces of the batch, from the base model's label distribution to the
    model's: what the shipped model reads in everyday written English, it keeps reading."""
    import torch

    batch.pop("allowed")
    keep = batch.pop("labels") != -100
    with torch.no_grad():
        target = torch.log_softmax(teacher(**batch).logits, -1)[keep]
    log_q = torch.log_softmax(model(**batch).logits, -1)[keep]
    return torch.nn.functional.kl_div(log_q, target, log_target=True, reduction="batchmean")


def apply_terms_example(ex: Example, add_terms: Mapping[str, str], exclude: Sequence[str]) -> Example:
    if not add_terms and not exclude:
        return ex
    spans, ignore = apply_terms(ex.text, ex.spans, ex.ignore, add_terms, exclude)
    return Example(ex.text, tuple(spans), ex.known, ex.source, tuple(ignore))


def _has_own_embeddings(folder: Path) -> bool:
    """Whether the detector saved its word embeddings itself (a config-built test model) rather than taking the
    installed encoder's."""
    from safetensors import safe_open

    from veil.mask.neural.saved import FROZEN, WEIGHTS_FILE

    with safe_open(str(folder / WEIGHTS_FILE), framework="np") as f:
        return FROZEN in f.keys()


# --- thresholds ------------------------------------------------------------------------------
#: the least gain in F1 (on the held-out reviewed documents) for which a threshold moves from the base's: a
#: handful of documents should not move it on noise
MIN_GAIN = 0.005


def recalibrate(folder: Path, held: Sequence[GoldDocument], start: Mapping[str, float], rounds: int = 2) -> dict:
    """Per-type thresholds of the adapted int8 detector chosen on held-out reviewed documents, beside ``dlp`` as in
    the default masking: coordinate ascent from the base detector's thresholds over the training grid, for the
    F1 of word precision and DIRECT-weighted mention recall (``veil.mask.neural.train.calibrate``'s measure); a
    move must gain :data:`MIN_GAIN` and never lose a DIRECT mention."""
    from veil.mask.dlp import DLPMasker
    from veil.mask.evaluate import evaluate_tab
    from veil.mask.neural.tagger import NeuralTaggerMasker, load_detector
    from veil.mask.neural.train import CALIBRATION_DIRECT_WEIGHT, coordinate_ascent
    from veil.mask.placeholders import merge_spans

    load_detector.cache_clear()
    tagger = NeuralTaggerMasker(model=str(folder), precision="int8")
    dlp = DLPMasker()
    texts = [g.doc.text for g in held]
    scored = tagger.score_batch(texts)
    fixed = [dlp.detect(t) for t in texts]
    load_detector.cache_clear()  # the folder is rewritten below: no stale session for this path

    def measure(th: Mapping[str, float]) -> tuple[float, float, float, float]:
        spans = [merge_spans(tagger.decode_scored(t, sc, dict(th)) + f) for t, sc, f in zip(texts, scored, fixed)]
        r = evaluate_tab(held, spans)
        d, q = r["DIRECT"], r["QUASI"]
        w = CALIBRATION_DIRECT_WEIGHT
        hit = w * d["mentions"] * (d["mention_recall"] or 0) + q["mentions"] * (q["mention_recall"] or 0)
        recall = hit / max(1, w * d["mentions"] + q["mentions"])
        p = r["precision"] if r["precision"] is not None else 1.0
        f1 = 2 * p * recall / (p + recall) if p + recall else 0.0
        return f1, p, recall, d["mention_recall"] if d["mention_recall"] is not None else 1.0

    # a threshold moves only where it gains F1 without losing a DIRECT mention
    thresholds, best, first = coordinate_ascent(measure, {k: float(start.get(k, 0.5)) for k in tagger.thresholds},
                                                rounds, lambda new, old: new[0] > old[0] + MIN_GAIN and new[3] >= old[3])
    log.info("recalibrated on %d held-out reviewed documents: precision %.3f -> %.3f, recall %.3f -> %.3f",
             len(held), first[1], best[1], first[2], best[2])
    return {"thresholds": thresholds, "documents": len(held),
            "before": {"precision": round(first[1], 4), "recall": round(first[2], 4)},
            "after": {"precision": round(best[1], 4), "recall": round(best[2], 4)}}
