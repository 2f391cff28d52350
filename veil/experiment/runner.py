"""Experiment stage: run the grid (mask -> fill -> adapt the downstream LM -> perplexity) with a stage cache.

Stages and their cache keys (hash of inputs + settings; see :mod:`veil.cache`):

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

from veil.errors import VeilError
from veil.cache import StageCache, stable_hash, texts_hash
from veil.experiment.spec import CorpusSpec, ExperimentSpec, Variant, load_spec
from veil.textutil import count_words

log = logging.getLogger(__name__)


def load_corpus(c: CorpusSpec) -> list[Any]:
    from veil.io.formats import Fields, read_documents

    fields = Fields(**c.fields) if c.fields else None
    docs = []
    seen = 0
    if str(c.path).endswith(".txt.gz"):  # a gzipped one-sentence-a-line file (the bundled generic corpus)
        import gzip

        from veil.types import Document

        with gzip.open(c.path, "rt", encoding="utf-8") as f:
            source = (Document(id=str(i), text=line.rstrip("\n")) for i, line in enumerate(f, 1))
            docs = _take(source, c)
    else:
        docs = _take(read_documents(c.path, c.format, fields), c)
    if not docs:
        raise VeilError(f"{c.path}: no documents with at least {c.min_words} word(s)")
    return docs


def _take(source: Any, c: CorpusSpec) -> list[Any]:
    docs = []
    seen = 0
    for d in source:
        if count_words(d.text) < c.min_words or any(x in d.text for x in c.exclude_containing):
            continue
        seen += 1
        if seen <= c.skip:
            continue
        docs.append(d)
        if c.limit is not None and len(docs) >= c.limit:
            break
    return docs


def read_texts(path: Path) -> list[str]:
    """The ``text`` of every record of a stage's JSONL output (``masked.jsonl``, ``filled.jsonl``), in order."""
    with path.open(encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def lm_text_of_masked(text: str) -> str:
    """Baseline text: every marker (``[MASK]``, ``[PERSON_NAME_1]``, ...) becomes the LM's ``[MASK]`` token."""
    from veil.markers import MARKER_RE, unescape

    return unescape(MARKER_RE.sub("[MASK]", text)) if "[" in text else text


def ranking_key(text: str, start: int, end: int, exclude_digest: str = "") -> tuple[str, int, int, str]:
    """The key of one ranking in a :func:`share_rankings` memo (``exclude_digest`` names the
    exclude list the ranking was made under: empty for none)."""
    return (text, start, end, exclude_digest)


def ranking_record(key: tuple[str, int, int, str], value: tuple[int, list[tuple[str, float]]]) -> list[Any]:
    """One memo entry as a line of a ``rankings/*.jsonl.gz`` file (the inverse of :func:`ranking_entry`)."""
    text, start, end, exclude_digest = key
    ask, ranking = value
    return [text, start, end, ask, ranking, exclude_digest]


def ranking_entry(record: list[Any]) -> tuple[tuple[str, int, int, str], tuple[int, list[tuple[str, float]]]]:
    """A memo entry from a stored line (files written before exclude lists had no last field)."""
    text, start, end, ask, ranking, *excl = record
    return ranking_key(text, start, end, excl[0] if excl else ""), (ask, [(w, sc) for w, sc in ranking])


def share_rankings(filler: Any, memo: dict[Any, Any], request: int = 0) -> None:
    """Let methods that differ only in strategy share the model's rankings (exact, not approximate).

    A ranking depends only on the text and the marker position (and the model and its options,
    which are part of the memo's key in the caller), never on the strategy: Top-1 and Top-K
    therefore rank the first marker of every document identically, and Top-K reuses those rankings
    instead of recomputing them. A stored ranking serves any request for at most as many candidates;
    ``request`` asks the model for at least that many candidates (the largest K of the methods that
    share the memo: a back-end ranks all its proposals anyway, so a longer list costs nothing).
    """
    propose = getattr(filler, "propose_batch", None)
    if propose is None:
        return

    digests: dict[int, tuple[Any, str]] = {}  # id(word list) -> (the list, its digest)

    def digest(words: Any) -> str:
        """A stable name of an exclude list (it is part of a ranking's key, also on disk)."""
        if not words:
            return ""
        hit = digests.get(id(words))
        if hit is None or hit[0] is not words:
            hit = digests[id(words)] = (words, stable_hash(sorted(words)))
        return hit[1]

    def propose_batch(texts: Any, targets: Any, k: int, exclude: Any = None) -> list[list[tuple[str, float]]]:
        excl = list(exclude) if exclude is not None else [None] * len(texts)
        keys = [ranking_key(t, s, e, digest(x)) for t, (s, e), x in zip(texts, targets, excl)]
        out: list[Any] = [None] * len(keys)
        miss = []
        for i, key in enumerate(keys):
            hit = memo.get(key)
            if hit is not None and (hit[0] >= k or len(hit[1]) < hit[0]):
                out[i] = hit[1][:k]
            else:
                miss.append(i)
        if miss:
            ask = max(k, request)
            extra = {"exclude": [excl[i] for i in miss]} if exclude is not None else {}
            got = propose([texts[i] for i in miss], [targets[i] for i in miss], ask, **extra)
            for i, ranking in zip(miss, got):
                memo[keys[i]] = (ask, list(ranking))
                out[i] = list(ranking)[:k]
        return out

    filler.propose_batch = propose_batch


def ranking_request(filler: Any, k_max: int) -> int:
    """The most candidates the fill loop asks for: Top-K's K (or an entity's list) plus its margin."""
    from veil.fill.base import CANDIDATE_MARGIN

    return max(k_max, getattr(filler, "entity_candidates", 0)) + CANDIDATE_MARGIN


class ExperimentRunner:
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
        self._rank_memos: dict[str, dict[Any, Any]] = {}
        self._rank_saved: dict[str, int] = {}  # memo key -> entries on disk
        self._masked_files: dict[str, Path] = {}  # technique -> masked corpus (the report's examples)
        self._filled_files: dict[tuple[str, str], Path] = {}  # (technique, method) -> filled corpus
        self._trained: tuple[str, Any, Any] | None = None  # (lm_finetune key, model, vocab) of the last LM trained
        self._asr_ev: Any = None  # the run's ASREvaluation when the experiment has an asr: section

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

    def filler_finetune(self, v: Variant, tech: str, masked_dir: Path, mask_key: str) -> tuple[Path, dict[str, Any]]:
        ft = dict(v.finetune or {})
        settings = {"masked": mask_key, "filler": v.filler, "model": v.model, "finetune": ft, "k": v.k,
                    "seed": self.spec.seed}

        def work(tmp: Path) -> dict[str, Any]:
            from veil.io.records import read_masked
            from veil.registry import fillers

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
                                   progress=self.progress, **opts)

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
            memo = self._rank_memo(memo_key)
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
                self._save_rank_memo(memo_key, memo)
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

    # Rankings are kept on disk beside the stage cache (``rankings/HASH.jsonl.gz``), one file per
    # (filler, model, options, masked corpus): a method added later, or a run resumed in another
    # process, reuses them exactly instead of asking the model again.
    def _rank_memo_path(self, memo_key: str) -> Path:
        return self.cache.root / "rankings" / f"{stable_hash(memo_key)}.jsonl.gz"

    def _rank_memo(self, memo_key: str) -> dict[Any, Any]:
        memo = self._rank_memos.get(memo_key)
        if memo is None:
            memo = self._rank_memos[memo_key] = {}
            path = self._rank_memo_path(memo_key)
            if path.is_file():
                import gzip

                with gzip.open(path, "rt", encoding="utf-8") as f:
                    for line in f:
                        key, value = ranking_entry(json.loads(line))
                        memo[key] = value
                log.info("reusing %d stored rankings (%s)", len(memo), path.name)
            self._rank_saved[memo_key] = len(memo)
        return memo

    def _save_rank_memo(self, memo_key: str, memo: dict[Any, Any]) -> None:
        if len(memo) == self._rank_saved.get(memo_key):
            return
        import gzip

        path = self._rank_memo_path(memo_key)
        from veil.io.atomic import atomic_write

        with atomic_write(path, "wb") as raw, gzip.open(raw, "wt", encoding="utf-8") as f:
            for key, value in memo.items():
                f.write(json.dumps(ranking_record(key, value), ensure_ascii=False) + "\n")
        self._rank_saved[memo_key] = len(memo)

    def lm_finetune(self, pre_dir: Path, pre_key: str, texts: list[str], mask_loss_weight: float,
                    label: str, seed: int | None = None) -> tuple[Path, dict[str, Any]]:
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
            self._trained = (key, model, vocab)  # evaluate() takes it instead of loading what was just saved
            return info

        return self.cache.run("lm_finetune", key, settings, work)

    def _take_trained(self, key: str) -> tuple[Any, Any] | None:
        """The LM the ``lm_finetune`` stage ``key`` has just trained in this process, as :func:`veil.downstream.lm.load`
        would give it back from its folder (adapters merged into the weights), or None."""
        trained, self._trained = self._trained, None
        if trained is None or trained[0] != key:
            return None
        model = trained[1]
        return (model.merge_and_unload() if hasattr(model, "merge_and_unload") else model), trained[2]

    def evaluate(self, ft_dir: Path, ft_key: str, test: list[str], test_key: str, label: str,
                 asr: tuple[str, bool] | None = None) -> dict[str, Any]:
        """The LM's perplexity on ``test``. ``asr=(lm_dir, oracle)``: when the experiment has an ``asr:`` section and
        the model is in memory for the perplexity, it also scores the n-best lists, so the WER stage does not load
        it again (see :meth:`veil.downstream.asr.stage.ASREvaluation.prime`; nothing when the perplexity came from the cache)."""
        from veil.downstream import lm

        settings = {"lm": ft_key, "test": test_key, "context": self.lm.context, **self._tokenization(test),
                    **({"precision": self.lm.precision} if self.lm.precision != "fp32" else {})}

        def work(tmp: Path) -> dict[str, Any]:
            model, vocab = self._take_trained(ft_key) or lm.load(ft_dir)
            r = lm.perplexity(model, vocab, test, self.lm, progress=self.progress, desc=f"perplexity {label}")
            log.info("perplexity %s: %.2f", label, r["perplexity"])
            held.append((model, vocab))
            return r

        held: list[tuple[Any, Any]] = []
        _, meta = self.cache.run("evaluate", stable_hash(settings), settings, work)
        if asr is not None and held and self._asr_ev is not None:
            self._asr_ev.prime(asr[0], *held[0], test, oracle=asr[1])
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

    # ------------------------------------------------------------------ the grid
    def run(self) -> list[dict[str, Any]]:
        spec = self.spec
        self.out.mkdir(parents=True, exist_ok=True)
        if spec.pretrain is None and not self.lm.model:
            raise VeilError(f"{spec.source}: 'pretrain' (a generic corpus for the downstream LM) is required")
        if spec.pretrain is not None and self.lm.model:
            raise VeilError(f"{spec.source}: lm.model {self.lm.model!r} is already pre-trained: remove 'pretrain' "
                            "(on the command line: --set pretrain=null)")
        train_docs, train_h = self.corpus("train", spec.train)
        test_docs, test_h = self.corpus("test", spec.test)
        test = [d.text for d in test_docs]
        pre_docs, pre_h = self.corpus("pretrain", spec.pretrain) if spec.pretrain else ([], "")
        pre_dir, pre_meta = self.pretrain([d.text for d in pre_docs], pre_h)
        pre_key, pre_s = pre_meta["key"], pre_meta["seconds"]
        train_words = sum(count_words(d.text) for d in train_docs)
        test_words = sum(count_words(t) for t in test)
        base = {"train_docs": len(train_docs), "train_words": train_words, "test_words": test_words,
                "pretrain_s": pre_s}
        rows: list[dict[str, Any]] = []

        task = self._task(train_docs, test_docs)
        if spec.asr is not None:
            from veil.downstream.asr.stage import ASREvaluation

            self._asr_ev = ASREvaluation(spec.asr, self.cache, spec.source.resolve().parent, spec.seed, self.lm,
                                         self.progress)

        def lm_row(tech: str, v: Variant, texts: list[str], mask_weight: float, extra: dict[str, Any],
                   records: Path | None = None) -> None:
            before = len(self.cache.computed)
            label = f"{tech or 'oracle'}/{v.name}"
            ppls, ft_s, ev_s, lm_dir = [], 0.0, 0.0, ""
            for i in range(self.lm.seeds):  # the first run's key is the single-seed key: seeds only add runs
                seed = self.lm.seed + i
                tag = label if i == 0 else f"{label} (seed {seed})"
                ft_dir, ft_meta = self.lm_finetune(pre_dir, pre_key, texts, mask_weight, tag, seed=seed)
                # the first seed's model is the WER's: it scores the n-best lists while it is in memory
                ev = self.evaluate(ft_dir, ft_meta["key"], test, test_h, tag,
                                   asr=(f"lm_finetune/{ft_meta['key']}", v.data == "original") if i == 0 else None)
                lm_dir = lm_dir or f"lm_finetune/{ft_meta['key']}"  # the first seed's model (veil experiment gap)
                ppls.append(ev["info"]["perplexity"])
                ft_s, ev_s = ft_s + ft_meta["seconds"], ev_s + ev["seconds"]
            row = {**base, "technique": tech, "method": v.name, "perplexity": sum(ppls) / len(ppls),
                   "perplexity_seeds": ppls, "lm_finetune_s": ft_s, "evaluate_s": ev_s, "lm_dir": lm_dir, **extra}
            if task is not None:  # the task classifier on the same training text
                row.update(task.columns(label, v, texts, records))
            row["computed"] = len(self.cache.computed) - before + extra.get("computed", 0)
            rows.append(row)
            self._write(rows)

        for v in self.variants:
            if v.data == "original":
                lm_row("", v, [d.text for d in train_docs], v.mask_loss_weight, {"masked_share": 0.0})
            elif v.data == "none":  # the pre-trained LM, not adapted: no fine-tuning stage
                before = len(self.cache.computed)
                ev = self.evaluate(pre_dir, pre_key, test, test_h, v.name, asr=(f"pretrain/{pre_key}", False))
                rows.append({**base, "technique": "", "method": v.name, "perplexity": ev["info"]["perplexity"],
                             "perplexity_seeds": [ev["info"]["perplexity"]], "lm_finetune_s": 0.0,
                             "evaluate_s": ev["seconds"], "masked_share": 0.0, "lm_dir": f"pretrain/{pre_key}",
                             "computed": len(self.cache.computed) - before})
                self._write(rows)
        for tech, opts in self.techniques.items():
            before = len(self.cache.computed)
            mdir, mmeta = self.mask(tech, opts, train_docs, train_h)
            mask_info = {"masked_share": mmeta["info"]["masked_share"], "mask_s": mmeta["seconds"]}
            mask_computed = len(self.cache.computed) - before
            self._masked_files[tech] = mdir / "masked.jsonl"
            masked_texts = None
            for v in self.variants:
                if v.data in ("original", "none"):
                    continue
                if v.data == "masked":
                    if masked_texts is None:
                        masked_texts = [lm_text_of_masked(t) for t in read_texts(mdir / "masked.jsonl")]
                    lm_row(tech, v, masked_texts, v.mask_loss_weight, {**mask_info, "computed": mask_computed},
                           mdir / "masked.jsonl")
                else:
                    b = len(self.cache.computed)
                    fdir, fmeta = self.fill(v, tech, mdir, mmeta["key"])
                    self._filled_files[(tech, v.name)] = fdir / "filled.jsonl"
                    texts = read_texts(fdir / "filled.jsonl")
                    lm_row(tech, v, texts, v.mask_loss_weight,
                           {**mask_info, "fill_s": fmeta["seconds"], "filler_ft_s": fmeta.get("filler_ft_s", 0.0),
                            "computed": mask_computed + len(self.cache.computed) - b}, fdir / "filled.jsonl")
                mask_computed = 0
        if spec.asr is not None:  # the paper's WER table: every row's LM fused into the recogniser
            rows.append(self._asr(rows, test, pre_dir, pre_key, [d.text for d in train_docs]))
            self._write(rows)
        examples = None
        if spec.report_examples:
            from veil.report.examples import collect_examples

            examples = collect_examples(train_docs, self._masked_files, self._filled_files, spec.report_examples)
        self._write(rows, final=True, examples=examples)
        return rows

    def _asr(self, rows: list[dict[str, Any]], test: list[str], pre_dir: Path, pre_key: str,
             train_texts: list[str]) -> dict[str, Any]:
        """WER of every row's LM (see :mod:`veil.downstream.asr.stage`); returns the recogniser-alone row ``no_lm``."""
        oracle_weight = next((v.mask_loss_weight for v in self.spec.variants if v.data == "original"), 1.0)

        def oracle_lm() -> str:  # lambda and beta are tuned with the Oracle LM even when --method leaves it out
            return "lm_finetune/" + self.lm_finetune(pre_dir, pre_key, train_texts, oracle_weight, "oracle")[1]["key"]

        return self._asr_ev.add_wer(rows, test, self.cache.root, oracle_lm)

    def _task(self, train_docs: list[Any], test_docs: list[Any]) -> Any:
        """The task evaluation of the experiment file's ``task:`` (:mod:`veil.downstream.task.stage`), None without one."""
        if self.spec.task is None:
            return None
        from veil.downstream.task.stage import TaskStage

        return TaskStage(self.spec.task, self.cache, train_docs, test_docs, self.spec.seed, self.progress)

    def _write(self, rows: list[dict[str, Any]], final: bool = False,
               examples: list[dict[str, Any]] | None = None) -> None:
        from veil.report import write_results

        write_results(rows, self.out, self.spec, html=final, methods=[v.name for v in self.variants],
                      techniques=list(self.techniques), examples=examples)


def run_experiment(path: str | Path, out: str | Path, progress: bool = True, **kwargs: Any) -> list[dict[str, Any]]:
    """Run the experiment file ``path`` into ``out`` (results.csv, results.md, report.html, cache/)."""
    spec = load_spec(path, kwargs.pop("overrides", None))
    runner = ExperimentRunner(spec, Path(out), progress=progress, **kwargs)
    rows = runner.run()
    log.info("stages computed: %d, reused from the cache: %d", len(runner.cache.computed), len(runner.cache.reused))
    return rows
