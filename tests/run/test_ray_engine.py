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
from veil.run.ray_executor import init_ray, input_files, read_output, run_stage  # noqa: E402
from veil.run.stages import MaskStage  # noqa: E402

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
    """Raises on ``victim``: the driver's run fails after some shards are finished (a driver crash).

    It raises only once the driver has recorded a finished shard in ``manifest``: Ray Data may report
    the failure before the driver has consumed the earlier batches, which on a loaded machine would
    leave no shard to resume from and make the test depend on timing."""

    def __init__(self, make_engine, victim: str, manifest: str) -> None:
        super().__init__(make_engine)
        self.victim, self.manifest = victim, manifest

    def __call__(self, docs):
        if any(d.id == self.victim for d in docs):
            import time

            deadline = time.time() + 300
            while time.time() < deadline:
                try:
                    if json.loads(Path(self.manifest).read_text())["shards"]:
                        break
                except (OSError, ValueError, KeyError):
                    pass
                time.sleep(0.1)
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
        run_stage(FailingMaskStage(_dlp_engine, "d040", str(out / "manifest.json")), input_files(one), _read, out,
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


# ---------------------------------------------------------------- the Python API's engine="ray"

API_TEXTS = [" ".join(WORDS[i:i + 9]) for i in range(0, 12)] + ["", "nothing to see here"]


def test_api_ray_engine_equals_local_for_one_list_and_stream(cluster):
    import veil

    local = veil.mask(API_TEXTS, ["dlp"])
    on_ray = veil.mask(API_TEXTS, ["dlp"], engine="ray", workers=2, batch_size=3)
    assert [m.text for m in on_ray] == [m.text for m in local]
    assert [m.placeholders for m in on_ray] == [m.placeholders for m in local]
    stream = veil.mask(iter(API_TEXTS), ["dlp"], engine="ray", workers=2, batch_size=4)
    assert not isinstance(stream, list)
    assert [m.text for m in stream] == [m.text for m in local]
    assert veil.mask(API_TEXTS[0], ["dlp"], engine="ray").text == local[0].text
    filled = veil.fill(local, "faker", seed=3)
    assert veil.fill(local, "faker", seed=3, engine="ray", workers=2, batch_size=5) == filled
    assert veil.anonymize(API_TEXTS, ["dlp"], seed=3, engine="ray", workers=2, batch_size=5) == \
        veil.anonymize(API_TEXTS, ["dlp"], seed=3)


def test_api_engine_options_that_cannot_be_honoured_are_errors():
    import veil
    from veil.errors import VeilError
    from veil.mask.dlp import DLPMasker

    with pytest.raises(VeilError, match="engine='ray' only"):
        veil.mask(["x"], ["dlp"], workers=2)
    with pytest.raises(VeilError, match="unknown engine"):
        veil.mask(["x"], ["dlp"], engine="spark")
    with pytest.raises(VeilError, match="by name"):
        veil.mask(["x"], [DLPMasker()], engine="ray")
    with pytest.raises(VeilError, match="at least 1"):
        veil.fill(["[MASK]"], "faker", engine="ray", workers=0)


class DyingDoubler:
    """Doubles numbers; kills its actor's process the first time it sees 13 (a flag file makes it once only)."""

    def __init__(self, flag: str) -> None:
        self.flag = flag

    def __call__(self, items):
        if 13 in items and not os.path.exists(self.flag):
            Path(self.flag).write_text("killed")
            os._exit(1)
        return [2 * x for x in items]


def test_map_batches_ordered_survives_a_killed_actor_and_keeps_order(cluster, tmp_path):
    from functools import partial

    from veil.run.ray_executor import map_batches_ordered

    flag = tmp_path / "killed.flag"
    out = list(map_batches_ordered(partial(DyingDoubler, str(flag)), iter(range(40)), workers=2, batch_size=3))
    assert flag.exists()
    assert out == [2 * x for x in range(40)]


def test_experiment_mask_stage_on_ray_equals_local(cluster, tmp_path):
    """``veil experiment run --engine ray`` runs the mask stage on Ray actors too: same masked corpus, same share."""
    from veil.experiment.runner import ExperimentRunner
    from veil.experiment.spec import parse_spec
    from veil.types import Document

    (tmp_path / "t.txt").write_text("x\n")
    raw = {"name": "t", "train": {"path": "t.txt"}, "test": {"path": "t.txt"}, "techniques": ["dlp"],
           "baselines": ["oracle", "baseline0"], "methods": []}
    docs = [Document(f"d{i}", t) for i, t in enumerate(API_TEXTS * 3)]
    out = {}
    for engine, opts in (("local", {}), ("ray", {"workers": 2})):
        spec = parse_spec({**raw, "cache": str(tmp_path / f"cache-{engine}")}, tmp_path / "exp.yaml")
        runner = ExperimentRunner(spec, tmp_path / engine, progress=False, engine=engine, engine_options=opts)
        d, meta = runner.mask("dlp", {}, docs, "h")
        out[engine] = ((d / "masked.jsonl").read_bytes(), meta["info"]["masked_share"], meta["info"]["words"])
    assert out["ray"] == out["local"]
    assert out["local"][1] > 0
