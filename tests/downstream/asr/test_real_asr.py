"""ASR evaluation stage, real components (slow, opt-in): espeak-ng speech -> Whisper tiny.en n-best lists -> WER."""

from __future__ import annotations

import pytest

from veil.downstream.asr import rescore
from veil.downstream.asr.recognise import WhisperNBest, load_audio
from veil.downstream.asr.speech import synthesize
from veil.downstream.asr.text import normalise, spoken_text

pytestmark = pytest.mark.slow

SENTENCES = ["consumers may want to move their telephones a little closer to the tv set",
             "the new syndicated reality show records viewers ' opinions for possible airing on the next day 's show",
             "two weeks ago viewers started calling a N number for advice on various issues"]


def test_espeak_whisper_nbest_lists(tmp_path):
    items = [(f"s{i}", spoken_text(t, "ptb"), t) for i, t in enumerate(SENTENCES)]
    utts = synthesize(items, tmp_path, ["en-us", "en-gb"], [160], noise_snr=30)
    rec = WhisperNBest(beam=8, nbest=8, threads=1)
    lists = rec.nbest_lists([load_audio(u.audio) for u in utts])
    assert [len(h) for h in lists] == [8, 8, 8]
    for hyps in lists:
        scores = [h["score"] for h in hyps]
        assert scores == sorted(scores, reverse=True) and all(h["logprob"] < 0 for h in hyps)
    nbs = []
    for u, hyps in zip(utts, lists):
        errs, n = rescore.hypothesis_errors(normalise(u.text), [normalise(h["text"]) for h in hyps])
        nbs.append(rescore.NBest([h["logprob"] for h in hyps], [len(h["text"].split()) for h in hyps], errs, n))
    assert rescore.first_best_wer(nbs) < 35.0  # clear synthetic speech: Whisper tiny.en gets most words
    assert rescore.oracle_wer(nbs) <= rescore.first_best_wer(nbs)
