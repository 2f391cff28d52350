"""Audit stage: privacy-preserving masked-LM fine-tuning (PPMLM §4.2, §5.1) and the probes that audit it.

Fine-tuning methods (the paper's baselines), all with whole-word masking of 15% of the eligible
words of every sequence, re-drawn each epoch:

========  ==========================================================================
mlm       standard MLM: every word may be a target
mlma      MLM on pseudonymised text: direct identifiers replaced by "X" before training
dppmlm    targets never among *direct* identifiers (they stay visible as context)
ippmlm    targets never among *indirect* identifiers
ppmlm     targets never among direct or indirect identifiers (the paper's method)
dp        standard MLM trained with DP-SGD (Opacus; epsilon 8, delta 1e-5, clipping 10)
base      no fine-tuning: the pre-trained model itself, as a reference row
========  ==========================================================================

Identifiers are word-level here, as the paper's "blacklist": a *direct* identifier word is a word
of an entity the tagger found (persons, organisations, places, ...), minus English stop words
("the" of "the United States" identifies nobody); an *indirect* identifier is a word used by fewer
than k persons (``veil.audit.identifiers``). Indirect n-grams (n >= 2), when asked for, are
protected where they occur (every word of an occurrence), since their words alone are common.

A sequence is a run of consecutive documents of one person within one group (a Switchboard
conversation side), packed to at most ``max_length`` tokens, so every training sequence belongs
to exactly one person.
"""

from __future__ import annotations

import logging
import math
import random
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from veil.audit.metrics import Prediction
from veil.errors import VeilError
from veil.textutil import iter_words
from veil.types import Document

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Method:
    """What a fine-tuning method protects and how it trains."""

    name: str
    protect_direct: bool = False  # direct identifier words are never targets
    protect_indirect: bool = False  # indirect identifier words / n-grams are never targets
    pseudonymise: bool = False  # direct identifiers replaced by "X" in the training text (MLMA)
    dp: bool = False  # DP-SGD with Opacus
    train: bool = True  # False: evaluate the pre-trained model as it is


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("mlm"),
    Method("mlma", pseudonymise=True),
    Method("dppmlm", protect_direct=True),
    Method("ippmlm", protect_indirect=True),
    Method("ppmlm", protect_direct=True, protect_indirect=True),
    Method("dp", dp=True),
    Method("base", train=False),
)}
DEFAULT_METHODS = ("mlm", "mlma", "dppmlm", "ippmlm", "ppmlm", "dp")
PSEUDONYM = "X"


@dataclass(frozen=True)
class TrainConfig:
    """Fine-tuning defaults (the paper's where it states them), one screen."""

    epochs: int = 2  # the paper measures after 4..32 epochs; sized down for CPU
    batch_size: int = 16  # the paper uses 8 x 512 tokens; we pack shorter sequences
    max_length: int = 64  # tokens per sequence, [CLS] and [SEP] included
    lr: float = 1e-4  # AdamW, decreasing linearly to 0 (as the paper)
    mask_share: float = 0.15  # share of eligible words masked per sequence and epoch
    seed: int = 0
    trainable_layers: int | None = None  # train only the top N encoder layers + head (None: all)
    dp_epsilon: float = 8.0
    dp_delta: float = 1e-5
    dp_max_grad_norm: float = 10.0
    dp_grad_sample_mode: str = "hooks"  # Opacus per-sample gradients: "hooks", "functorch", "ghost"


@dataclass
class Chunk:
    """One packed training / probing sequence."""

    person: str
    input_ids: list[int]  # with [CLS] ... [SEP]
    word_ids: list[int]  # per token: index into ``words``, -1 for special tokens and punctuation
    words: list[str]  # lower-cased words, in order
    protected: list[bool] = field(default_factory=list)  # per word, for the method being trained

    def word_tokens(self) -> dict[int, list[int]]:
        pos: dict[int, list[int]] = {}
        for i, w in enumerate(self.word_ids):
            if w >= 0:
                pos.setdefault(w, []).append(i)
        return pos


# --- identifiers -------------------------------------------------------------------------------

def stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS  # a word list only; no pipeline is loaded

    return frozenset(w.lower() for w in STOP_WORDS)


