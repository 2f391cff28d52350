"""``veil fill`` and ``veil finetune`` end to end on a tiny model saved to a folder."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("torch")

from veil.cli import main  # noqa: E402
from veil.errors import InputError, VeilError  # noqa: E402
from veil.io.records import read_filled, read_masked, substitutions_path  # noqa: E402
from veil.run.corpus import fill_corpus  # noqa: E402
from veil.fill.mlm import MLMFiller  # noqa: E402
from veil.mask.placeholders import find_markers, render  # noqa: E402
from veil.types import Document, Span  # noqa: E402

from conftest import fixture_sentences  # noqa: E402

SECRETS = ["paris", "london", "john", "mary", "pasta", "piano"]


def write_masked(path, n=20, style="mask"):
    with open(path, "w", encoding="utf-8") as f:
        for i, s in enumerate(fixture_sentences(n, seed=9)):
            spans = [Span(m.start(), m.end(), "WORD", "allow_list")
                     for m in re.finditer(r"\b(" + "|".join(SECRETS) + r")\b", s)]
            d = render(Document(f"doc{i}", s, person=f"p{i % 3}"), spans, style)
            f.write(json.dumps({"id": d.id, "text": d.text, "placeholders": [p.to_dict() for p in d.placeholders],
                                "style": d.style, "person": d.person, "extra": i}) + "\n")


def read_jsonl(path):
    return [json.loads(x) for x in open(path, encoding="utf-8") if x.strip()]


def test_fill_end_to_end(tiny_mlm, tmp_path):
    _, _, model_dir = tiny_mlm
    src, out = tmp_path / "masked.jsonl", tmp_path / "filled.jsonl"
    write_masked(src)
    rc = main(["fill", str(src), "-o", str(out), "--filler", "mlm", "--model", str(model_dir),
               "--strategy", "topk", "--seed", "3", "--no-avoid", "--no-progress", "--threads", "1"])
    assert rc == 0
    rows = read_jsonl(out)
    masked_rows = read_jsonl(src)
    assert [r["id"] for r in rows] == [r["id"] for r in masked_rows]
    assert all(not find_markers(r["text"]) for r in rows)
    assert rows[0]["person"] == "p0" and rows[0]["extra"] == 0  # other fields carried through
    subs = read_jsonl(substitutions_path(out))
    assert len(subs) == sum(len(r["placeholders"]) for r in masked_rows) > 0
    by_id = {r["id"]: r["text"] for r in rows}
    for s in subs:
        assert set(s) >= {"id", "placeholder", "substitute"}
        assert by_id[s["id"]][s["start"]:s["end"]] == s["substitute"]
    assert not list(tmp_path.glob("*.partial")) and not list(tmp_path.glob("*.progress.json"))


def test_fill_resumes_an_interrupted_run_with_identical_results(tiny_mlm, tmp_path):
    model, tok, _ = tiny_mlm
    src = tmp_path / "masked.jsonl"
    write_masked(src, n=12)
    whole = tmp_path / "whole.jsonl"
    fill_corpus(src, whole, MLMFiller(model_obj=model, tokenizer=tok, strategy="topk", avoid={}), chunk_size=4,
              progress=False)

    class Interrupted(MLMFiller):
        calls = 0

        def fill(self, docs):
            Interrupted.calls += 1
            if Interrupted.calls == 3:
                raise KeyboardInterrupt
            return super().fill(docs)

    out = tmp_path / "resumed.jsonl"
    with pytest.raises(KeyboardInterrupt):
        fill_corpus(src, out, Interrupted(model_obj=model, tokenizer=tok, strategy="topk", avoid={}), chunk_size=4,
                  progress=False)
    assert not out.exists() and (tmp_path / "resumed.jsonl.partial").exists()
    earlier = json.loads((tmp_path / "resumed.jsonl.progress.json").read_text())["state"]["seconds"]
    assert earlier > 0  # the two chunks the interrupted run finished took time
    stats = fill_corpus(src, out, MLMFiller(model_obj=model, tokenizer=tok, strategy="topk", avoid={}), chunk_size=4,
                      progress=False)
    assert stats["filled_now"] == 4  # only the last chunk was filled again
    assert stats["seconds_earlier"] == round(earlier, 2)  # the time reported covers the interrupted run too
    assert out.read_text() == whole.read_text()
    assert substitutions_path(out).read_text() == substitutions_path(whole).read_text()
    # a finished output is not redone
    assert fill_corpus(src, out, MLMFiller(model_obj=model, tokenizer=tok), progress=False)["filled_now"] == 0


def test_fill_refuses_to_resume_with_other_settings(tiny_mlm, tmp_path):
    model, tok, _ = tiny_mlm
    src, out = tmp_path / "m.jsonl", tmp_path / "o.jsonl"
    write_masked(src, n=4)
    with pytest.raises(KeyboardInterrupt):
        fill_corpus(src, out, _raise(KeyboardInterrupt), chunk_size=2, settings={"strategy": "top1"}, progress=False)
    with pytest.raises(VeilError, match="other settings"):
        fill_corpus(src, out, MLMFiller(model_obj=model, tokenizer=tok), settings={"strategy": "topk"}, progress=False)


def _raise(exc):
    class Failing:
        calls = 0

        def fill(self, docs):
            Failing.calls += 1
            if Failing.calls == 2:
                raise exc
            from veil.fill.fallback import fallback_fill
            return [fallback_fill(d) for d in docs]
    return Failing()


def test_bad_input_is_a_located_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "ok"}\n{"id": 2}\n')
    with pytest.raises(InputError, match="bad.jsonl:2"):
        fill_corpus(bad, tmp_path / "o.jsonl", MLMFiller, progress=False)
    rc = main(["fill", str(bad), "-o", str(tmp_path / "o.jsonl"), "--filler", "mlm", "--no-progress"])
    assert rc == 2


def test_corpus_without_placeholder_records_is_filled_from_its_markers(tiny_mlm, tmp_path):
    _, _, model_dir = tiny_mlm
    src, out = tmp_path / "plain.jsonl", tmp_path / "o.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "i live in [MASK] with my family"}) + "\n"
                   + json.dumps({"id": "b", "text": "[PERSON_NAME_1] and [PERSON_NAME_1] met"}) + "\n")
    assert main(["fill", str(src), "-o", str(out), "--filler", "mlm", "--model", str(model_dir), "--no-progress",
                 "--types", "off"]) == 0
    docs = {d.id: d for d in read_filled(out)}
    assert docs["a"].substitutions[0].substitute in {"paris", "london", "berlin", "rome"}
    a, b = docs["b"].substitutions
    assert a.substitute == b.substitute


def test_finetune_writes_a_model_veil_fill_loads(tiny_mlm, tmp_path):
    _, _, model_dir = tiny_mlm
    src = tmp_path / "masked.jsonl"
    write_masked(src, n=30)
    ft = tmp_path / "ft"
    assert main(["finetune", str(src), "-o", str(ft), "--model", str(model_dir), "--data", "top1", "--rounds", "2",
                 "--max-steps", "3", "--batch-size", "4", "--no-progress"]) == 0
    for d in (ft, ft / "round-1", ft / "round-2"):
        assert (d / "config.json").is_file() and (d / "tokenizer_config.json").is_file()
    info = json.loads((ft / "veil_finetune.json").read_text())
    assert info["round"] == 2 and info["steps"] == 3 and info["data"] == "top1"
    out = tmp_path / "filled.jsonl"
    assert main(["fill", str(src), "-o", str(out), "--filler", "mlm", "--model", str(ft), "--no-progress"]) == 0
    assert all(not find_markers(r["text"]) for r in read_jsonl(out))


def test_finetune_mask_free_changes_the_weights(tiny_mlm, tmp_path):
    import torch

    from veil.fill.finetune import MLMTrainConfig
    from veil.fill.mlm import MLMFiller, load_mlm
    from veil.fill.rounds import finetune_rounds

    model, tok, model_dir = tiny_mlm
    src = tmp_path / "masked.jsonl"
    write_masked(src, n=30)
    docs = list(read_masked(src))
    n_free = sum(not d.placeholders for d in docs)
    assert 0 < n_free < len(docs)
    infos = finetune_rounds(docs, tmp_path / "ft", filler_cls=MLMFiller, load=load_mlm, model=str(model_dir),
                            data="mask-free",
                            cfg=MLMTrainConfig(max_steps=4, batch_size=4, lr=1e-3), progress=False)
    assert infos[0]["texts"] == n_free
    tuned, _ = load_mlm(str(tmp_path / "ft"))
    before = dict(model.named_parameters())
    changed = [n for n, p in tuned.named_parameters() if not torch.equal(p, before[n])]
    assert changed
    with pytest.raises(VeilError, match="epochs"):
        finetune_rounds(docs, tmp_path / "ft2", filler_cls=MLMFiller, load=load_mlm, model=str(model_dir),
                        data="mask-free", rounds=2, progress=False)


def test_fill_check_types_reports_agreement(tiny_mlm, tmp_path, caplog):
    pytest.importorskip("spacy")
    import logging

    _, _, model_dir = tiny_mlm
    src, out = tmp_path / "typed.jsonl", tmp_path / "o.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "Yesterday [PERSON_NAME_1] flew to [LOCATION_1] with [PERSON_NAME_2] ."})
                   + "\n", encoding="utf-8")
    with caplog.at_level(logging.INFO):
        assert main(["fill", str(src), "-o", str(out), "--filler", "mlm", "--model", str(model_dir), "--no-progress",
                     "--check-types"]) == 0
    assert any("type check" in r.getMessage() and "person" in r.getMessage() for r in caplog.records)
    (doc,) = read_filled(out)
    names = {s.key: s.substitute for s in doc.substitutions}
    assert names["PERSON_NAME_1"] != names["PERSON_NAME_2"]


def test_fill_sample_strategy_is_seeded(tiny_mlm, tmp_path):
    model, tok, model_dir = tiny_mlm
    src = tmp_path / "masked.jsonl"
    write_masked(src)
    texts = []
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        out = tmp_path / f"{name}.jsonl"
        assert main(["fill", str(src), "-o", str(out), "--filler", "mlm", "--model", str(model_dir),
                     "--strategy", "sample", "--temperature", "2", "--seed", seed, "--no-avoid", "--no-progress",
                     "--threads", "1"]) == 0
        rows = read_jsonl(out)
        assert all(not find_markers(r["text"]) for r in rows)
        texts.append([r["text"] for r in rows])
    assert texts[0] == texts[1] and texts[0] != texts[2]


def test_a_document_the_model_cannot_fill_does_not_stop_the_run(tiny_mlm, tmp_path, capsys):
    """Issue 19 case 8 (fill side): `[MASK_]` in one document once stopped `veil fill` with exit 2 and no output."""
    _, _, model_dir = tiny_mlm
    src, out = tmp_path / "m.jsonl", tmp_path / "f.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(
        ["i live in [MASK] with my family", "odd [MASK_] and [MASK_] [MASK] [MASK_]", "she drives a [MASK] car"])))
    # one document of three holds a third of the placeholders: allowed explicitly (the default allows 10%)
    assert main(["fill", str(src), "-o", str(out), "--filler", "mlm", "--model", str(model_dir), "--no-progress",
                 "--max-fallback-share", "0.5"]) == 0
    rows = read_jsonl(out)
    assert [r["id"] for r in rows] == ["0", "1", "2"] and not any(find_markers(r["text"]) for r in rows)
    assert rows[1]["text"].startswith("odd [MASK_] and [MASK_] ") and rows[1]["text"].endswith(" [MASK_]")
