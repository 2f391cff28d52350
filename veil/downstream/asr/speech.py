"""ASR evaluation stage: speech for the test sentences — espeak-ng synthesis, or the user's audio (manifest / folder).

Synthesis rotates through the configured voices and speaking rates (utterance i gets voice
``i % len(voices)`` and rate ``(i // len(voices)) % len(rates)``) and optionally mixes in white
noise at a set signal-to-noise ratio, seeded per utterance, so the same settings give the same audio.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from veil.errors import VeilError

AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".m4a")


@dataclass
class Utterance:
    id: str
    audio: Path
    text: str  # the reference: what is said
    corpus_text: str = ""  # the sentence as the corpus writes it (synthesis only)


def espeak_binary() -> str:
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise VeilError("asr.speech: synth needs espeak-ng (make setup installs Debian's espeak-ng; "
                        "or apt-get install espeak-ng), or give recorded speech as asr.speech: MANIFEST.jsonl")
    return exe


def read_wav(path: Path) -> tuple[Any, int]:
    """Mono 16-bit PCM WAV -> (float32 samples in [-1, 1], sample rate)."""
    import numpy as np

    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2:
            raise VeilError(f"{path}: expected 16-bit PCM")
        rate, channels = w.getframerate(), w.getnchannels()
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype("float32") / 32768.0
    if channels > 1:
        x = x.reshape(-1, channels).mean(axis=1)
    return x, rate


def write_wav(path: Path, samples: Any, rate: int) -> None:
    import numpy as np

    pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).round().astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def add_noise(samples: Any, snr_db: float, seed: int | str) -> Any:
    """White Gaussian noise at ``snr_db`` relative to the signal's mean power (seeded: reproducible)."""
    import hashlib

    import numpy as np

    power = float(np.mean(samples.astype("float64") ** 2))
    if power == 0.0:
        return samples
    rng = np.random.default_rng(int(hashlib.sha256(str(seed).encode()).hexdigest()[:12], 16))
    noise = rng.standard_normal(len(samples)) * np.sqrt(power / 10 ** (snr_db / 10))
    return (samples + noise).astype("float32")


def synthesize(items: Sequence[tuple[str, str, str]], out: Path, voices: Sequence[str], rates: Sequence[int],
               noise_snr: float | None = None, seed: int = 0, progress: bool = False) -> list[Utterance]:
    """Speak each ``(id, spoken text, corpus text)`` with espeak-ng into ``out/ID.wav``."""
    from tqdm import tqdm

    exe = espeak_binary()
    out.mkdir(parents=True, exist_ok=True)
    utts = []
    for i, (uid, spoken, corpus_text) in enumerate(tqdm(items, desc="synthesise", disable=not progress, leave=False)):
        voice, rate = voices[i % len(voices)], int(rates[(i // len(voices)) % len(rates)])
        path = out / f"{uid}.wav"
        # the text goes through stdin: a sentence starting with "-" is not an option
        r = subprocess.run([exe, "-v", voice, "-s", str(rate), "-w", str(path), "--stdin"], input=spoken.encode(),
                           capture_output=True)
        if r.returncode != 0 or not path.is_file():
            raise VeilError(f"espeak-ng failed for voice {voice!r}: {r.stderr.decode(errors='replace').strip()}")
        if r.stderr.strip():  # espeak-ng reports an unknown voice on stderr and still exits 0
            raise VeilError(f"espeak-ng, voice {voice!r}: {r.stderr.decode(errors='replace').strip()}")
        if noise_snr is not None:
            x, sr = read_wav(path)
            write_wav(path, add_noise(x, float(noise_snr), f"{seed}:{uid}"), sr)
        utts.append(Utterance(uid, path, spoken, corpus_text))
    return utts


def read_manifest(path: Path) -> list[Utterance]:
    """JSONL of ``{"audio": PATH, "text": REFERENCE}`` (optional ``"id"``); audio paths relative to the file."""
    utts = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise VeilError(f"{path}:{n}: not JSON ({e.msg})") from None
            if not isinstance(rec, dict) or not isinstance(rec.get("audio"), str) or not isinstance(rec.get("text"), str):
                raise VeilError(f"{path}:{n}: a manifest line is {{\"audio\": PATH, \"text\": REFERENCE}}")
            audio = Path(rec["audio"]).expanduser()
            audio = audio if audio.is_absolute() else path.parent / audio
            if not audio.is_file():
                raise VeilError(f"{path}:{n}: audio file {audio} does not exist")
            utts.append(Utterance(str(rec.get("id", n)), audio, " ".join(rec["text"].split())))
    return _checked(utts, path)


def read_folder(folder: Path) -> list[Utterance]:
    """``NAME.wav`` (or .flac, .mp3, ...) with its reference ``NAME.txt`` beside it, in name order."""
    utts = []
    for audio in sorted(p for p in folder.iterdir() if p.suffix.lower() in AUDIO_SUFFIXES):
        txt = audio.with_suffix(".txt")
        if not txt.is_file():
            raise VeilError(f"{audio}: no transcript {txt.name} beside it")
        utts.append(Utterance(audio.stem, audio, " ".join(txt.read_text(encoding="utf-8").split())))
    return _checked(utts, folder)


def read_speech(path: Path) -> list[Utterance]:
    if path.is_dir():
        return read_folder(path)
    if path.is_file():
        return read_manifest(path)
    raise VeilError(f"asr.speech: {path} does not exist")


def _checked(utts: list[Utterance], source: Path) -> list[Utterance]:
    if not utts:
        raise VeilError(f"{source}: no utterances")
    from collections import Counter

    dup = sorted(i for i, n in Counter(u.id for u in utts).items() if n > 1)
    if dup:
        raise VeilError(f"{source}: utterance id(s) used twice: {', '.join(dup[:5])}")
    empty = [u.id for u in utts if not u.text]
    if empty:
        raise VeilError(f"{source}: empty reference text for {', '.join(empty[:5])}")
    return utts


def audio_digest(utts: Iterable[Utterance]) -> str:
    """Content hash of the audio files and references (the n-best cache key of user audio)."""
    import hashlib

    h = hashlib.sha256()
    for u in utts:
        h.update(u.id.encode() + b"\0" + u.text.encode() + b"\0")
        h.update(hashlib.sha256(u.audio.read_bytes()).digest())
    return h.hexdigest()[:16]
