"""Experiment stage: run the grid (mask -> fill -> adapt the downstream LM -> perplexity, task, ASR), and the gap.

The runner walks the experiment file's variants and calls each stage once per variant, handing it
the values it needs: the cached stages of :mod:`veil.experiment.stages` (mask, fill, adapt the LM,
perplexity), the task evaluation (:mod:`veil.downstream.task.stage`), the ASR evaluation
(:mod:`veil.downstream.asr.stage`: its Oracle LM is adapted here and handed to it) and, after a run,
where the gap lies (:mod:`veil.experiment.gap`: the test set, its spans and each row's model are
handed to it). No stage calls back into the runner; ``results.*`` are written after every row, so
an interrupted run shows what it has.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from veil.errors import VeilError
from veil.experiment.grid import Grid, TrainedLM, lm_text_of_masked, read_texts
from veil.experiment.spec import Variant, load_spec
from veil.experiment.stages import ExperimentStages, load_corpus

__all__ = ["ExperimentRunner", "load_corpus", "run_experiment"]

log = logging.getLogger(__name__)


class ExperimentRunner(ExperimentStages):
    def run(self) -> list[dict[str, Any]]:
        """Every row of the grid: the baselines on the original text, then each technique's masked and filled
        variants, then (with an ``asr:`` section) the word error rates."""
        spec = self.spec
        self.out.mkdir(parents=True, exist_ok=True)
        if spec.pretrain is None and not self.lm.model:
            raise VeilError(f"{spec.source}: 'pretrain' (a generic corpus for the downstream LM) is required")
        if spec.pretrain is not None and self.lm.model:
            raise VeilError(f"{spec.source}: lm.model {self.lm.model!r} is already pre-trained: remove 'pretrain' "
                            "(on the command line: --set pretrain=null)")
        train_docs, train_h = self.corpus("train", spec.train)
        test_docs, test_h = self.corpus("test", spec.test)
        pre_docs, pre_h = self.corpus("pretrain", spec.pretrain) if spec.pretrain else ([], "")
        pre_dir, pre_meta = self.pretrain([d.text for d in pre_docs], pre_h)
        grid = Grid(train_docs, [d.text for d in test_docs], test_h, TrainedLM(pre_dir, pre_meta),
                    task=self._task(train_docs, test_docs))
        if spec.asr is not None:
            from veil.downstream.asr.stage import ASREvaluation

            grid.asr = ASREvaluation(spec.asr, self.cache, spec.source.resolve().parent, spec.seed, self.lm,
                                     self.progress, groups=[d.group for d in test_docs])
        train_texts = [d.text for d in train_docs]
        for v in self.variants:
            if v.data == "original":
                self._add(grid, self.adapted_row(grid, "", v, train_texts, {"masked_share": 0.0}))
            elif v.data == "none":
                self._add(grid, self.pretrained_row(grid, v))
        for tech, opts in self.techniques.items():
            self.technique_rows(grid, tech, opts, train_h)
        if grid.asr is not None:  # the paper's WER table: every row's LM fused into the recogniser
            oracle_weight = next((v.mask_loss_weight for v in spec.variants if v.data == "original"), 1.0)
            # lambda and beta are tuned with the Oracle LM even when --method leaves it out (a cached stage otherwise)
            oracle = self.lm_finetune(pre_dir, pre_meta["key"], train_texts, oracle_weight, "oracle")
            self._add(grid, grid.asr.add_wer(grid.rows, grid.test, self.cache.root, f"lm_finetune/{oracle.key}"))
        examples = None
        if spec.report_examples:
            from veil.report.examples import collect_examples

            examples = collect_examples(train_docs, grid.masked_files, grid.filled_files, spec.report_examples)
        self._write(grid.rows, final=True, examples=examples)
        return grid.rows

    # ------------------------------------------------------------------ the rows
    def adapted_row(self, grid: Grid, tech: str, v: Variant, texts: list[str], extra: dict[str, Any],
                    records: Path | None = None) -> dict[str, Any]:
        """Adapt the LM on ``texts`` (once per ``lm.seeds``), its perplexity (the mean over seeds) and task cells."""
        before = len(self.cache.computed)
        label = f"{tech or 'oracle'}/{v.name}"
        ppls, ft_s, ev_s, lm_dir = [], 0.0, 0.0, ""
        for i in range(self.lm.seeds):  # the first run's key is the single-seed key: seeds only add runs
            seed = self.lm.seed + i
            tag = label if i == 0 else f"{label} (seed {seed})"
            trained = self.lm_finetune(grid.pretrained.dir, grid.pretrained.key, texts, v.mask_loss_weight, tag,
                                       seed=seed)
            # the first seed's model is the WER's: it scores the n-best lists while it is in memory
            asr = (grid.asr, f"lm_finetune/{trained.key}", v.data == "original") if i == 0 and grid.asr else None
            ev = self.evaluate(trained, grid.test, grid.test_h, tag, asr=asr)
            lm_dir = lm_dir or f"lm_finetune/{trained.key}"  # the first seed's model (veil experiment gap)
            ppls.append(ev["info"]["perplexity"])
            ft_s, ev_s = ft_s + trained.meta["seconds"], ev_s + ev["seconds"]
        row = {**grid.base, "technique": tech, "method": v.name, "perplexity": sum(ppls) / len(ppls),
               "perplexity_seeds": ppls, "lm_finetune_s": ft_s, "evaluate_s": ev_s, "lm_dir": lm_dir, **extra}
        if grid.task is not None:  # the task classifier on the same training text
            row.update(grid.task.columns(label, v, texts, records))
        row["computed"] = len(self.cache.computed) - before + extra.get("computed", 0)
        return row

    def pretrained_row(self, grid: Grid, v: Variant) -> dict[str, Any]:
        """The pre-trained LM as it is, not adapted: no fine-tuning stage."""
        pre = grid.pretrained
        before = len(self.cache.computed)
        asr = (grid.asr, f"pretrain/{pre.key}", False) if grid.asr else None
        ev = self.evaluate(pre, grid.test, grid.test_h, v.name, asr=asr)
        return {**grid.base, "technique": "", "method": v.name, "perplexity": ev["info"]["perplexity"],
                "perplexity_seeds": [ev["info"]["perplexity"]], "lm_finetune_s": 0.0,
                "evaluate_s": ev["seconds"], "masked_share": 0.0, "lm_dir": f"pretrain/{pre.key}",
                "computed": len(self.cache.computed) - before}

    def technique_rows(self, grid: Grid, tech: str, opts: dict[str, Any], train_h: str) -> None:
        """Mask the training corpus with ``tech``, then a row for every masked (baseline) and filled variant."""
        before = len(self.cache.computed)
        mdir, mmeta = self.mask(tech, opts, grid.train_docs, train_h)
        masked = mdir / "masked.jsonl"
        mask_info = {"masked_share": mmeta["info"]["masked_share"], "mask_s": mmeta["seconds"]}
        mask_computed = len(self.cache.computed) - before  # counted once, in the technique's first row
        grid.masked_files[tech] = masked
        masked_texts = None
        for v in self.variants:
            if v.data in ("original", "none") or (v.techniques is not None and tech not in v.techniques):
                continue
            if v.data == "masked":
                if masked_texts is None:
                    masked_texts = [lm_text_of_masked(t) for t in read_texts(masked)]
                self._add(grid, self.adapted_row(grid, tech, v, masked_texts,
                                                 {**mask_info, "computed": mask_computed}, masked))
            else:
                b = len(self.cache.computed)
                fdir, fmeta = self.fill(v, tech, mdir, mmeta["key"])
                filled = fdir / "filled.jsonl"
                grid.filled_files[(tech, v.name)] = filled
                self._add(grid, self.adapted_row(
                    grid, tech, v, read_texts(filled),
                    {**mask_info, "fill_s": fmeta["seconds"], "filler_ft_s": fmeta.get("filler_ft_s", 0.0),
                     "computed": mask_computed + len(self.cache.computed) - b}, filled))
            mask_computed = 0

    def _add(self, grid: Grid, row: dict[str, Any]) -> None:
        grid.rows.append(row)
        self._write(grid.rows)

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

    # ------------------------------------------------------------------ after a run
    def gap(self, technique: str, word_vocab: int | None = None) -> dict[str, Any]:
        """Where the Baseline0 - Oracle gap of ``technique`` lies (:mod:`veil.experiment.gap`): the test set's words
        labelled by the technique's spans, and each model of ``results.csv`` handed to the per-class NLL once."""
        from veil.downstream import lm
        from veil.experiment import gap

        if technique not in self.spec.techniques:
            raise VeilError(f"technique {technique!r} is not in {self.spec.source} "
                            f"({', '.join(self.spec.techniques)})")
        rows = gap.result_rows(self.out / "results.csv", technique)
        docs, test_h = self.corpus("test", self.spec.test)
        test = [d.text for d in docs]
        spans = self.detect(technique, self.spec.techniques[technique], docs, test_h)
        labels = gap.word_labels(test, [[(s.start, s.end) for s in found] for found in spans],
                                 seen=gap.training_words(load_corpus(self.spec.train)),
                                 vocabulary=gap.word_vocabulary(word_vocab) if word_vocab else None)
        counts = gap.label_word_counts(test, labels)
        tok_labels = None
        per: dict[str, Any] = {}
        for r in rows:
            folder = self.cache.root / r["lm_dir"]
            if not folder.is_dir():
                raise VeilError(f"{folder}: the model of {r['method']} is not in the cache")
            model, vocab = lm.load(folder)
            if tok_labels is None:
                tok_labels = gap.token_labels(vocab, test, labels)
            losses = [float(v) for nll in lm.stream_nll(model, vocab, test, self.lm) for v in nll]
            per[r["method"]] = gap.class_sums(r, losses, tok_labels, counts)
            log.info("gap: %s done", r["method"])
        return gap.gap_table(technique, per, counts, word_vocab)


def run_experiment(path: str | Path, out: str | Path, progress: bool = True, **kwargs: Any) -> list[dict[str, Any]]:
    """Run the experiment file ``path`` into ``out`` (results.csv, results.md, report.html, cache/)."""
    spec = load_spec(path, kwargs.pop("overrides", None))
    runner = ExperimentRunner(spec, Path(out), progress=progress, **kwargs)
    rows = runner.run()
    log.info("stages computed: %d, reused from the cache: %d", len(runner.cache.computed), len(runner.cache.reused))
    return rows