def direct_words(direct: Mapping[str, set[str]], stop: Iterable[str] = ()) -> set[str]:
    """The word-level blacklist of direct identifiers: the words of every tagged entity, minus stop words."""
    stop = set(stop)
    out: set[str] = set()
    for strings in direct.values():
        for s in strings:
            out.update(w.lower() for _, _, w in iter_words(s) if w.lower() not in stop)
    return out


def split_indirect(indirect: Mapping[str, set[str]]) -> tuple[set[str], set[tuple[str, ...]]]:
    """Indirect identifiers as (single words, n-grams of >= 2 words as word tuples)."""
    words: set[str] = set()
    grams: set[tuple[str, ...]] = set()
    for strings in indirect.values():
        for s in strings:
            t = tuple(w.lower() for _, _, w in iter_words(s))
            if len(t) == 1:
                words.add(t[0])
            elif t:
                grams.add(t)
    return words, grams


def protected_flags(words: Sequence[str], blacklist: set[str], grams: set[tuple[str, ...]] = frozenset(),
                    max_n: int = 1) -> list[bool]:
    """Per word: is it a blacklisted word, or inside an occurrence of a blacklisted n-gram?"""
    flags = [w in blacklist for w in words]
    if grams:
        for n in range(2, max_n + 1):
            for i in range(len(words) - n + 1):
                if tuple(words[i:i + n]) in grams:
                    for j in range(i, i + n):
                        flags[j] = True
    return flags


def pseudonymise(docs: Iterable[Document], direct: Mapping[str, set[str]], placeholder: str = PSEUDONYM) -> list[Document]:
    """MLMA's training text: each occurrence of a person's direct identifiers replaced by ``placeholder``.

    Matching is case-insensitive on word boundaries, longest string first (as the entity tagger
    propagates a tagged surface through its document).
    """
    patterns: dict[str, re.Pattern | None] = {}
    out = []
    for d in docs:
        person = d.person or ""
        if person not in patterns:
            strings = sorted({s.strip() for s in direct.get(person, ()) if s.strip()}, key=len, reverse=True)
            patterns[person] = (re.compile(r"(?<!\w)(?:" + "|".join(re.escape(s) for s in strings) + r")(?!\w)",
                                           re.IGNORECASE) if strings else None)
        pat = patterns[person]
        text = pat.sub(placeholder, d.text) if pat else d.text
        out.append(Document(d.id, text, d.person, d.group, dict(d.meta)))
    return out


# --- sequences ---------------------------------------------------------------------------------

def encode_documents(docs: Sequence[Document], tok: Any, max_length: int = 64) -> list[Chunk]:
    """Tokenise documents and pack consecutive ones of the same (person, group) into chunks."""
    if max_length < 8:
        raise VeilError(f"max_length must be at least 8 tokens, got {max_length}")
    body = max_length - 2
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        return []
    enc = tok([d.text for d in docs], add_special_tokens=False, return_offsets_mapping=True)
    chunks: list[Chunk] = []
    cur: Chunk | None = None
    cur_key: tuple | None = None

    def flush() -> None:
        nonlocal cur
        if cur is not None and cur.words:
            cur.input_ids = [tok.cls_token_id, *cur.input_ids, tok.sep_token_id]
            cur.word_ids = [-1, *cur.word_ids, -1]
            chunks.append(cur)
        cur = None

    for d, ids, offs in zip(docs, enc["input_ids"], enc["offset_mapping"]):
        spans = list(iter_words(d.text))
        # token -> word index (by the character where the token starts); punctuation -> -1
        tw: list[int] = []
        j = 0
        for (a, b) in offs:
            while j < len(spans) and spans[j][1] <= a:
                j += 1
            tw.append(j if j < len(spans) and spans[j][0] <= a < spans[j][1] and b > a else -1)
        words = [w.lower() for _, _, w in spans]
        # cut the document into pieces of whole words that fit a chunk
        pieces: list[tuple[int, int]] = []  # token ranges
        start = 0
        while start < len(ids):
            end = min(len(ids), start + body)
            if end < len(ids):
                k = end
                while k > start and tw[k] >= 0 and tw[k] == tw[k - 1]:
                    k -= 1  # do not split a word across chunks
                end = k if k > start else end
            pieces.append((start, end))
            start = end
        key = (d.person, d.group)
        for a, b in pieces:
            if cur is None or key != cur_key or len(cur.input_ids) + (b - a) > body:
                flush()
                cur = Chunk(person=d.person or "", input_ids=[], word_ids=[], words=[])
                cur_key = key
            base = len(cur.words)
            local: dict[int, int] = {}
            for t in range(a, b):
                cur.input_ids.append(ids[t])
                w = tw[t]
                if w >= 0:
                    if w not in local:
                        local[w] = base + len(local)
                        cur.words.append(words[w])
                    cur.word_ids.append(local[w])
                else:
                    cur.word_ids.append(-1)
    flush()
    return chunks


