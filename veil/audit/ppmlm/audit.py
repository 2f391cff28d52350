"""Audit stage, PPMLM: the whole audit: select persons, find identifiers, train each method, probe, score."""

from __future__ import annotations

import logging
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

from veil.audit.metrics import Prediction
from veil.audit.ppmlm.identifiers import direct_words, protected_flags, split_indirect, stop_words
from veil.audit.ppmlm.methods import Chunk, Method, PSEUDONYM, TrainConfig
from veil.registry import ppmlm_methods
from veil.audit.ppmlm.probing import ProbePlan, plan_probes, probe, training_counts
from veil.audit.ppmlm.sequences import encode_documents
from veil.audit.ppmlm.training import train
from veil.errors import VeilError
from veil.types import Document

log = logging.getLogger(__name__)


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
    method = ppmlm_methods.get(name) if name in ppmlm_methods else None
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

    if name not in ppmlm_methods:
        raise VeilError(f"unknown method {name!r}; known: {', '.join(ppmlm_methods.names())}")
    method = ppmlm_methods.get(name)
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
