"""The one training loop (veil/training.py): steps, skipped batches, clipping, no draw past the end."""

from __future__ import annotations

import torch

from veil.training import optimise


def _problem():
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.zeros(3))
    target = torch.tensor([1.0, -2.0, 3.0])
    return w, target, torch.optim.SGD([w], lr=0.1)


def test_runs_the_steps_and_lowers_the_loss_without_drawing_past_the_end():
    w, target, opt = _problem()
    drawn = []

    def batches():
        i = 0
        while True:
            drawn.append(i)
            yield i
            i += 1

    losses = optimise(batches(), lambda _: ((w - target) ** 2).sum(), opt, steps=30, progress=False)
    assert len(losses) == 30 and losses[-1] < 0.1 * losses[0]
    assert drawn == list(range(30))  # the generator's random draws stay exactly the caller's


def test_skipped_batches_are_no_steps_and_an_exhausted_iterator_ends_the_run():
    w, target, opt = _problem()
    losses = optimise(range(10), lambda i: None if i % 2 else ((w - target) ** 2).sum(), opt, progress=False)
    assert len(losses) == 5


def test_clipping_bounds_the_step():
    w, target, opt = _problem()
    optimise([0], lambda _: 100 * ((w - target) ** 2).sum(), opt, clip_params=[w], clip=1.0, progress=False)
    assert float(w.norm()) <= 0.1 + 1e-6  # lr 0.1 x a gradient clipped to norm 1