def choose_targets(chunk: Chunk, share: float, rng: random.Random, respect_protection: bool = True) -> list[int]:
    """Word indices to mask: ``share`` of the eligible words (at least one if any is eligible)."""
    eligible = [i for i in range(len(chunk.words))
                if not (respect_protection and chunk.protected and chunk.protected[i])]
    if not eligible:
        return []
    k = max(1, round(share * len(eligible)))
    return sorted(rng.sample(eligible, k))


def masked_example(chunk: Chunk, targets: Iterable[int], mask_id: int, pad_id: int,
                   max_length: int) -> tuple[list[int], list[int], list[int]]:
    """(input_ids, attention_mask, labels) padded to ``max_length``: every token of a target word masked."""
    targets = set(targets)
    ids = list(chunk.input_ids)
    labels = [-100] * len(ids)
    for i, w in enumerate(chunk.word_ids):
        if w >= 0 and w in targets:
            labels[i] = ids[i]
            ids[i] = mask_id
    pad = max_length - len(ids)
    if pad < 0:
        raise VeilError(f"sequence of {len(ids)} tokens exceeds max_length {max_length}")
    return ids + [pad_id] * pad, [1] * len(ids) + [0] * pad, labels + [-100] * pad


# --- training ----------------------------------------------------------------------------------

class _MaskingDataset:
    """Fresh whole-word masking at every access, so each epoch draws new targets."""

    def __init__(self, chunks: list[Chunk], tok: Any, cfg: TrainConfig, respect_protection: bool, seed: int):
        self.chunks, self.tok, self.cfg, self.respect = chunks, tok, cfg, respect_protection
        self.rng = random.Random(seed)

    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, i: int) -> Any:
        import torch

        c = self.chunks[i]
        t = choose_targets(c, self.cfg.mask_share, self.rng, self.respect)
        ids, am, lab = masked_example(c, t, self.tok.mask_token_id, self.tok.pad_token_id, self.cfg.max_length)
        return torch.tensor(ids), torch.tensor(am), torch.tensor(lab)


def _freeze_for(model: Any, cfg: TrainConfig, dp: bool) -> None:
    base = getattr(model, model.base_model_prefix)
    if cfg.trainable_layers is not None:
        for p in base.parameters():
            p.requires_grad_(False)
        layers = base.encoder.layer
        for layer in layers[max(0, len(layers) - cfg.trainable_layers):]:
            for p in layer.parameters():
                p.requires_grad_(True)
    if dp:
        # The decoder shares its weight with the input embeddings and its bias with the head's
        # ``bias`` attribute; Opacus computes per-sample gradients module by module and cannot
        # attribute a parameter that two modules own, so the tied vocabulary projection (and the
        # word embeddings it is tied to) stays frozen under DP-SGD.
        model.get_input_embeddings().weight.requires_grad_(False)
        out = model.get_output_embeddings()
        for p in out.parameters():
            p.requires_grad_(False)
        for m in model.modules():
            b = getattr(m, "bias", None)
            if b is not None and b is getattr(out, "bias", None):
                b.requires_grad_(False)


