"""Train / evaluate stage: the one optimisation loop of every model veil trains.

The downstream LM (:mod:`veil.downstream.lm`), filler fine-tuning (:mod:`veil.fill.finetune`), LoRA
(:mod:`veil.fill.lora`), the MiniLM warm-up (:mod:`veil.models.minilm`) and the PPMLM methods
(:mod:`veil.audit.ppmlm.training`) differ in their data, loss, optimiser and schedule, not in the
loop. Each builds those (its batches are a generator, so its random draws stay its own) and hands
them to :func:`optimise`, which owns the step: zero the gradients, backward, clip, optimiser and
schedule step, loss record, progress bar. Opacus's DP-SGD optimiser goes through it unchanged
(it clips per sample itself, so the caller passes no ``clip_params``).

transformers' ``Trainer`` was the alternative; it would have owned the data order and the
schedules too, which would have changed every cached result and the DP-SGD wiring.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable


def optimise(batches: Iterable[Any], loss_of: Callable[[Any], Any], optimizer: Any, scheduler: Any = None, *,
             steps: int | None = None, clip_params: Iterable[Any] | None = None, clip: float = 1.0,
             desc: str = "train", progress: bool = True, window: int = 1, count_skipped: bool = False,
             total: int | None = None) -> list[float]:
    """Run optimiser steps over ``batches``; returns the loss of every step.

    ``loss_of(batch)`` returns the loss tensor, or None to skip the batch (no step). Stops after
    ``steps`` steps, or when ``batches`` is exhausted (``steps=None``: one pass, e.g. N epochs of a
    loader). ``clip_params``: clip their gradient norm to ``clip`` before each step. ``window``: the
    progress bar shows the mean loss of the last ``window`` steps. ``count_skipped``: a skipped batch
    still advances the bar (its total counts batches, not steps). ``total``: the bar's length when
    ``steps`` is None.
    """
    from torch.nn.utils import clip_grad_norm_
    from tqdm.auto import tqdm

    clip_params = list(clip_params) if clip_params is not None else None
    losses: list[float] = []
    bar = tqdm(total=steps if steps is not None else total, desc=desc, unit="step", disable=not progress, leave=False)
    it = iter(batches)
    while steps is None or len(losses) < steps:  # checked first: no batch is drawn past the last step
        try:
            batch = next(it)
        except StopIteration:
            break
        loss = loss_of(batch)
        if loss is None:
            if count_skipped:
                bar.update(1)
            continue
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip_params is not None:
            clip_grad_norm_(clip_params, clip)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(float(loss.detach()))
        bar.update(1)
        recent = losses[-window:]
        bar.set_postfix(loss=f"{sum(recent) / len(recent):.3f}", refresh=False)
    bar.close()
    return losses
