"""ASR evaluation stage: the experiment's WER rows — speech -> n-best lists (cached once per test set) -> each LM's rescoring.

Called by :class:`veil.experiment.runner.ExperimentRunner` after the perplexity grid when the
experiment file has an ``asr:`` section. Cached stages (see :mod:`veil.cache`):
``asr_speech`` (synthesised audio: sentences, voices, rates, noise, seed), ``asr_nbest`` (speech,
recogniser weights, beam, n-best size) and ``asr_lm`` (one downstream LM's scores of every
hypothesis). The word-error weights lambda and beta are tuned once, on the development split with
the Oracle LM, and then fixed for every method, as in the paper's Table 6.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Sequence

from veil.downstream.asr.settings import ASRSettings
from veil.errors import VeilError
from veil.cache import StageCache, stable_hash
from veil.textutil import count_words

log = logging.getLogger(__name__)

#: the results columns this stage fills (results.csv): WER in percent; the no_lm row also has the n-best oracle
#: ``wer_vs_oracle_lo`` / ``_hi``: the 95% paired-bootstrap interval of the row's WER minus the Oracle LM's, in points
#: (:func:`veil.downstream.asr.rescore.paired_interval`): an interval holding 0 says the test set cannot order the two
COLUMNS = ["wer", "nbest_oracle_wer", "asr_lambda", "asr_beta", "asr_test_utterances", "asr_s", "wer_vs_oracle_lo",
           "wer_vs_oracle_hi"]


def shared_lead(texts: Sequence[str]) -> str:
    """The leading whitespace every text starts with, ``""`` when they differ (PTB's lines all start with a space).

    A downstream LM with a pre-trained tokenizer learns a sentence's first word in the form its
    training lines give it (`` the`` after a PTB line's space, ``the`` elsewhere); hypotheses are
    scored in that form, not the recogniser's.
    """
    leads = {t[:len(t) - len(t.lstrip())] for t in texts}
    return leads.pop() if len(leads) == 1 else ""


def select_sentences(texts: Sequence[str], s: ASRSettings, seed: int) -> list[tuple[str, str, str]]:
    """``(id, spoken text, corpus text)`` of the first ``dev + sentences`` test sentences fit to be spoken."""
    from veil.downstream.asr.text import spoken_text

    out: list[tuple[str, str, str]] = []
    for i, t in enumerate(texts):
        toks = t.split()
        if any(k in toks for k in s.skip_tokens) or not s.min_words <= count_words(t) <= s.max_words:
            continue
        out.append((f"s{i:06d}", spoken_text(t, s.text_form, seed), t))
        if len(out) >= s.dev + s.sentences:
            break
    if len(out) < s.dev + s.sentences:  # a smaller test split than asked for would be reported as if it were
        raise VeilError(f"asr: only {len(out)} of the {len(texts)} test sentences are {s.min_words}-{s.max_words} "
                        f"words long without {', '.join(s.skip_tokens) or 'a skipped token'}, and asr.dev + "
                        f"asr.sentences asks for {s.dev + s.sentences}: lower asr.sentences or raise test.limit")
    return out


def earlier_turns(records: Sequence[dict[str, Any]], texts: Sequence[str], groups: Sequence[Any] | None,
                  n: int) -> list[list[str]]:
    """Per n-best list, the (up to) ``n`` test texts before its sentence in the same conversation (``groups``:
    one per text; None: one stream), oldest first: what the LM reads before a hypothesis with ``asr.lm_context``.
    Synthesised utterances' ids (``sNNNNNN``) are their sentence's index in ``texts``."""
    out = []
    for r in records:
        i = int(r["id"][1:])
        j = i
        while j > 0 and i - j < n and (groups is None or groups[j - 1] == groups[i]):
            j -= 1
        out.append(list(texts[j:i]))
    return out


class ASREvaluation:
    def __init__(self, settings: ASRSettings, cache: StageCache, base: Path, seed: int = 0,
                 lm_settings: Any = None, progress: bool = True, groups: Sequence[Any] | None = None) -> None:
        self.s, self.cache, self.base, self.seed = settings, cache, base, seed
        self.lm_settings, self.progress = lm_settings, progress
        self.groups = groups  # the test texts' conversations (for asr.lm_context); None: one stream
        self._nbest: tuple[list[dict[str, Any]], str, float] | None = None

    # ------------------------------------------------------------------ speech and n-best lists
    def speech(self, test_texts: Sequence[str]) -> tuple[list[Any], str, float]:
        from veil.downstream.asr.speech import Utterance, audio_digest, read_speech, synthesize

        s = self.s
        if s.speech != "synth":
            from veil.io.paths import resolve_path

            utts = read_speech(resolve_path(s.speech, self.base))
            return utts, audio_digest(utts), 0.0
        items = select_sentences(test_texts, s, self.seed)
        if len(items) <= s.dev:
            raise VeilError(f"asr: only {len(items)} test sentence(s) fit to be spoken ({s.min_words}-{s.max_words} "
                            f"words, none of {s.skip_tokens}); asr.dev takes {s.dev} for tuning and leaves none")
        settings = {"items": stable_hash(items), "voices": s.voices, "rates": s.rates, "noise_snr": s.noise_snr,
                    "seed": self.seed}

        def work(tmp: Path) -> dict[str, Any]:
            utts = synthesize(items, tmp / "audio", s.voices, s.rates, s.noise_snr, self.seed, progress=self.progress)
            with (tmp / "utterances.jsonl").open("w", encoding="utf-8") as f:
                for u in utts:
                    f.write(json.dumps({"id": u.id, "audio": f"audio/{u.audio.name}", "text": u.text,
                                        "corpus_text": u.corpus_text}) + "\n")
            return {"utterances": len(utts)}

        d, meta = self.cache.run("asr_speech", stable_hash(settings), settings, work)
        utts = []
        with (d / "utterances.jsonl").open(encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                utts.append(Utterance(r["id"], d / r["audio"], r["text"], r["corpus_text"]))
        return utts, meta["key"], meta["seconds"]

    def nbest(self, test_texts: Sequence[str]) -> tuple[list[dict[str, Any]], str, float]:
        """Per utterance ``{id, reference, hyps}``; recognised once per test set and recogniser (the first
        ``asr.dev`` are the development split)."""
        if self._nbest is not None:
            return self._nbest
        from veil.downstream.asr.recognise import WhisperNBest, default_model_path, load_audio, model_identity
        from veil.io.paths import resolve_path

        s = self.s
        utts, speech_key, speech_s = self.speech(test_texts)
        if len(utts) <= s.dev:
            raise VeilError(f"asr: {len(utts)} utterance(s); asr.dev takes {s.dev} for tuning and leaves none to test")
        utts = utts[:s.dev + s.sentences]
        model = resolve_path(s.model, self.base) if s.model else default_model_path()
        threads = s.threads or getattr(self.lm_settings, "threads", None)
        settings = {"speech": speech_key, "utterances": len(utts), **model_identity(model), "beam": s.beam,
                    "nbest": s.nbest, "compute_type": s.compute_type}

        def work(tmp: Path) -> dict[str, Any]:
            from tqdm import tqdm

            rec = WhisperNBest(model, s.compute_type, threads, s.beam, s.nbest)
            with (tmp / "nbest.jsonl").open("w", encoding="utf-8") as f:
                for i in tqdm(range(0, len(utts), 4), desc="recognise", disable=not self.progress, leave=False):
                    part = utts[i:i + 4]
                    for u, hyps in zip(part, rec.nbest_lists([load_audio(u.audio) for u in part])):
                        f.write(json.dumps({"id": u.id, "reference": u.text, "hyps": hyps},
                                           ensure_ascii=False) + "\n")
            return {"utterances": len(utts), "model": str(model)}

        d, meta = self.cache.run("asr_nbest", stable_hash(settings), settings, work)
        with (d / "nbest.jsonl").open(encoding="utf-8") as f:
            records = [json.loads(line) for line in f]
        self._nbest = (records, meta["key"], meta["seconds"] + speech_s)
        return self._nbest

    # ------------------------------------------------------------------ LM scores and WER
    def lm_scores(self, lm_dir: Path, lm_key: str, records: list[dict[str, Any]], nbest_key: str,
                  lead: str = "", loaded: tuple[Any, Any] | None = None,
                  test_texts: Sequence[str] = ()) -> tuple[list[list[float]], float]:
        """Each hypothesis's ``log p`` under one LM, for ``records`` (all of the n-best lists, or some of
        them: their ids are in the key), in the corpus's form with ``lead`` before it (see :func:`shared_lead`),
        after ``asr.lm_context`` earlier ``test_texts`` of the conversation.
        ``loaded``: the ``(model, vocab)`` that :func:`veil.downstream.lm.load` would give for ``lm_dir``, already
        in memory."""
        from veil.downstream.asr.text import lm_text

        settings = {"lm": lm_key, "nbest": nbest_key, "text_form": self.s.text_form,
                    "context": getattr(self.lm_settings, "context", None), "utterances": stable_hash([r["id"] for r in records]),
                    **({"lead": lead} if lead else {}),
                    # scored in fp32 whatever lm.precision (lists scored under bf16 before are not reused)
                    **({"evaluation": "fp32"} if getattr(self.lm_settings, "precision", "fp32") != "fp32" else {})}
        turns = earlier_turns(records, test_texts, self.groups, self.s.lm_context) if self.s.lm_context else None
        if turns is not None:
            settings["lm_context"] = stable_hash(turns)

        def work(tmp: Path) -> dict[str, Any]:
            from veil.downstream import lm

            model, vocab = loaded or lm.load(lm_dir)
            texts = [lead + lm_text(h["text"], self.s.text_form) for r in records for h in r["hyps"]]
            ctx = [tuple(c) for c, r in zip(turns or [()] * len(records), records) for _ in r["hyps"]]
            # hypotheses that differ only in case or punctuation are one text for the LM: each is scored once
            unique = list(dict.fromkeys(zip(ctx, texts)))
            scores = lm.sentence_logprobs(model, vocab, [t for _, t in unique], self.lm_settings,
                                          [c for c, _ in unique] if turns is not None else None)
            scored = dict(zip(unique, scores))
            flat = [scored[k] for k in zip(ctx, texts)]
            out, k = [], 0
            for r in records:
                out.append(flat[k:k + len(r["hyps"])])
                k += len(r["hyps"])
            (tmp / "scores.json").write_text(json.dumps(out), encoding="utf-8")
            return {"hypotheses": len(texts)}

        d, meta = self.cache.run("asr_lm", stable_hash(settings), settings, work)
        return json.loads((d / "scores.json").read_text(encoding="utf-8")), meta["seconds"]

    def prime(self, lm_key: str, model: Any, vocab: Any, test_texts: Sequence[str], oracle: bool) -> None:
        """Score the n-best lists now with an LM the run has in memory (the model it has just evaluated), so
        :meth:`add_wer` finds the scores in the cache instead of loading the model again: the lists it
        scores with that LM (every list for the Oracle LM, which tunes lambda and beta; the test lists
        for the others), under the same key."""
        records, nbest_key, _ = self.nbest(test_texts)
        if not oracle:
            records = [records[i] for i in self._split(len(records))[1]]
        self.lm_scores(Path(lm_key), lm_key, records, nbest_key, shared_lead(test_texts), loaded=(model, vocab),
                       test_texts=test_texts)

    def _split(self, n: int) -> tuple[list[int], list[int]]:
        """(dev, test) indices of ``n`` n-best lists: this run's ``asr.dev`` first (the n-best lists' key holds
        only dev + sentences)."""
        return list(range(min(self.s.dev, n))), list(range(self.s.dev, n))

    def add_wer(self, rows: list[dict[str, Any]], test_texts: Sequence[str], cache_root: Path,
                oracle: str) -> dict[str, Any]:
        """Give every row with an ``lm_dir`` its ``wer``; return the ``no_lm`` row (recogniser alone).

        ``lm_dir`` and ``oracle`` name models relative to ``cache_root`` (``lm_finetune/KEY``); the Oracle
        LM tunes lambda and beta (the runner adapts it even when the run has no Oracle row).
        """
        from veil.downstream.asr import rescore
        from veil.downstream.asr.text import lm_text, normalise

        records, nbest_key, nbest_s = self.nbest(test_texts)
        lists = []
        for r in records:
            errs, ref_words = rescore.hypothesis_errors(normalise(r["reference"]), [normalise(h["text"]) for h in r["hyps"]])
            lists.append(rescore.NBest(rescore.acoustic_scores(r["hyps"]),
                                       [count_words(lm_text(h["text"], self.s.text_form)) for h in r["hyps"]],
                                       errs, ref_words))
        dev, test = self._split(len(records))
        dev_lists, test_lists = [lists[i] for i in dev], [lists[i] for i in test]
        lead = shared_lead(test_texts)
        # the Oracle LM scores every list (it tunes lambda and beta on dev); the other LMs only the test lists
        oscores, _ = self.lm_scores(cache_root / oracle, oracle, records, nbest_key, lead, test_texts=test_texts)
        test_records = [records[i] for i in test]
        lam, beta, dev_wer = rescore.tune(dev_lists, [oscores[i] for i in dev], self.s.lm_weights, self.s.word_bonus)
        log.info("asr: lambda %.2f, beta %.2f tuned on %d dev utterances with the Oracle LM (dev WER %.2f%%)",
                 lam, beta, len(dev), dev_wer)
        fixed = {"asr_lambda": lam, "asr_beta": beta, "asr_test_utterances": len(test), "asr_dev_utterances": len(dev)}
        oracle_picks = rescore.picks_of(test_lists, [oscores[i] for i in test], lam, beta)

        def versus_oracle(picks: list[int]) -> dict[str, float]:
            lo, hi = rescore.paired_interval(test_lists, picks, oracle_picks, seed=self.seed)
            return {"wer_vs_oracle_lo": round(lo, 3), "wer_vs_oracle_hi": round(hi, 3)}

        for row in rows:
            if not row.get("lm_dir"):
                continue
            if row["lm_dir"] == oracle:
                picks, secs = oracle_picks, 0.0
            else:
                scores, secs = self.lm_scores(cache_root / row["lm_dir"], row["lm_dir"], test_records, nbest_key, lead,
                                              test_texts=test_texts)
                picks = rescore.picks_of(test_lists, scores, lam, beta)
            row.update(fixed, wer=rescore.wer(test_lists, picks), asr_s=secs, **versus_oracle(picks))
            log.info("WER %s/%s: %.2f%%", row["technique"] or "-", row["method"], row["wer"])
        no_lm = {"technique": "", "method": "no_lm", "perplexity": None, "perplexity_seeds": [], **fixed,
                 "wer": rescore.first_best_wer(test_lists), "nbest_oracle_wer": rescore.oracle_wer(test_lists),
                 "asr_dev_wer": dev_wer, "asr_s": round(nbest_s, 2), **versus_oracle([0] * len(test_lists))}
        log.info("WER without LM %.2f%%, n-best oracle %.2f%%", no_lm["wer"], no_lm["nbest_oracle_wer"])
        return no_lm


def _no_effect_note(no_lm: dict[str, Any]) -> str:
    """What a λ of 0 means, said plainly: every LM row then repeats the recogniser's own first choice."""
    if no_lm.get("asr_lambda") != 0:
        return ""
    dev = no_lm.get("asr_dev_utterances")
    where = f"the {dev} development utterances" if dev is not None else "the development split"
    oracle = no_lm.get("nbest_oracle_wer")
    lists = (f" The n-best lists hold better transcripts ({oracle:.2f}% WER at best) that the LM did not pick."
             if oracle is not None else "")
    return (f" The LM had no effect on this set: λ tuned to 0 on {where} (no weight on the LM lowered their WER "
            "below the recogniser alone), so every LM row repeats the recogniser's first choice and this table "
            f"cannot tell the methods apart; the perplexity table is the measure here.{lists}")