def train(model: Any, tok: Any, chunks: list[Chunk], method: Method, cfg: TrainConfig) -> dict[str, Any]:
    """Fine-tune ``model`` in place; returns training statistics (losses, steps, DP epsilon)."""
    import torch
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    from veil.models.minilm import masked_positions_loss

    torch.manual_seed(cfg.seed)
    respect = method.protect_direct or method.protect_indirect
    usable = [c for c in chunks if choose_targets(c, cfg.mask_share, random.Random(0), respect)]
    if not usable:
        raise VeilError(f"{method.name}: no sequence has a word eligible as a masking target")
    ds = _MaskingDataset(usable, tok, cfg, respect, cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    loader = DataLoader(ds, batch_size=cfg.batch_size, shuffle=True, generator=gen)
    _freeze_for(model, cfg, method.dp)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    stats: dict[str, Any] = {"sequences": len(usable), "trainable_parameters": sum(p.numel() for p in params)}
    engine = None
    # RoBERTa-style models count positions from padding_idx + 1
    position_offset = (model.config.pad_token_id + 1) if model.config.model_type in (
        "roberta", "xlm-roberta", "camembert", "longformer") else 0
    with_token_types = "token_type_ids" in tok.model_input_names
    model.train()
    if method.dp:
        model, opt, loader, engine = make_private(model, opt, loader, cfg)
        # noise and clipping as the DP optimiser holds them (what Opacus really applies)
        stats["dp"] = {"noise_multiplier": float(opt.noise_multiplier), "target_epsilon": cfg.dp_epsilon,
                       "delta": cfg.dp_delta, "max_grad_norm": float(opt.max_grad_norm),
                       "grad_sample_mode": cfg.dp_grad_sample_mode,
                       "unit": "sequence (sample-level DP, not person-level)"}
    steps = cfg.epochs * len(loader)
    sched = get_linear_schedule_with_warmup(opt, 0, max(1, steps))
    losses: list[float] = []
    bar = tqdm(total=steps, desc=f"fine-tune {method.name}", unit="step")
    for _ in range(cfg.epochs):
        for ids, am, lab in loader:
            if ids.shape[0] == 0:  # Poisson sampling can draw an empty batch (p ~ 1e-7 here): skip it
                bar.update(1)
                continue
            width = int(am.sum(1).max())  # drop columns that are padding in every row
            ids, am, lab = ids[:, :width], am[:, :width], lab[:, :width]
            if method.dp:
                loss = per_sample_masked_loss(model, ids, am, lab, position_offset, with_token_types)
            else:
                loss = masked_positions_loss(model, ids, am, lab)
            loss.backward()
            if not method.dp:
                torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            losses.append(float(loss.detach()))
            bar.update(1)
            bar.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
    bar.close()
    if engine is not None:
        stats["dp"]["epsilon_spent"] = float(engine.get_epsilon(cfg.dp_delta))
        model = model._module  # unwrap the GradSampleModule; the weights are shared
    model.eval()
    stats.update(steps=len(losses), loss_first=losses[0] if losses else None,
                 loss_last_20=sum(losses[-20:]) / max(1, len(losses[-20:])))
    stats["model"] = model
    return stats


def per_sample_masked_loss(model: Any, ids: Any, am: Any, labels: Any, position_offset: int = 0,
                           with_token_types: bool = True) -> Any:
    """DP-SGD's loss: each sequence's mean cross-entropy over its masked tokens, averaged over the batch.

    Opacus clips *per-sample* gradients, so every layer must keep the batch dimension: the masked
    positions are gathered into a padded (batch, max masked, hidden) tensor before the vocabulary
    projection (which costs more than the encoder when applied to every position), and position
    and token-type ids are passed with a batch dimension (BERT's defaults are (1, L) buffers, for
    which Opacus would compute per-sample gradients with a batch of 1). Averaging per sequence
    first makes the batch loss a mean of per-sample losses, the reduction Opacus assumes.
    """
    import torch

    from veil.models.minilm import mlm_head

    inner = getattr(model, "_module", model)  # under Opacus: the GradSampleModule's wrapped model
    base = getattr(inner, inner.base_model_prefix)
    pos = torch.arange(ids.shape[1]).expand_as(ids).contiguous() + position_offset
    extra = {"token_type_ids": torch.zeros_like(ids)} if with_token_types else {}
    hidden = base(input_ids=ids, attention_mask=am, position_ids=pos, **extra).last_hidden_state
    sel = labels != -100
    counts = sel.sum(1)
    m = max(1, int(counts.max()))
    order = torch.argsort((~sel).to(torch.int8), dim=1, stable=True)[:, :m]  # masked positions first
    valid = torch.arange(m).expand(ids.shape[0], m) < counts[:, None]
    h = hidden.gather(1, order[..., None].expand(-1, -1, hidden.shape[-1]))
    logits = mlm_head(inner)(h)  # (batch, m, vocab)
    tgt = labels.gather(1, order).masked_fill(~valid, -100)
    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), tgt, ignore_index=-100, reduction="none")
    per_sample = (ce * valid).sum(1) / counts.clamp(min=1)
    return per_sample.mean()


