"""ASR evaluation stage: speech for the test sentences, a recogniser's n-best lists, LM rescoring, word error rate.

The paper's second downstream task (its Table 6): every adapted LM is fused into an ASR system
and judged by the word error rate it gives. Data flow: :mod:`~veil.downstream.asr.speech` (synthesised or the
user's audio) -> :mod:`~veil.downstream.asr.recognise` (Whisper n-best lists) -> :mod:`~veil.downstream.asr.rescore`
(``log p_asr + lambda * log p_LM + beta * words``, WER) -> :mod:`~veil.downstream.asr.stage` (the experiment stage).
"""