def _interval(row: dict[str, Any]) -> str:
    """`` [lo, hi]``: the 95% interval of the row's WER minus the Oracle LM's, "" for the Oracle row or without one."""
    lo, hi = row.get("wer_vs_oracle_lo"), row.get("wer_vs_oracle_hi")
    if row.get("method") == "oracle" or lo is None or hi is None:
        return ""
    return f" [{lo:+.2f}, {hi:+.2f}]"


def _interval_note(rows: Sequence[dict[str, Any]]) -> str:
    if not any(r.get("wer_vs_oracle_lo") is not None for r in rows):
        return ""
    return (" In brackets: the 95% paired-bootstrap interval (over utterances) of the row's WER minus the Oracle "
            "LM's, in points; an interval that holds 0 says these test utterances cannot order the two.")


def wer_markdown(rows: Sequence[dict[str, Any]], methods: Sequence[str], techniques: Sequence[str]) -> str:
    """The paper's Table 6: WER (%) of the recogniser with each method's LM fused in; "" without WER rows."""
    no_lm = next((r for r in rows if r["method"] == "no_lm" and r.get("wer") is not None), None)
    if no_lm is None:
        return ""
    cell = {(r["technique"], r["method"]): r for r in rows if r.get("wer") is not None}
    lines = [f"Word error rate (%) on {no_lm.get('asr_test_utterances', '?')} test utterances, the n-best list "
             f"rescored with log p_asr + λ·log p_LM + β·words; λ = {no_lm['asr_lambda']:g} and "
             f"β = {no_lm['asr_beta']:g} were tuned once on the development split with the Oracle LM and fixed "
             "for every method." + _no_effect_note(no_lm) + _interval_note(rows), "",
             "| method | " + " | ".join(techniques) + " |", "|---|" + "---|" * len(techniques)]
    for m in ["no_lm"] + [m for m in methods if m != "no_lm"]:
        vals = []
        for t in techniques:
            r = cell.get(("", m)) or cell.get((t, m))
            vals.append("" if r is None else f"{r['wer']:.2f}" + _interval(r))
        if any(vals):
            lines.append(f"| {m} | " + " | ".join(vals) + " |")
    o = no_lm.get("nbest_oracle_wer")
    if o is not None:
        lines.append("| n-best oracle (the best any rescoring could do) | " + " | ".join(f"{o:.2f}" for _ in techniques) + " |")
    return "\n".join(lines) + "\n"