def make_private(model: Any, opt: Any, loader: Any, cfg: TrainConfig) -> tuple[Any, Any, Any, Any]:
    """Wrap model, optimiser and loader for DP-SGD with Opacus, calibrated to (epsilon, delta)."""
    try:
        from opacus import PrivacyEngine
    except ImportError:
        raise VeilError("the dp method needs opacus (pip install 'opacus==1.6.0')") from None
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]ecure RNG.*")
        engine = PrivacyEngine(accountant="rdp")
        model, opt, loader = engine.make_private_with_epsilon(
            module=model, optimizer=opt, data_loader=loader, target_epsilon=cfg.dp_epsilon,
            target_delta=cfg.dp_delta, epochs=cfg.epochs, max_grad_norm=cfg.dp_max_grad_norm,
            grad_sample_mode=cfg.dp_grad_sample_mode, poisson_sampling=True)
    return model, opt, loader, engine


# --- probing -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProbePlan:
    """Which words of one chunk are masked, in rounds of at most ``share`` of its words each."""

    seq: int
    rounds: tuple[tuple[int, ...], ...]
    utility_words: frozenset[int]  # the random non-identifier words among them


def plan_probes(chunks: Sequence[Chunk], probe_words: set[str], share: float, seed: int,
                non_identifier: Sequence[Sequence[bool]] | None = None) -> list[ProbePlan]:
    """Mask every occurrence of a ``probe_words`` word plus ``share`` of the other words, spread
    over rounds so that no round masks more than ``share`` of a sequence's words (the training
    density). ``non_identifier[i][w]`` says which words may be drawn as utility words (default:
    words not in ``probe_words``)."""
    rng = random.Random(seed)
    plans = []
    for i, c in enumerate(chunks):
        n = len(c.words)
        ident = [w in probe_words for w in c.words]
        free = [j for j in range(n) if (non_identifier[i][j] if non_identifier is not None else not ident[j])]
        k = max(1, round(share * len(free))) if free else 0
        util = set(rng.sample(free, k)) if k else set()
        todo = sorted({j for j in range(n) if ident[j]} | util)
        rng.shuffle(todo)
        per = max(1, round(share * n))
        rounds = tuple(tuple(sorted(todo[r:r + per])) for r in range(0, len(todo), per))
        plans.append(ProbePlan(i, rounds, frozenset(util)))
    return plans


def probe(model: Any, tok: Any, chunks: Sequence[Chunk], plans: Sequence[ProbePlan], max_length: int,
          batch_size: int = 64, desc: str = "probe") -> list[Prediction]:
    """Top-1 predictions at every masked word of every round of every plan."""
    import torch
    from tqdm.auto import tqdm

    from veil.models.minilm import mlm_head

    jobs = sorted(((p.seq, r) for p in plans for r in p.rounds), key=lambda j: len(chunks[j[0]].input_ids))
    util = {p.seq: p.utility_words for p in plans}
    base = getattr(model, model.base_model_prefix)
    head = mlm_head(model)
    out: list[Prediction] = []
    model.eval()
    with torch.no_grad():
        for b in tqdm(range(0, len(jobs), batch_size), desc=desc, unit="batch"):
            batch = jobs[b:b + batch_size]
            rows = [masked_example(chunks[s], r, tok.mask_token_id, tok.pad_token_id, max_length) for s, r in batch]
            width = max(sum(r[1]) for r in rows)
            ids = torch.tensor([r[0][:width] for r in rows])
            am = torch.tensor([r[1][:width] for r in rows])
            lab = torch.tensor([r[2][:width] for r in rows])
            hidden = base(input_ids=ids, attention_mask=am).last_hidden_state
            sel = lab != -100
            pred = head(hidden[sel]).argmax(-1).tolist()
            where = sel.nonzero().tolist()
            got: dict[tuple[int, int], list[int]] = {}
            for (bi, ti), pid in zip(where, pred):
                s = batch[bi][0]
                got.setdefault((bi, chunks[s].word_ids[ti]), []).append(pid)
            for (bi, w), pids in got.items():
                s = batch[bi][0]
                c = chunks[s]
                truth_ids = [c.input_ids[t] for t, x in enumerate(c.word_ids) if x == w]
                word = "".join(tok.convert_tokens_to_string(tok.convert_ids_to_tokens(pids)).split()).lower()
                out.append(Prediction(s, w, c.words[w], word, pids == truth_ids,
                                      "utility" if w in util[s] else "identifier"))
    return out


