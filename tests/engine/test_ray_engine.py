"""Ray engine: same records as the local engine (mask and fill), a killed worker, a restarted driver.

One local Ray cluster (2 CPUs) for the module; the corpora are tiny, the filler a 2-layer Llama.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("torch")

from veil.cli import main  # noqa: E402
from veil.engine.ray_engine import init_ray, input_files, read_output, run_stage  # noqa: E402
from veil.engine.stages import MaskStage  # noqa: E402

# the stages below are defined here: Ray's workers cannot import a test module, so they travel by value
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

WORDS = ("call me at 555-123-4567 or mail john.smith@example.com about the order from Dallas "
         "tomorrow please my card 4111 1111 1111 1111 thanks").split()


@pytest.fixture(scope="module")
def cluster():
    init_ray(None, workers=2)  # ray.init(num_cpus=2) on this 2-core machine (retried if Ray starts too slowly)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    import random

    rng = random.Random(0)
    root = tmp_path_factory.mktemp("ray_corpus")
    recs = [{"id": f"d{i:03d}", "text": " ".join(rng.choice(WORDS) for _ in range(10)), "n": i} for i in range(48)]
    one = root / "in.jsonl"
    one.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    shards = root / "shards"
    shards.mkdir()
    for k in range(3):  # the same records as a folder of three shards
        (shards / f"s{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs[k::3]), encoding="utf-8")
    return one, shards


def _by_id(lines):
    return sorted(lines, key=lambda line: json.loads(line)["id"])


def _mask_local(src: Path, out: Path) -> bytes:
    assert main(["mask", str(src), "-o", str(out), "--masker", "dlp", "--placeholder", "numbered",
                 "--no-progress"]) == 0
    return out.read_bytes()


def test_ray_mask_equals_local_file_and_folder(cluster, corpus, tmp_path):
    one, shards = corpus
    local = _mask_local(one, tmp_path / "local.jsonl")
    out = tmp_path / "ray.jsonl"
    assert main(["mask", str(one), "-o", str(out), "--masker", "dlp", "--placeholder", "numbered", "--no-progress",
                 "--engine", "ray", "--workers", "2", "--batch-size", "5", "--shard-size", "7"]) == 0
    assert out.read_bytes() == local  # one file: the same bytes, in input order
    assert not out.with_name(out.name + ".shards").exists()
    folder = tmp_path / "ray_out"
    assert main(["mask", str(shards), "-o", str(folder), "--masker", "dlp", "--placeholder", "numbered",
                 "--no-progress", "--engine", "ray", "--workers", "2", "--shard-size", "10"]) == 0
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["complete"] and manifest["records"] == 48 and len(manifest["shards"]) == 5
    assert _by_id(read_output(folder)) == _by_id(local.decode().splitlines(keepends=True))


def test_engine_options_are_checked(tmp_path, corpus):
    one, _ = corpus
    assert main(["mask", str(one), "-o", str(tmp_path / "x.jsonl"), "--workers", "2"]) == 2  # local engine
    assert main(["mask", str(one), "-o", str(tmp_path / "x.parquet"), "--masker", "dlp", "--engine", "ray",
                 "--limit", "3"]) == 2


class DyingMaskStage(MaskStage):
    """Kills its worker process the first time it sees ``victim`` (a flag file makes it once only)."""

    def __init__(self, make_engine, flag: str, victim: str) -> None:
        super().__init__(make_engine)
        self.flag, self.victim = flag, victim

    def __call__(self, docs):
        if any(d.id == self.victim for d in docs) and not os.path.exists(self.flag):
            Path(self.flag).write_text("killed")
            os._exit(1)  # the actor dies mid-run, as on a lost node
        return super().__call__(docs)


class FailingMaskStage(MaskStage):
    """Raises on ``victim``: the driver's run fails after some shards are finished (a driver crash)."""

    def __init__(self, make_engine, victim: str) -> None:
        super().__init__(make_engine)
        self.victim = victim

    def __call__(self, docs):
        if any(d.id == self.victim for d in docs):
            raise RuntimeError("simulated crash")
        return super().__call__(docs)


def _dlp_engine():
    from veil.mask.engine import MaskingEngine
    from veil.registry import maskers

    return MaskingEngine([maskers.get("dlp")()], style="numbered")


def _read(path):
    from veil.io.formats import read_documents

    return read_documents(path, "jsonl")


def test_killed_worker_is_retried_and_output_is_complete(cluster, corpus, tmp_path):
    one, _ = corpus
    local = _mask_local(one, tmp_path / "local.jsonl")
    flag = tmp_path / "killed.flag"
    out = tmp_path / "ray.jsonl"
    stats = run_stage(DyingMaskStage(_dlp_engine, str(flag), "d030"), input_files(one), _read, out,
                      settings={"t": 1}, workers=2, batch_size=4, shard_size=8)
    assert flag.exists()  # a worker did die
    assert stats["records"] == 48
    assert out.read_bytes() == local


def test_restarted_driver_resumes_from_finished_shards(cluster, corpus, tmp_path):
    one, _ = corpus
    local = _mask_local(one, tmp_path / "local.jsonl")
    out = tmp_path / "ray_out"
    with pytest.raises(Exception, match="simulated crash"):
        run_stage(FailingMaskStage(_dlp_engine, "d040"), input_files(one), _read, out,
                  settings={"t": 2}, workers=1, batch_size=4, shard_size=8)
    finished = json.loads((out / "manifest.json").read_text())["shards"]
    assert 1 <= len(finished) <= 5
    stats = run_stage(MaskStage(_dlp_engine), input_files(one), _read, out, settings={"t": 2}, workers=2,
                      batch_size=4, shard_size=8)
    assert stats["processed_now"] == 48 - sum(s["records"] for s in finished)  # finished shards are kept
    assert "".join(read_output(out)).encode() == local


def test_ray_fill_equals_local(cluster, tmp_path):
    from veil.models.smollm2 import build_tiny_causal_lm

    texts = ["the cat sat on the mat", "we went to the store to buy food", "she said she would call me back"]
    model, tok = build_tiny_causal_lm(texts * 4, vocab_size=300)
    tiny = tmp_path / "tiny"
    model.save_pretrained(tiny)
    tok.save_pretrained(tiny)
    src = tmp_path / "masked.jsonl"
    docs = [{"id": f"m{i}", "text": t.replace(t.split()[i % 4 + 1], "[MASK]", 1)} for i, t in enumerate(texts * 4)]
    src.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    common = ["--filler", "llm", "--model", str(tiny), "--strategy", "topk", "--no-avoid", "--no-progress",
              "--device", "cpu"]
    assert main(["fill", str(src), "-o", str(tmp_path / "local.jsonl"), *common]) == 0
    assert main(["fill", str(src), "-o", str(tmp_path / "ray.jsonl"), *common, "--engine", "ray",
                 "--workers", "2", "--chunk", "3", "--shard-size", "4"]) == 0
    for name in ("{}.jsonl", "{}.jsonl.substitutions.jsonl"):
        assert (tmp_path / name.format("ray")).read_bytes() == (tmp_path / name.format("local")).read_bytes()
