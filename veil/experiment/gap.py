"""Experiment stage: where the Baseline0 - Oracle gap lies, word class by word class (``veil experiment gap``).

The paper's gap recovered is one number per method. To say *why* a method recovers little, this
splits the test set's negative log-likelihood by the kind of word it falls on:

- ``masked-type``: test words the technique would mask (run on the test set with the experiment's
  own masker settings): the words a fill has to stand in for;
- ``kept``: every other word;
- ``other``: end-of-sentence and tokens outside words (punctuation).

Two further splits say what kind of knowledge the gap is made of:

- the masked-type words are split by whether the word (case-folded) occurs anywhere in the
  *original* training text: Oracle can learn those specific words from it, while a method that
  sees only masked text can do so only where the technique left them unmasked (a list-based
  technique masks a word everywhere; a fill may only guess it);
- with ``word_vocab=N``, words (case-folded) outside wordfreq's N most frequent English words are
  set apart, and each method's gap recovered is also given without them: what a word-level LM
  with an N-word vocabulary (the paper's has ~85K) would measure, where such words are one
  unknown-word token for every model (an approximation: it drops their NLL instead of scoring
  ``<unk>``).

The runner (:meth:`veil.experiment.runner.ExperimentRunner.gap`) loads the test set, detects it
through the corpus loop, and hands every fine-tuned model of the experiment (read from the stage
cache through ``results.csv``'s ``lm_dir``) to :func:`class_sums`, once each; this module reports
the NLL per word of each class and the gap recovered within each class, and the share of the whole
Baseline0 - Oracle gap (in total NLL) that each class holds. Tokens are attributed to words by the BPE encoding's character offsets, so the sums equal the perplexity
stage's total NLL exactly (checked).
"""

from __future__ import annotations

import csv
import json
import logging
import math
from pathlib import Path
from typing import Any, Sequence

from veil.errors import VeilError

log = logging.getLogger(__name__)

CLASSES = ("masked-type", "kept", "other")
OTHER = ("other", None, None)  # the label of a token outside words and of <eos>

# A word's label: (class, seen in the original training text, inside the word vocabulary); the
# last two are None where they do not apply (seen: kept words; in vocabulary: no word_vocab).
Label = tuple[str, Any, Any]


def word_labels(texts: Sequence[str], masked_spans: Sequence[Sequence[tuple[int, int]]],
                seen: Any = None, vocabulary: Any = None) -> list[list[Label]]:
    """The label of every word (``WORD_RE``) of every text."""
    from veil.textutil import WORD_RE

    out = []
    for text, spans in zip(texts, masked_spans):
        row = []
        for m in WORD_RE.finditer(text):
            w = m.group().casefold()
            masked = any(s < m.end() and m.start() < e for s, e in spans)
            row.append(("masked-type" if masked else "kept",
                        (w in seen) if masked and seen is not None else None,
                        (w in vocabulary) if vocabulary is not None else None))
        out.append(row)
    return out


def token_labels(vocab: Any, texts: Sequence[str], labels: Sequence[Sequence[Label]]) -> list[Label]:
    """The label of every token of the stream (aligned with ``stream_nll``): its word's, or :data:`OTHER`."""
    from veil.textutil import WORD_RE
    from veil.downstream.lm import CausalLMTokens
    from veil.downstream.tokenizer import BPEVocab

    # the config-built GPT-2's byte-level BPE, or a pre-trained lm.model's own (fast) tokenizer: the offsets of
    # the very tokenisation their streams use
    if isinstance(vocab, (BPEVocab, CausalLMTokens)):
        offsets = vocab.encode_with_offsets(texts)[1]
    else:
        raise VeilError("veil experiment gap needs token offsets: lm.tokenizer: bpe, or a pre-trained lm.model")
    out: list[Label] = []
    for text, offs, lab in zip(texts, offsets, labels):
        words = [(m.start(), m.end()) for m in WORD_RE.finditer(text)]
        j = 0
        for a, b in offs:
            while j < len(words) and words[j][1] <= a:
                j += 1
            inside = j < len(words) and words[j][0] < max(b, a + 1) and a < words[j][1]
            out.append(lab[j] if inside else OTHER)
        out.append(OTHER)  # the <eos> ending the sentence
    return out


