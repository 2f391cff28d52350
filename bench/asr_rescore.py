"""What an LM's n-best rescoring buys, from one run's cached n-best lists and Oracle LM, per setting of the two
knobs that need no new recognition: the list's size (its first N hypotheses) and ``asr.lm_context`` (earlier turns).

    python bench/asr_rescore.py experiments/switchboard_smollm2.yaml --nbest CACHE/asr_nbest/KEY \\
        --lm CACHE/lm_finetune/KEY --top 4 --context 0 1 2 [--set asr.dev=80 ...]

For each context it scores the first ``--top`` hypotheses of every list whose hypotheses differ in word errors
(a list where they do not adds the same errors whatever is picked) with the stage's own functions, tunes lambda /
beta on the first ``asr.dev`` lists as the stage does, and prints the test WER beside Whisper alone, the lambda /
beta the test split itself would pick (an upper bound, not a result) and the n-best oracle. Scores are kept in
``--scores`` (one JSON per setting) so a rerun only prints.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def known_scores(folder: Path, stem: str, top: int, c: int, recs, texts, groups, form: str, lead: str) -> dict:
    """(context, text) -> score from the files of shorter lists of the same setting (their first hypotheses)."""
    from veil.downstream.asr.stage import earlier_turns
    from veil.downstream.asr.text import lm_text

    out = {}
    for f in folder.glob(f"{stem}_top*_ctx{c}.json"):
        if int(f.stem.split("_top")[1].split("_")[0]) >= top:
            continue
        for i, scores in json.loads(f.read_text()).items():
            r = recs[int(i)]
            turn = tuple(earlier_turns([r], texts, groups, c)[0]) if c else ()
            for h, v in zip(r["hyps"], scores):
                out[(turn, lead + lm_text(h["text"], form))] = v
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("experiment")
    ap.add_argument("--nbest", type=Path, required=True, help="an asr_nbest stage folder of the run's cache")
    ap.add_argument("--lm", type=Path, required=True, help="the Oracle LM's lm_finetune stage folder")
    ap.add_argument("--top", type=int, default=16)
    ap.add_argument("--context", type=int, nargs="+", default=[0])
    ap.add_argument("--scores", type=Path, default=Path("runs/asr_rescore"))
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE overrides, as for veil experiment run")
    a = ap.parse_args()

    from veil.downstream import lm
    from veil.downstream.asr import rescore
    from veil.downstream.asr.stage import earlier_turns, shared_lead
    from veil.downstream.asr.text import lm_text, normalise
    from veil.experiment.runner import ExperimentRunner
    from veil.experiment.spec import load_spec
    from veil.io.atomic import write_text_atomic
    from veil.textutil import count_words

    spec = load_spec(a.experiment, setters=a.set)
    runner = ExperimentRunner(spec, a.scores, progress=False)
    docs, _ = runner.corpus("test", spec.test)
    texts, groups, form, dev = [d.text for d in docs], [d.group for d in docs], spec.asr.text_form, spec.asr.dev
    with (a.nbest / "nbest.jsonl").open(encoding="utf-8") as f:
        recs = [{**r, "hyps": r["hyps"][:a.top]} for r in map(json.loads, f)]
    lists = []
    for r in recs:
        errs, n = rescore.hypothesis_errors(normalise(r["reference"]), [normalise(h["text"]) for h in r["hyps"]])
        lists.append(rescore.NBest(rescore.acoustic_scores(r["hyps"]),
                                   [count_words(lm_text(h["text"], form)) for h in r["hyps"]], errs, n))
    vary = [i for i, nb in enumerate(lists) if len(set(nb.errors)) > 1]
    dl, tl = lists[:dev], lists[dev:]
    first = rescore.first_best_wer(tl)
    print(f"{len(dl)} dev / {len(tl)} test lists, {a.top}-best: WER without LM {first:.2f} (dev "
          f"{rescore.first_best_wer(dl):.2f}), n-best oracle {rescore.oracle_wer(tl):.2f}; "
          f"{len(vary)} lists differ in errors")
    model = vocab = None
    a.scores.mkdir(parents=True, exist_ok=True)
    for c in a.context:
        out = a.scores / f"{spec.name}_{a.nbest.name}_top{a.top}_ctx{c}.json"
        if not out.exists():
            if model is None:
                model, vocab = lm.load(a.lm)
            t0, sub, lead = time.time(), [recs[i] for i in vary], shared_lead(texts)
            turns = earlier_turns(sub, texts, groups, c) if c else [[]] * len(sub)
            keys = [(tuple(t), lead + lm_text(h["text"], form)) for t, r in zip(turns, sub) for h in r["hyps"]]
            got = known_scores(a.scores, f"{spec.name}_{a.nbest.name}", a.top, c, recs, texts, groups, form, lead)
            uniq = [k for k in dict.fromkeys(keys) if k not in got]  # a shorter list's scores are reused
            got.update(zip(uniq, lm.sentence_logprobs(model, vocab, [t for _, t in uniq], runner.lm,
                                                       [x for x, _ in uniq] if c else None)))
            flat, res = [got[k] for k in keys], {}
            for i, r in zip(vary, sub):
                res[i], flat = flat[:len(r["hyps"])], flat[len(r["hyps"]):]
            write_text_atomic(out, json.dumps(res))
            print(f"  scored {len(uniq)} texts in {time.time() - t0:.0f} s")
        got = {int(k): v for k, v in json.loads(out.read_text()).items()}
        scores = [got.get(i, [0.0] * len(nb.asr)) for i, nb in enumerate(lists)]
        lam, beta, dw = rescore.tune(dl, scores[:dev], spec.asr.lm_weights, spec.asr.word_bonus)
        w = rescore.rescored_wer(tl, scores[dev:], lam, beta)
        ul, ub, uw = rescore.tune(tl, scores[dev:], spec.asr.lm_weights, spec.asr.word_bonus)
        print(f"context {c}: lambda {lam:g}, beta {beta:g} (dev {dw:.2f}) -> test {w:.2f} ({100 * (w - first) / first:+.1f}%);"
              f" tuned on test {uw:.2f} ({100 * (uw - first) / first:+.1f}%, lambda {ul:g}, beta {ub:g})")


if __name__ == "__main__":
    main()
