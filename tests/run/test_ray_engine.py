"""Ray executor: same records as the local executor (mask and fill), a killed worker, a restarted driver.

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
from veil.run.corpus import mask_corpus, map_units  # noqa: E402
from veil.run.executors import RayExecutor, init_ray  # noqa: E402
from veil.run.stages import MaskStage  # noqa: E402

# the stages below are defined here: Ray's workers cannot import a test module, so they travel by value
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def read_output(output: Path):
    """The JSONL lines of a ray-engine output, one file or a folder of shards, in shard order."""
    output = Path(output)
    for f in [output] if output.is_file() else sorted(output.glob("part-*.jsonl")):
        with open(f, encoding="utf-8") as fh:
            yield from fh


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
    return one


def _mask_local(src: Path, out: Path) -> bytes:
    assert main(["mask", str(src), "-o", str(out), "--masker", "dlp", "--placeholder", "numbered",
                 "--no-progress"]) == 0
    return out.read_bytes()


def test_ray_mask_equals_local(cluster, corpus, tmp_path):
    local = _mask_local(corpus, tmp_path / "local.jsonl")
    out = tmp_path / "ray.jsonl"
    assert main(["mask", str(corpus), "-o", str(out), "--masker", "dlp", "--placeholder", "numbered", "--no-progress",
                 "--executor", "ray", "--workers", "2", "--batch-size", "5"]) == 0
    assert out.read_bytes() == local  # the same writer: the same bytes, in input order
    assert (tmp_path / "ray.jsonl.veil.json").exists() and not (tmp_path / "ray.jsonl.partial").exists()
    # the same output checks as the local executor: an existing output made otherwise is not replaced
    assert main(["mask", str(corpus), "-o", str(out), "--masker", "dlp", "--placeholder", "typed", "--no-progress",
                 "--engine", "ray", "--workers", "2"]) == 2
    assert main(["mask", str(corpus), "-o", str(corpus), "--masker", "dlp", "--no-progress", "--engine", "ray"]) == 2
    assert out.read_bytes() == local


def test_executor_options_are_checked(tmp_path, corpus):
    assert main(["mask", str(corpus), "-o", str(tmp_path / "x.jsonl"), "--workers", "2"]) == 2  # local executor
    assert main(["mask", str(corpus), "-o", str(tmp_path / "x.jsonl"), "--masker", "dlp", "--engine", "ray",
                 "--workers", "0"]) == 2
    assert not (tmp_path / "x.jsonl").exists()


class DyingMaskStage(MaskStage):
    """Kills its worker process the first time it sees ``victim`` (a flag file makes it once only)."""

    def __init__(self, make_engine, flag: str, victim: str) -> None:
        super().__init__(make_engine)
        self.flag, self.victim = flag, victim

    def __call__(self, batch):
        if any(d.id == self.victim for unit in batch for d in unit) and not os.path.exists(self.flag):
            Path(self.flag).write_text("killed")
            os._exit(1)  # the actor dies mid-run, as on a lost node
        return super().__call__(batch)


class FailingEngine:
    """A masking engine that fails on ``victim``: the driver's run stops after the batches before it are written."""

    def __init__(self, victim: str) -> None:
        self.inner, self.victim = _dlp_engine(), victim
        self.style, self.maskers = self.inner.style, self.inner.maskers

    def detect(self, docs):
        if any(d.id == self.victim for d in docs):
            raise RuntimeError("simulated crash")
        return self.inner.detect(docs)


def _dlp_engine():
    from veil.mask.engine import MaskingEngine
    from veil.registry import maskers

    return MaskingEngine([maskers.get("dlp")()], style="numbered")


def test_killed_worker_is_retried_and_output_is_complete(cluster, corpus, tmp_path):
    from veil.io.formats import read_documents

    flag = tmp_path / "killed.flag"
    docs = list(read_documents(corpus, "jsonl"))
    expected = [u for out in map_units(MaskStage(_dlp_engine), docs, batch_size=4) for u in out.units]
    got = [u for out in map_units(DyingMaskStage(_dlp_engine, str(flag), "d030"), docs,
                                  executor=RayExecutor(2), batch_size=4) for u in out.units]
    assert flag.exists()  # a worker did die
    assert got == expected


def test_restarted_driver_resumes_after_the_written_batches(cluster, corpus, tmp_path):
    from functools import partial

    local = _mask_local(corpus, tmp_path / "local.jsonl")
    out = tmp_path / "ray.jsonl"
    settings = {"maskers": ["dlp"], "style": "numbered"}
    with pytest.raises(Exception, match="simulated crash"):
        mask_corpus(corpus, out, engine=partial(FailingEngine, "d040"), settings=settings, batch_size=4,
                    progress=False, executor=RayExecutor(1))
    progress = json.loads((tmp_path / "ray.jsonl.progress.json").read_text())
    assert 1 <= progress["records"] <= 40
    stats = mask_corpus(corpus, out, engine=_dlp_engine, settings=settings, batch_size=4, progress=False,
                        executor=RayExecutor(2))
    assert stats["masked_now"] == 48 - progress["records"]  # the written batches are kept
    assert out.read_bytes() == local


def test_ray_fill_equals_local(cluster, tmp_path):
    from tests.tiny_models import build_tiny_causal_lm

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
                 "--workers", "2", "--chunk", "3"]) == 0
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

    with pytest.raises(VeilError, match="ray executor only"):
        veil.mask(["x"], ["dlp"], workers=2)
    with pytest.raises(VeilError, match="unknown executor"):
        veil.mask(["x"], ["dlp"], engine="spark")
    with pytest.raises(VeilError, match="by name"):
        veil.mask(["x"], [DLPMasker()], engine="ray")
    with pytest.raises(VeilError, match="at least 1"):
        veil.fill(["[MASK]"], "faker", engine="ray", workers=0)


def test_experiment_mask_stage_on_ray_equals_local(cluster, tmp_path):
    """``veil experiment run --executor ray`` runs the mask stage on Ray actors too: same masked corpus, same share."""
    from veil.experiment.runner import ExperimentRunner
    from veil.experiment.spec import parse_spec
    from veil.types import Document

    (tmp_path / "t.txt").write_text("x\n")
    raw = {"name": "t", "train": {"path": "t.txt"}, "test": {"path": "t.txt"}, "techniques": ["dlp"],
           "baselines": ["oracle", "baseline0"], "methods": []}
    docs = [Document(f"d{i}", t) for i, t in enumerate(API_TEXTS * 3)]
    out = {}
    for engine, executor in (("local", None), ("ray", RayExecutor(2))):
        spec = parse_spec({**raw, "cache": str(tmp_path / f"cache-{engine}")}, tmp_path / "exp.yaml")
        runner = ExperimentRunner(spec, tmp_path / engine, progress=False, executor=executor)
        d, meta = runner.mask("dlp", {}, docs, "h")
        out[engine] = ((d / "masked.jsonl").read_bytes(), meta["info"]["masked_share"], meta["info"]["words"])
    assert out["ray"] == out["local"]
    assert out["local"][1] > 0
