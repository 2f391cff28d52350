"""ASR evaluation stage: speech sources — espeak-ng synthesis (with a fake binary here), manifests, folders, noise."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from veil.downstream.asr import speech
from veil.downstream.asr.speech import add_noise, read_folder, read_manifest, read_speech, read_wav, synthesize, write_wav
from veil.errors import VeilError


def tone(seconds: float = 0.2, rate: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype("float32")


def test_wav_round_trip(tmp_path):
    write_wav(tmp_path / "a.wav", tone(), 16000)
    x, rate = read_wav(tmp_path / "a.wav")
    assert rate == 16000 and len(x) == 3200 and np.max(np.abs(x - tone())) < 1e-3


def test_noise_is_mixed_at_the_requested_snr_and_seeded():
    x = tone(1.0)
    noisy = add_noise(x, 10.0, "u1")
    noise = noisy - x
    snr = 10 * np.log10(np.mean(x.astype("float64") ** 2) / np.mean(noise.astype("float64") ** 2))
    assert abs(snr - 10.0) < 0.3
    assert np.array_equal(noisy, add_noise(x, 10.0, "u1")) and not np.array_equal(noisy, add_noise(x, 10.0, "u2"))


def test_manifest_reader(tmp_path):
    write_wav(tmp_path / "a.wav", tone(), 16000)
    (tmp_path / "sub").mkdir()
    write_wav(tmp_path / "sub" / "b.wav", tone(), 16000)
    m = tmp_path / "m.jsonl"
    m.write_text(json.dumps({"audio": "a.wav", "text": " hello  there "}) + "\n\n"
                 + json.dumps({"id": "x", "audio": str(tmp_path / "sub" / "b.wav"), "text": "bye"}) + "\n")
    utts = read_speech(m)
    assert [(u.id, u.audio.name, u.text) for u in utts] == [("1", "a.wav", "hello there"), ("x", "b.wav", "bye")]


@pytest.mark.parametrize("line, message", [
    ("{not json", "not JSON"),
    ('{"audio": "a.wav"}', "audio"),
    ('{"audio": "missing.wav", "text": "x"}', "does not exist"),
    ('{"audio": "a.wav", "text": ""}', "empty reference"),
    ('{"id": "u", "audio": "a.wav", "text": "x"}\n{"id": "u", "audio": "a.wav", "text": "y"}', "used twice: u"),
])
def test_bad_manifests_are_clear_errors(tmp_path, line, message):
    write_wav(tmp_path / "a.wav", tone(), 16000)
    m = tmp_path / "m.jsonl"
    m.write_text(line + "\n")
    with pytest.raises(VeilError, match=message):
        read_manifest(m)


def test_folder_reader_pairs_audio_with_transcripts(tmp_path):
    for name, text in (("b", "second one"), ("a", "first one")):
        write_wav(tmp_path / f"{name}.wav", tone(), 16000)
        (tmp_path / f"{name}.txt").write_text(text + "\n")
    (tmp_path / "notes.md").write_text("ignored")
    assert [(u.id, u.text) for u in read_folder(tmp_path)] == [("a", "first one"), ("b", "second one")]
    write_wav(tmp_path / "c.wav", tone(), 16000)
    with pytest.raises(VeilError, match="no transcript"):
        read_folder(tmp_path)
    with pytest.raises(VeilError, match="does not exist"):
        read_speech(tmp_path / "nowhere")


FAKE_ESPEAK = '''#!{python}
import json, math, struct, sys, wave
args = sys.argv[1:]
text = sys.stdin.read()
with open({log!r}, "a") as f:
    f.write(json.dumps({{"args": args, "text": text}}) + "\\n")
if args[args.index("-v") + 1] == "bad":
    sys.stderr.write("Error: voice does not exist")
    sys.exit(1)
with wave.open(args[args.index("-w") + 1], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / 10))) for i in range(2205)))
'''


@pytest.fixture
def fake_espeak(tmp_path, monkeypatch):
    log = tmp_path / "espeak.log"
    exe = tmp_path / "espeak-ng"
    exe.write_text(FAKE_ESPEAK.format(python=sys.executable, log=str(log)))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(speech, "espeak_binary", lambda: str(exe))
    return log


def test_synthesis_rotates_voices_and_rates_and_adds_noise(tmp_path, fake_espeak):
    items = [(f"s{i}", f"sentence {i}", f"sentence {i}") for i in range(5)]
    utts = synthesize(items, tmp_path / "out", ["v1", "v2"], [150, 200], noise_snr=20, seed=1)
    calls = [json.loads(line) for line in fake_espeak.read_text().splitlines()]
    got = [(c["args"][c["args"].index("-v") + 1], c["args"][c["args"].index("-s") + 1], c["text"]) for c in calls]
    assert got == [("v1", "150", "sentence 0"), ("v2", "150", "sentence 1"), ("v1", "200", "sentence 2"),
                   ("v2", "200", "sentence 3"), ("v1", "150", "sentence 4")]
    assert [u.audio.name for u in utts] == [f"s{i}.wav" for i in range(5)]
    x, rate = read_wav(utts[0].audio)
    assert rate == 22050 and len(x) == 2205
    clean = np.array([np.sin(i / 10) for i in range(2205)]) * 8000 / 32768
    assert 0.001 < np.std(x - clean) < 0.05  # noise at 20 dB below a 0.17-rms signal


def test_synthesis_reports_espeak_errors(tmp_path, fake_espeak):
    with pytest.raises(VeilError, match="espeak-ng failed for voice 'bad'"):
        synthesize([("s0", "hello", "hello")], tmp_path / "out", ["bad"], [150])


def test_missing_espeak_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(speech.shutil, "which", lambda name: None)
    with pytest.raises(VeilError, match="espeak-ng"):
        speech.espeak_binary()
