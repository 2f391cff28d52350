"""Experiment stage: the grid's cached stages (corpus, pretrain, mask, filler fine-tuning, fill, LM fine-tuning, perplexity).

Each stage is called by the runner (:mod:`veil.experiment.runner`) with the values it works on
and returns its stage folder and record (see :mod:`veil.cache`); none calls back into the runner.
Stages and their cache keys (hash of inputs + settings):

``corpus`` text of train / test / pre-training corpora -> ``pretrain`` (vocabulary + LM) ->
``mask`` (train texts, technique, options, style) -> ``filler_ft`` (masked corpus, filler,
fine-tuning settings) -> ``fill`` (masked corpus, method) -> ``lm_finetune`` (pre-trained LM,
training texts, loss weight on [MASK] targets, LM settings) -> ``evaluate`` (fine-tuned LM, test
texts). Adding a method computes only that method's stages; an interrupted run resumes (the fill
stage even inside a corpus, through :func:`veil.run.corpus.fill_corpus`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Sequence

from veil.cache import StageCache, stable_hash, texts_hash
from veil.errors import VeilError
from veil.experiment.grid import TrainedLM, read_texts
from veil.experiment.rankings import RankingStore, ranking_request, share_rankings
from veil.experiment.spec import CorpusSpec, ExperimentSpec, Variant
from veil.textutil import count_words

log = logging.getLogger(__name__)


def load_corpus(c: CorpusSpec) -> list[Any]:
    """The documents an experiment's ``train:`` / ``test:`` / ``pretrain:`` entry selects from its corpus."""
    from veil.io.corpora import select_documents
    from veil.io.formats import Fields, read_documents

    fields = Fields(**c.fields) if c.fields else None
    docs = select_documents(read_documents(c.path, c.format, fields), min_words=c.min_words,
                            exclude_containing=c.exclude_containing, skip=c.skip, limit=c.limit)
    if not docs:
        raise VeilError(f"{c.path}: no documents with at least {c.min_words} word(s)")
    return docs