def training_counts(chunks: Iterable[Chunk]) -> Counter:
    return Counter(w for c in chunks for w in c.words)


def config_dict(cfg: TrainConfig) -> dict[str, Any]:
    return asdict(cfg)


def finite(x: float) -> float | None:
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


# --- the audit: select persons, find identifiers, train each method, probe, score ---------------

@dataclass(frozen=True)
class AuditConfig:
    """Which persons and how much of their text; the member / non-member split is seeded."""

    persons: int | None = None  # persons sampled from the corpus (None: all with a person field)
    member_share: float = 0.5  # share of the sampled persons whose text is fine-tuned on
    max_words_per_person: int | None = None  # cap on each person's text (their first documents)
    k: int = 2  # an indirect identifier is used by fewer than k persons
    max_n: int = 1  # indirect identifiers up to n-grams of this many words
    direct_maskers: tuple[str, ...] = ("entity_tagger",)
    seed: int = 0
    probe_batch_size: int = 64


def select_persons(docs: Sequence[Document], cfg: AuditConfig) -> tuple[list[str], list[str], list[Document]]:
    """(members, non_members, documents of both, capped per person), seeded."""
    from veil.textutil import count_words

    persons = sorted({d.person for d in docs if d.person})
    if len(persons) < 2:
        raise VeilError(f"membership inference needs at least 2 persons; the corpus has {len(persons)} "
                        f"(documents need a person field)")
    rng = random.Random(cfg.seed)
    if cfg.persons is not None:
        if cfg.persons < 2:
            raise VeilError(f"--persons must be at least 2, got {cfg.persons}")
        persons = sorted(rng.sample(persons, min(cfg.persons, len(persons))))
    if not 0.0 < cfg.member_share < 1.0:
        raise VeilError(f"member share must lie strictly between 0 and 1, got {cfg.member_share}")
    shuffled = persons[:]
    rng.shuffle(shuffled)
    n_members = min(len(persons) - 1, max(1, round(cfg.member_share * len(persons))))
    members = sorted(shuffled[:n_members])
    chosen = set(persons)
    used: Counter = Counter()
    kept = []
    for d in docs:
        if d.person in chosen and (cfg.max_words_per_person is None or used[d.person] < cfg.max_words_per_person):
            kept.append(d)
            used[d.person] += count_words(d.text)
    return members, sorted(chosen - set(members)), kept


def replace_spans(doc: Document, spans: Sequence[Any], placeholder: str = PSEUDONYM) -> Document:
    """``doc`` with every span's text replaced by ``placeholder`` (MLMA's pseudonymisation)."""
    text, last, parts = doc.text, 0, []
    for s in sorted(spans, key=lambda s: s.start):
        if s.start < last:
            continue
        parts += [text[last:s.start], placeholder]
        last = s.end
    parts.append(text[last:])
    return Document(doc.id, "".join(parts), doc.person, doc.group, dict(doc.meta))


