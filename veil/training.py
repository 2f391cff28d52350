"""Train / evaluate stage: the one optimisation loop of every model veil trains.

The downstream LM (:mod:`veil.downstream.lm`), filler fine-tuning (:mod:`veil.fill.finetune`), LoRA
(:mod:`veil.fill.lora`), the MiniLM warm-up (:mod:`veil.models.minilm`) and the PPMLM methods
(:mod:`veil.audit.ppmlm.training`) differ in their data, loss, optimiser and schedule, not in the
loop. Each builds those (its batches are a generator, so its random draws stay its own) and hands
them to :func:`optimise`, which owns the step: zero the gradients, backward, clip, optimiser and
schedule step, loss record, progress bar. Opacus's DP-SGD optimiser goes through it unchanged
(it clips per sample itself, so the caller passes no ``clip_params``).

:func:`adamw` is the one optimiser set-up: AdamW with a linear warm-up and a linear decay (to 0, or to a
floor), the schedule every model here trains with; :func:`matrix_decay_groups` is the usual split
of weight decay (matrices decay, biases and norms do not).

transformers' ``Trainer`` was the alternative; it would have owned the data order and the
schedules too, which would have changed every cached result and the DP-SGD wiring.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable


def optimise(batches: Iterable[Any], loss_of: Callable[[Any], Any], optimizer: Any, scheduler: Any = None, *,
             steps: int | None = None, clip_params: Iterable[Any] | None = None, clip: float = 1.0,
             desc: str = "train", progress: bool = True, window: int = 1, count_skipped: bool = False,
             total: int | None = None, on_step: Callable[[int, float], None] | None = None) -> list[float]:
    """Run optimiser steps over ``batches``; returns the loss of every step.

    ``loss_of(batch)`` returns the loss tensor, or None to skip the batch (no step). Stops after
    ``steps`` steps, or when ``batches`` is exhausted (``steps=None``: one pass, e.g. N epochs of a
    loader). ``clip_params``: clip their gradient norm to ``clip`` before each step. ``window``: the
    progress bar shows the mean loss of the last ``window`` steps. ``count_skipped``: a skipped batch
    still advances the bar (its total counts batches, not steps). ``total``: the bar's length when
    ``steps`` is None. ``on_step(step, loss)``: called after each step (1-based), e.g. to log.
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
        if on_step is not None:
            on_step(len(losses), losses[-1])
        bar.update(1)
        recent = losses[-window:]
        bar.set_postfix(loss=f"{sum(recent) / len(recent):.3f}", refresh=False)
    bar.close()
    return losses


def adamw(params: Iterable[Any], *, lr: float, total: int, warmup: int = 0, weight_decay: float = 0.0,
          floor: float = 0.0, warmup_from_one: bool = False) -> tuple[Any, Any]:
    """``(optimizer, scheduler)``: AdamW over ``params`` (tensors, or parameter groups that set their own
    ``lr`` / ``weight_decay``), its rate rising linearly over ``warmup`` steps, then falling linearly to
    ``floor`` x ``lr`` at step ``total``.

    The warm-up starts at 0 (transformers' ``get_linear_schedule_with_warmup``, which this equals with
    ``floor=0``), or at ``1 / warmup`` with ``warmup_from_one`` (no step at rate 0).
    """
    import torch

    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    return optimizer, linear_schedule(optimizer, total, warmup, floor=floor, warmup_from_one=warmup_from_one)


def linear_schedule(optimizer: Any, total: int, warmup: int = 0, *, floor: float = 0.0,
                    warmup_from_one: bool = False) -> Any:
    """The schedule of :func:`adamw` on an optimiser built elsewhere (e.g. wrapped by Opacus for DP-SGD)."""
    import torch

    first = 1 if warmup_from_one else 0

    def factor(step: int) -> float:
        if step < warmup:
            return (step + first) / max(1, warmup)
        return max(floor, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def matrix_decay_groups(params: Iterable[Any], weight_decay: float) -> list[dict[str, Any]]:
    """Two parameter groups: weight decay on the matrices (2+ dimensions), none on biases and norms."""
    params = list(params)
    return [{"params": [p for p in params if p.ndim > 1], "weight_decay": weight_decay},
            {"params": [p for p in params if p.ndim <= 1], "weight_decay": 0.0}]