class ExperimentStages:
    """The experiment's cached stages, each called with the values it works on and returning what it made."""

    def __init__(self, spec: ExperimentSpec, out: Path, progress: bool = True,
                 only_methods: list[str] | None = None, only_techniques: list[str] | None = None,
                 executor: Any = None) -> None:
        from veil.downstream.lm import LMSettings

        self.spec, self.out, self.progress = spec, Path(out), progress
        # where the mask and fill stages run their batches (veil.run.executors): local, or Ray actors
        from veil.run.executors import LocalExecutor

        self.executor = executor or LocalExecutor()
        self.cache = StageCache(spec.cache or self.out / "cache")
        self.lm = LMSettings.from_dict({"seed": spec.seed, **spec.lm})
        self.variants = [v for v in spec.variants if not only_methods or v.name in only_methods]
        self.techniques = {t: o for t, o in spec.techniques.items() if not only_techniques or t in only_techniques}
        self.rankings = RankingStore(self.cache.root / "rankings")

    # ------------------------------------------------------------------ stages
    def corpus(self, which: str, c: CorpusSpec) -> tuple[list[Any], str]:
        t0 = time.time()
        docs = load_corpus(c)
        h = texts_hash([d.text for d in docs])
        log.info("%s corpus: %d documents, %d words from %s (%.1fs)", which, len(docs),
                 sum(count_words(d.text) for d in docs), c.path, time.time() - t0)
        return docs, h

    def pretrain(self, texts: list[str], h: str) -> tuple[Path, dict[str, Any]]:
        from veil.downstream import lm

        s = self.lm
        if s.model:  # a pre-trained model: nothing to pre-train; the stage names the model to load
            key = {"model": s.model}
            return self.cache.run("pretrain", stable_hash(key), key,
                                  lambda tmp: lm.save_pretrained_reference(s.model, tmp) or {"model": s.model})
        settings = {"corpus": h, **({"arch": s.arch} if s.arch != "gpt2" else {}),  # (gpt2 keys predate arch)
                    "n_layer": s.n_layer, "n_embd": s.n_embd, "n_head": s.n_head, "context": s.context,
                    "vocab_size": s.vocab_size, "tokenizer": s.tokenizer, "dropout": s.dropout, "seed": s.seed,
                    "batch_size": s.batch_size,
                    "epochs": s.pretrain_epochs, "lr": s.pretrain_lr, "weight_decay": s.weight_decay,
                    "warmup_steps": s.warmup_steps}
        if any("[MASK]" in t or "<unk>" in t for t in texts):  # only then did the tokenisation change its stream
            settings.update(self._tokenization())

        def work(tmp: Path) -> dict[str, Any]:
            from veil.downstream.tokenizer import build_vocab

            vocab = build_vocab(s.tokenizer, texts, s.vocab_size)
            model = lm.make_model(s, vocab)
            log.info("pre-training a %d-layer, %d-wide LM (%.1fM parameters, vocabulary %d) on %d sentences",
                     s.n_layer, s.n_embd, lm.n_params(model) / 1e6, len(vocab), len(texts))
            info = {"parameters": lm.n_params(model), "vocab": len(vocab), "sentences": len(texts)}
            if s.pretrain_epochs > 0:
                info.update(lm.train(model, vocab, texts, s, epochs=s.pretrain_epochs, lr=s.pretrain_lr,
                                     desc="pre-train", progress=self.progress))
            lm.save(model, vocab, tmp, info)
            return info

        return self.cache.run("pretrain", stable_hash(settings), settings, work)

    def mask(self, tech: str, options: dict[str, Any], docs: list[Any], h: str) -> tuple[Path, dict[str, Any]]:
        settings = {"train": h, "technique": tech, "options": options, "style": self.spec.style,
                    **({"keep": sorted(self.spec.keep)} if self.spec.keep else {})}

        def work(tmp: Path) -> dict[str, Any]:
            from functools import partial

            from veil.io.records import write_masked
            from veil.run.components import build_engine
            from veil.run.corpus import mask_documents

            settings = ([tech], self.spec.style, {tech: options} if options else None, (), tuple(self.spec.keep))
            build_engine(*settings)  # bad names / options fail here, on either executor
            counts: dict[str, int] = {}

            def masked() -> Any:
                for md in mask_documents(docs, partial(build_engine, *settings), executor=self.executor,
                                         batch_size=512, progress=self.progress, counts=counts,
                                         desc=f"mask {tech}"):
                    md.meta = {}
                    yield md

            write_masked(tmp / "masked.jsonl", masked())
            share = counts.get("masked", 0) / max(1, counts.get("words", 0))
            log.info("mask %s: %.1f%% of %d words", tech, 100 * share, counts.get("words", 0))
            return {"masked_words": counts.get("masked", 0), "words": counts.get("words", 0), "masked_share": share}

        return self.cache.run("mask", stable_hash(settings), settings, work)

    def detect(self, tech: str, options: dict[str, Any], docs: list[Any], h: str) -> list[list[Any]]:
        """The spans ``tech`` finds in ``docs`` (the test set: the words the technique would mask), through the
        corpus loop's detect stage (:mod:`veil.run.detect`); resumable inside the corpus, like the fill stage."""
        from functools import partial

        from veil.run.components import build_engine
        from veil.run.detect import detect_documents, read_spans

        settings = {"documents": h, "technique": tech, "options": options,
                    **({"keep": sorted(self.spec.keep)} if self.spec.keep else {})}
        key = stable_hash(settings)
        make = partial(build_engine, [tech], self.spec.style, {tech: options} if options else None, (),
                       tuple(self.spec.keep))

        def work(tmp: Path) -> dict[str, Any]:
            if self.executor.name != "local":
                make()  # bad names / options fail here, not in every worker
            partial_file = self.cache.path("detect", key + ".work.jsonl")  # survives an interruption: resumed
            detect_documents(docs, make, settings={"key": key}, spans_file=partial_file, executor=self.executor,
                             batch_size=512, progress=self.progress, desc=f"detect {tech}")
            os.replace(partial_file, tmp / "spans.jsonl")
            partial_file.with_name(partial_file.name + ".veil.json").unlink(missing_ok=True)
            return {"documents": len(docs)}

        d, _ = self.cache.run("detect", key, settings, work)
        return read_spans(d / "spans.jsonl", len(docs))

    def filler_finetune(self, v: Variant, tech: str, masked_dir: Path, mask_key: str) -> tuple[Path, dict[str, Any]]:
        ft = dict(v.finetune or {})
        settings = {"masked": mask_key, "filler": v.filler, "model": v.model, "finetune": ft, "k": v.k,
                    "seed": self.spec.seed}

        def work(tmp: Path) -> dict[str, Any]:
            from veil.io.records import read_masked
            from veil.registry import fillers
            from veil.run.inmemory import fill_documents

            filler = fillers.get(v.filler)
            docs = list(read_masked(masked_dir / "masked.jsonl"))
            opts = dict(ft)  # the training options; ``ft`` itself is part of the stage's settings
            data = opts.pop("data", filler.finetune_default_data)
            texts = None
            if data not in filler.finetune_data:  # train on the output of another fill method of this technique
                other = next((o for o in self.spec.variants if o.name == data and o.data == "filled"), None)
                if other is None:
                    raise VeilError(f"method {v.name!r}: finetune.data must be one of "
                                    f"{', '.join(filler.finetune_data)} or another fill method's name")
                fdir, _ = self.fill(other, tech, masked_dir, mask_key)
                texts = read_texts(fdir / "filled.jsonl")
            return filler.finetune(docs, tmp / "model", texts=texts, data=data, model=v.model,
                                   rounds=int(opts.pop("rounds", 1)), k=v.k, seed=self.spec.seed,
                                   progress=self.progress, fill=fill_documents, **opts)

        return self.cache.run("filler_ft", stable_hash(settings), settings, work)

    def fill(self, v: Variant, tech: str, masked_dir: Path, mask_key: str) -> tuple[Path, dict[str, Any]]:
        model, ft_s = v.model, 0.0
        ft_key = None
        if v.finetune:
            ft_dir, ft_meta = self.filler_finetune(v, tech, masked_dir, mask_key)
            model, ft_s, ft_key = str(ft_dir / "model"), ft_meta["seconds"], ft_meta["key"]
        from veil.registry import fillers

        version = getattr(fillers.get(v.filler), "version", 1)
        settings = {"masked": mask_key, "filler_ft": ft_key, "seed": self.spec.seed, **v.fill_settings(),
                    **({"filler_version": version} if version != 1 else {})}
        key = stable_hash(settings)

        def work(tmp: Path) -> dict[str, Any]:
            from functools import partial

            from veil.run.components import build_filler
            from veil.run.corpus import fill_corpus

            filler = fillers.get(v.filler)(model=model, strategy=v.strategy, k=v.k, seed=self.spec.seed, **v.options)
            memo_key = json.dumps([v.filler, model, v.options, mask_key] + ([version] if version != 1 else []),
                                  sort_keys=True, default=str)
            memo = self.rankings.memo(memo_key)
            share_rankings(filler, memo,
                           request=ranking_request(filler, max(o.k for o in self.spec.variants if o.data == "filled")))
            work_dir = self.cache.path("fill", key + ".work")  # survives an interruption: fill_corpus resumes
            work_dir.mkdir(parents=True, exist_ok=True)
            log.info("fill %s / %s: %s %s", tech, v.name, v.filler, v.strategy)
            try:
                if self.executor.name != "local":  # each worker builds the variant's filler (rankings not shared)
                    filler = partial(build_filler, v.filler, model=model, strategy=v.strategy, k=v.k,
                                     seed=self.spec.seed, **v.options)
                # a corpus in which the mask stage found nothing is this grid's to fill (a copy)
                stats = fill_corpus(masked_dir / "masked.jsonl", work_dir / "filled.jsonl", filler,
                                    settings={"key": key}, progress=self.progress, executor=self.executor,
                                    allow_unmasked=True)
            finally:  # also after an interruption: the rankings computed so far are not lost
                self.rankings.save(memo_key)
            for f in work_dir.iterdir():
                if f.is_file() and not f.name.endswith((".partial", ".progress.json")):
                    os.replace(f, tmp / f.name)
            stats = stats if isinstance(stats, dict) else {}
            return {"stats": stats, "filler_ft_s": ft_s, "seconds_earlier": stats.get("seconds_earlier", 0.0)}

        d, meta = self.cache.run("fill", key, settings, work)
        wd = self.cache.path("fill", key + ".work")
        if wd.is_dir():
            import shutil
            shutil.rmtree(wd, ignore_errors=True)
        meta = {**meta, "filler_ft_s": ft_s}
        return d, meta

    def lm_finetune(self, pre_dir: Path, pre_key: str, texts: list[str], mask_loss_weight: float,
                    label: str, seed: int | None = None) -> TrainedLM:
        import dataclasses

        from veil.downstream import lm

        s = self.lm if seed is None else dataclasses.replace(self.lm, seed=seed)
        settings = {"pretrain": pre_key, "texts": texts_hash(texts), "mask_loss_weight": mask_loss_weight,
                    **self._tokenization(texts),
                    "epochs": s.finetune_epochs, "lr": s.finetune_lr, "batch_size": s.batch_size, "seed": s.seed,
                    "weight_decay": s.weight_decay, "warmup_steps": s.warmup_steps, **s.adaptation_key(),
                    **({"steps": s.finetune_steps} if s.finetune_steps is not None else {})}

        key = stable_hash(settings)

        def work(tmp: Path) -> dict[str, Any]:
            import torch

            model, vocab = lm.load(pre_dir)
            model = lm.adaptable(model, s)
            torch.manual_seed(s.seed)
            info = lm.train(model, vocab, texts, s, epochs=s.finetune_epochs, lr=s.finetune_lr,
                            mask_loss_weight=mask_loss_weight, desc=f"fine-tune {label}", progress=self.progress,
                            steps=s.finetune_steps)
            lm.save(model, vocab, tmp, info)
            held[:] = [model, vocab]  # evaluate() takes it instead of loading what was just saved
            return info

        held: list[Any] = []
        d, meta = self.cache.run("lm_finetune", key, settings, work)
        return TrainedLM(d, meta, *held)

    def evaluate(self, trained: TrainedLM, test: list[str], test_key: str, label: str,
                 asr: tuple[Any, str, bool] | None = None) -> dict[str, Any]:
        """The LM's perplexity on ``test``. ``asr=(evaluation, lm_dir, oracle)``: the experiment's ASR evaluation; when
        the model is in memory for the perplexity, it also scores the n-best lists, so the WER stage does not load
        it again (see :meth:`veil.downstream.asr.stage.ASREvaluation.prime`; nothing when the perplexity came from the cache)."""
        from veil.downstream import lm

        # evaluated in fp32 whatever lm.precision (a bf16-trained model's key says how it was trained)
        settings = {"lm": trained.key, "test": test_key, "context": self.lm.context, **self._tokenization(test),
                    **({"evaluation": "fp32"} if self.lm.precision != "fp32" else {})}

        def work(tmp: Path) -> dict[str, Any]:
            model, vocab = trained.take()
            r = lm.perplexity(model, vocab, test, self.lm, progress=self.progress, desc=f"perplexity {label}")
            log.info("perplexity %s: %.2f", label, r["perplexity"])
            held.append((model, vocab))
            return r

        held: list[tuple[Any, Any]] = []
        _, meta = self.cache.run("evaluate", stable_hash(settings), settings, work)
        if asr is not None and held:
            evaluation, lm_dir, oracle = asr
            evaluation.prime(lm_dir, *held[0], test, oracle=oracle)
        return meta

    def _tokenization(self, texts: Sequence[str] = ()) -> dict[str, Any]:
        """Part of the LM stages' keys: the BPE stream changed with ``BPEVocab.TOKENIZATION`` 2 (the
        pre-training key carries it only for a corpus holding ``[MASK]`` or ``<unk>``: the streams of
        other corpora did not change, and their pre-trained models stay valid). A pre-trained
        ``lm.model``'s stream changed with ``lm.STREAM_VERSION`` 2 only for ``texts`` ending in whitespace
        (PTB's lines), so only their stages carry it."""
        if self.lm.model:
            from veil.downstream.lm import STREAM_VERSION

            return {"stream": STREAM_VERSION} if any(t != t.rstrip() for t in texts) else {}
        if self.lm.tokenizer != "bpe":
            return {}
        from veil.downstream.tokenizer import BPEVocab

        return {"tokenization": BPEVocab.TOKENIZATION}