@dataclass
class AuditData:
    """Everything the methods share: the split, the identifiers, the sequences and the probe plans."""

    members: list[str]
    non_members: list[str]
    member_chunks: list[Chunk]
    pseudonymised_chunks: list[Chunk]
    non_member_chunks: list[Chunk]
    direct_train: set[str]  # direct identifier words of the members' text
    indirect_train: set[str]  # indirect identifier words among members (the training graph)
    indirect_train_grams: set[tuple[str, ...]]
    mia_identifiers: dict[str, set[str]]  # per person: indirect words in the population graph
    member_plans: list[ProbePlan]
    non_member_plans: list[ProbePlan]
    stats: dict[str, Any]


def prepare(docs: Sequence[Document], tok: Any, cfg: AuditConfig, train_cfg: TrainConfig,
            direct_spans_fn: Any = None) -> AuditData:
    """Split persons, find identifiers (the blacklist of §4.1), encode and plan the probes."""
    from veil.audit.identifiers import detect_spans, direct_identifiers, indirect_identifiers

    members, non_members, kept = select_persons(docs, cfg)
    member_set = set(members)
    mdocs = [d for d in kept if d.person in member_set]
    ndocs = [d for d in kept if d.person not in member_set]
    log.info("%d members (%d documents), %d non-members (%d documents)", len(members), len(mdocs),
             len(non_members), len(ndocs))
    spans_fn = direct_spans_fn or (lambda ds: detect_spans(ds, cfg.direct_maskers))
    spans: list = []
    from tqdm.auto import tqdm
    for i in tqdm(range(0, len(kept), 2000), desc="direct identifiers", unit="batch"):
        spans.extend(spans_fn(kept[i:i + 2000]))
    direct = direct_identifiers(kept, spans=spans)
    stop = stop_words()
    direct_train = direct_words({p: v for p, v in direct.items() if p in member_set}, stop)
    direct_all = direct_words(direct, stop)
    indirect_train_words, indirect_train_grams = split_indirect(indirect_identifiers(mdocs, cfg.k, cfg.max_n))
    population = indirect_identifiers(kept, cfg.k, 1)
    mia = {p: set(v) for p, v in population.items()}
    member_chunks = encode_documents(mdocs, tok, train_cfg.max_length)
    # pair documents with their spans by position: document ids need not be unique across a corpus
    pseudo_docs = [replace_spans(d, s) for d, s in zip(kept, spans) if d.person in member_set]
    pseudo_chunks = encode_documents(pseudo_docs, tok, train_cfg.max_length)
    non_member_chunks = encode_documents(ndocs, tok, train_cfg.max_length)
    train_ids = direct_train | indirect_train_words
    population_ids = direct_all | {w for v in mia.values() for w in v}
    member_plans = plan_probes(member_chunks, train_ids | {w for p in members for w in mia.get(p, ())},
                               train_cfg.mask_share, cfg.seed)
    non_id = [[w not in population_ids for w in c.words] for c in non_member_chunks]
    non_member_plans = plan_probes(non_member_chunks, population_ids, train_cfg.mask_share, cfg.seed + 1, non_id)
    stats = {"members": len(members), "non_members": len(non_members), "member_documents": len(mdocs),
             "non_member_documents": len(ndocs), "member_sequences": len(member_chunks),
             "non_member_sequences": len(non_member_chunks),
             "member_words": sum(len(c.words) for c in member_chunks),
             "non_member_words": sum(len(c.words) for c in non_member_chunks),
             "direct_identifier_words": len(direct_train), "indirect_identifier_words": len(indirect_train_words),
             "indirect_identifier_ngrams": len(indirect_train_grams),
             "identifiers": len(train_ids), "direct_and_indirect": len(direct_train & indirect_train_words),
             "member_probe_rounds": sum(len(p.rounds) for p in member_plans),
             "non_member_probe_rounds": sum(len(p.rounds) for p in non_member_plans)}
    return AuditData(members, non_members, member_chunks, pseudo_chunks, non_member_chunks, direct_train,
                     indirect_train_words, indirect_train_grams, mia, member_plans, non_member_plans, stats)


def set_protection(chunks: Sequence[Chunk], method: Method, data: AuditData, max_n: int) -> None:
    black: set[str] = set()
    grams: set[tuple[str, ...]] = set()
    if method.protect_direct:
        black |= data.direct_train
    if method.protect_indirect:
        black |= data.indirect_train
        grams = data.indirect_train_grams
    for c in chunks:
        c.protected = protected_flags(c.words, black, grams, max_n) if black or grams else [False] * len(c.words)