def label_word_counts(texts: Sequence[str], labels: Sequence[Sequence[Label]]) -> dict[Label, int]:
    n: dict[Label, int] = {OTHER: len(texts)}  # one end-of-sentence per sentence, as in the perplexity
    for row in labels:
        for lab in row:
            n[lab] = n.get(lab, 0) + 1
    return n


def training_words(docs: Sequence[Any]) -> set[str]:
    """Every word (case-folded) of the original training documents."""
    from veil.textutil import WORD_RE

    return {m.group().casefold() for d in docs for m in WORD_RE.finditer(d.text)}


def word_vocabulary(n: int) -> set[str]:
    """wordfreq's ``n`` most frequent English words, case-folded (a word-level LM's vocabulary)."""
    from wordfreq import top_n_list

    return {w.casefold() for w in top_n_list("en", n)}


def result_rows(res: Path, technique: str) -> list[dict[str, str]]:
    """The rows of a finished run's ``results.csv`` whose model the gap reads: Oracle, pretrained and ``technique``'s."""
    if not res.is_file():
        raise VeilError(f"{res}: no results; run `veil experiment run` first")
    with res.open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r.get("lm_dir") and r["technique"] in ("", technique)]
    if not any(r["method"] == "oracle" for r in rows) or not any(r["method"] == "baseline0" for r in rows):
        raise VeilError(f"{res}: needs oracle and baseline0 rows for {technique} with lm_dir "
                        "(re-run `veil experiment run` with this veil to record them; everything is cached)")
    return rows


def class_sums(row: dict[str, str], losses: Sequence[float], tok_labels: Sequence[Label],
               counts: dict[Label, int]) -> dict[Label, float]:
    """One model's total NLL per label (``losses``: its token losses on the test stream, aligned with
    ``tok_labels``); they must add up to the perplexity ``results.csv`` gives for its ``row``."""
    if len(losses) != len(tok_labels):
        raise VeilError(f"internal: {len(losses)} token losses for {len(tok_labels)} classified tokens")
    sums: dict[Label, float] = {lab: 0.0 for lab in counts}
    for lab, v in zip(tok_labels, losses):
        sums[lab] += v
    ppl = math.exp(sum(sums.values()) / sum(counts.values()))  # words and sentence ends: the perplexity's denominator
    if abs(ppl - float(row["perplexity"])) > 1e-3 * ppl and int(float(row.get("seeds") or 1)) == 1:
        raise VeilError(f"{row['method']}: per-class NLL gives perplexity {ppl:.2f}, results.csv {row['perplexity']}")
    return sums


def gap_table(technique: str, per: dict[str, dict[Label, float]], counts: dict[Label, int],
              word_vocab: int | None = None) -> dict[str, Any]:
    """The per-class NLL and gap recovered of every model (``per``: method -> :func:`class_sums`), and the
    share of the whole Baseline0 - Oracle gap (in total NLL) that each class holds."""
    n_total = sum(counts.values())

    def recovered(b: float, o: float, m: float) -> float | None:
        return (b - m) / (b - o) if abs(b - o) > 1e-9 else None

    groups: dict[str, Any] = {c: (lambda lab, c=c: lab[0] == c) for c in CLASSES}
    groups["masked-type, seen in train"] = lambda lab: lab[0] == "masked-type" and lab[1] is True
    groups["masked-type, not seen in train"] = lambda lab: lab[0] == "masked-type" and lab[1] is False
    if word_vocab:
        groups["in vocabulary"] = lambda lab: lab[2] is not False  # (end-of-sentence and punctuation included)
        groups["outside vocabulary"] = lambda lab: lab[2] is False

    def group_sum(per_label: dict[Label, Any], g: str) -> Any:
        return sum(v for lab, v in per_label.items() if groups[g](lab))

    n_words = {g: group_sum(counts, g) for g in groups}
    o, b0 = per["oracle"], per["baseline0"]
    gap_total = sum(b0.values()) - sum(o.values())
    table = []
    for m, sums in per.items():
        row: dict[str, Any] = {"method": m, "perplexity": math.exp(sum(sums.values()) / n_total)}
        for g in groups:
            row[f"nll_{g}"] = group_sum(sums, g) / max(1, n_words[g])
            row[f"gap_{g}"] = recovered(group_sum(b0, g), group_sum(o, g), group_sum(sums, g))
        row["gap"] = recovered(sum(b0.values()), sum(o.values()), sum(sums.values()))
        table.append(row)
    share = {g: (group_sum(b0, g) - group_sum(o, g)) / gap_total if gap_total else None for g in groups}
    return {"technique": technique, "words": n_words, "gap_share": share, "rows": table, "word_vocab": word_vocab}