def evaluate_method(model: Any, tok: Any, data: AuditData, cfg: AuditConfig, train_cfg: TrainConfig,
                    name: str) -> dict[str, Any]:
    """Probe the members' and non-members' text and compute utility, privacy, regurgitation and the MIA."""
    from veil.audit import membership, metrics

    mpred = probe(model, tok, data.member_chunks, data.member_plans, train_cfg.max_length,
                  cfg.probe_batch_size, desc=f"probe members ({name})")
    npred = probe(model, tok, data.non_member_chunks, data.non_member_plans, train_cfg.max_length,
                  cfg.probe_batch_size, desc=f"probe non-members ({name})")
    kinds = {w: "direct" for w in data.direct_train}
    for w in data.indirect_train:
        kinds[w] = "both" if w in kinds else "indirect"
    # repetitions in the text this method was trained on: MLMA's pseudonymised text has no direct
    # identifiers left (the paper's Figure 5 notes MLMA's low repetition counts for that reason)
    method = METHODS.get(name)
    trained_on = data.pseudonymised_chunks if method is not None and method.pseudonymise else data.member_chunks
    regurg = metrics.regurgitation(mpred, kinds, training_counts(trained_on))
    by_person: dict[str, list[Prediction]] = {}
    for chunks, preds in ((data.member_chunks, mpred), (data.non_member_chunks, npred)):
        for p in preds:
            by_person.setdefault(chunks[p.seq].person, []).append(p)
    persons = data.members + data.non_members
    scores = membership.identifier_scores(by_person, {p: data.mia_identifiers.get(p, set()) for p in persons})
    mia = membership.membership_summary(scores, data.members)
    leaked = metrics.leaked_identifiers(mpred, kinds)
    return {
        "utility": metrics.utility(npred),
        "privacy": metrics.privacy(mpred, kinds),
        "privacy_direct": metrics.privacy(mpred, data.direct_train),
        "privacy_indirect": metrics.privacy(mpred, data.indirect_train),
        "auc": mia["auc"],
        "tpr_at_fpr": mia["tpr_at_fpr"],
        "tpr_at_fpr_strict": mia["tpr_at_fpr_strict"],
        "mia_signal": mia["signal"],
        "leaked_identifiers": len(leaked),
        "identifiers_probed": sum(1 for p in mpred if p.purpose == "identifier"),
        "utility_words": sum(1 for p in npred if p.purpose == "utility"),
        "training_text_accuracy": metrics.utility(mpred),
        "_roc": mia["roc"],
        "_scores": [{"person": p, "member": p in set(data.members), "score": scores[p],
                     "indirect_identifiers": len(data.mia_identifiers.get(p, ()))} for p in persons],
        "_regurgitation": regurg,
    }


def run_method(name: str, data: AuditData, model_name: str | None, tok: Any, cfg: AuditConfig,
               train_cfg: TrainConfig, save_to: Any = None, warmup: Any = None) -> dict[str, Any]:
    """Load a fresh model, fine-tune it with method ``name`` and evaluate it.

    ``warmup``: a ``veil.models.minilm.WarmupConfig`` for the default MiniLM (None: its defaults).
    """
    import time

    from veil.models.minilm import load_masked_lm

    if name not in METHODS:
        raise VeilError(f"unknown method {name!r}; known: {', '.join(METHODS)}")
    method = METHODS[name]
    t0 = time.time()
    model, _ = load_masked_lm(model_name, warmup=warmup)
    train_stats: dict[str, Any] = {}
    if method.train:
        chunks = data.pseudonymised_chunks if method.pseudonymise else data.member_chunks
        set_protection(chunks, method, data, cfg.max_n)
        train_stats = train(model, tok, chunks, method, train_cfg)
        model = train_stats.pop("model")
        if save_to is not None:
            model.save_pretrained(save_to)
            tok.save_pretrained(save_to)
    t1 = time.time()
    result = evaluate_method(model, tok, data, cfg, train_cfg, name)
    result["train"] = train_stats
    result["seconds"] = {"train": round(t1 - t0, 1), "evaluate": round(time.time() - t1, 1)}
    return result