def to_markdown(r: dict[str, Any]) -> str:
    w, sh = r["words"], r["gap_share"]

    def pct(x: float | None) -> str:
        return "" if x is None else f"{100 * x:.0f}%"

    lines = [f"### Where the Baseline0 - Oracle gap lies: {r['technique']}", "",
             f"Test words the technique would mask: {w['masked-type']:,} of {w['masked-type'] + w['kept']:,} "
             f"({100 * w['masked-type'] / max(1, w['masked-type'] + w['kept']):.1f}%). Share of the gap (total NLL) "
             f"on them: {pct(sh['masked-type'])}; on the kept words: {pct(sh['kept'])}; on end-of-sentence and "
             f"punctuation: {pct(sh['other'])}.", "",
             "| method | perplexity | NLL/word masked-type | NLL/word kept | NLL other | gap | gap on masked-type | "
             "gap on kept | gap on other |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in r["rows"]:
        lines.append(f"| {x['method']} | {x['perplexity']:.1f} | {x['nll_masked-type']:.3f} | {x['nll_kept']:.3f} | "
                     f"{x['nll_other']:.3f} | {pct(x['gap'])} | {pct(x['gap_masked-type'])} | {pct(x['gap_kept'])} | "
                     f"{pct(x['gap_other'])} |")
    seen, unseen = "masked-type, seen in train", "masked-type, not seen in train"
    if seen in w:
        lines += ["", f"Of the masked-type test words, {w[seen]:,} ({100 * w[seen] / max(1, w['masked-type']):.0f}%) "
                  f"occur in the original training text: Oracle can learn them there, a method trained on masked "
                  f"text only where the technique left them unmasked. They hold {pct(sh[seen])} of the gap, the unseen ones {pct(sh[unseen])}."]
        head = "| method | NLL/word masked seen | NLL/word masked unseen | gap on masked seen | gap on masked unseen |"
        cols = "|---|---:|---:|---:|---:|"
        vocab = r.get("word_vocab")
        if vocab:
            out_v = "outside vocabulary"
            n_all = w["masked-type"] + w["kept"]
            lines[-1] += (f" With a word-level vocabulary of wordfreq's top {vocab:,}, {w[out_v]:,} test words "
                          f"({100 * w[out_v] / max(1, n_all):.1f}%) are outside it; they hold {pct(sh[out_v])} of "
                          "the gap. Last column: the gap recovered without them (each would be one unknown-word "
                          "token for every model).")
            head += " NLL/word outside vocabulary | gap without words outside vocabulary |"
            cols += "---:|---:|"
        lines += ["", head, cols]
        for x in r["rows"]:
            cells = [x["method"], f"{x['nll_' + seen]:.3f}", f"{x['nll_' + unseen]:.3f}", pct(x["gap_" + seen]),
                     pct(x["gap_" + unseen])]
            if vocab:
                cells += [f"{x['nll_outside vocabulary']:.3f}", pct(x["gap_in vocabulary"])]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write(r: dict[str, Any], out: Path) -> Path:
    from veil.io.atomic import write_text_atomic as atomic_write

    p = out / f"gap_by_word_{r['technique']}.md"
    atomic_write(p, to_markdown(r))
    atomic_write(p.with_suffix(".json"), json.dumps(r, indent=1))
    return p
