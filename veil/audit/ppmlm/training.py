"""Audit stage, PPMLM: fine-tuning a masked LM with a method (DP-SGD through Opacus for ``dp``)."""

from __future__ import annotations

import random
from typing import Any, Iterator

from veil.audit.ppmlm.methods import Chunk, Method, TrainConfig
from veil.audit.ppmlm.sequences import choose_targets, masked_example
from veil.errors import VeilError


class _MaskingDataset:
    """Fresh whole-word masking at every access, so each epoch draws new targets."""

    def __init__(self, chunks: list[Chunk], tok: Any, cfg: TrainConfig, respect_protection: bool, seed: int):
        self.chunks, self.tok, self.cfg, self.respect = chunks, tok, cfg, respect_protection
        self.rng = random.Random(seed)

    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, i: int) -> Any:
        import torch

        c = self.chunks[i]
        t = choose_targets(c, self.cfg.mask_share, self.rng, self.respect)
        ids, am, lab = masked_example(c, t, self.tok.mask_token_id, self.tok.pad_token_id, self.cfg.max_length)
        return torch.tensor(ids), torch.tensor(am), torch.tensor(lab)


def _freeze_for(model: Any, cfg: TrainConfig, dp: bool) -> None:
    base = getattr(model, model.base_model_prefix)
    if cfg.trainable_layers is not None:
        for p in base.parameters():
            p.requires_grad_(False)
        layers = base.encoder.layer
        for layer in layers[max(0, len(layers) - cfg.trainable_layers):]:
            for p in layer.parameters():
                p.requires_grad_(True)
    if dp:
        # The decoder shares its weight with the input embeddings and its bias with the head's
        # ``bias`` attribute; Opacus computes per-sample gradients module by module and cannot
        # attribute a parameter that two modules own, so the tied vocabulary projection (and the
        # word embeddings it is tied to) stays frozen under DP-SGD.
        model.get_input_embeddings().weight.requires_grad_(False)
        out = model.get_output_embeddings()
        for p in out.parameters():
            p.requires_grad_(False)
        for m in model.modules():
            b = getattr(m, "bias", None)
            if b is not None and b is getattr(out, "bias", None):
                b.requires_grad_(False)


def train(model: Any, tok: Any, chunks: list[Chunk], method: Method, cfg: TrainConfig) -> dict[str, Any]:
    """Fine-tune ``model`` in place; returns training statistics (losses, steps, DP epsilon)."""
    import torch
    from torch.utils.data import DataLoader
    from veil.training import linear_schedule, optimise

    from veil.models.minilm import masked_positions_loss

    torch.manual_seed(cfg.seed)
    respect = method.protect_direct or method.protect_indirect
    usable = [c for c in chunks if choose_targets(c, cfg.mask_share, random.Random(0), respect)]
    if not usable:
        raise VeilError(f"{method.name}: no sequence has a word eligible as a masking target")
    ds = _MaskingDataset(usable, tok, cfg, respect, cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    loader = DataLoader(ds, batch_size=cfg.batch_size, shuffle=True, generator=gen)
    _freeze_for(model, cfg, method.dp)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    stats: dict[str, Any] = {"sequences": len(usable), "trainable_parameters": sum(p.numel() for p in params)}
    engine = None
    # RoBERTa-style models count positions from padding_idx + 1
    position_offset = (model.config.pad_token_id + 1) if model.config.model_type in (
        "roberta", "xlm-roberta", "camembert", "longformer") else 0
    with_token_types = "token_type_ids" in tok.model_input_names
    model.train()
    if method.dp:
        model, opt, loader, engine = make_private(model, opt, loader, cfg)
        # noise and clipping as the DP optimiser holds them (what Opacus really applies)
        stats["dp"] = {"noise_multiplier": float(opt.noise_multiplier), "target_epsilon": cfg.dp_epsilon,
                       "delta": cfg.dp_delta, "max_grad_norm": float(opt.max_grad_norm),
                       "grad_sample_mode": cfg.dp_grad_sample_mode,
                       "unit": "sequence (sample-level DP, not person-level)"}
    steps = cfg.epochs * len(loader)
    sched = linear_schedule(opt, max(1, steps))

    def batches() -> Iterator[Any]:
        for _ in range(cfg.epochs):
            yield from loader

    def loss_of(batch: Any) -> Any:
        ids, am, lab = batch
        if ids.shape[0] == 0:  # Poisson sampling can draw an empty batch (p ~ 1e-7 here): skip it
            return None
        width = int(am.sum(1).max())  # drop columns that are padding in every row
        ids, am, lab = ids[:, :width], am[:, :width], lab[:, :width]
        if method.dp:
            return per_sample_masked_loss(model, ids, am, lab, position_offset, with_token_types)
        return masked_positions_loss(model, ids, am, lab)

    # DP-SGD clips per sample inside Opacus's optimiser: no global clipping on top of it
    losses = optimise(batches(), loss_of, opt, sched, clip_params=None if method.dp else params,
                      desc=f"fine-tune {method.name}", window=20, count_skipped=True, total=steps)
    if engine is not None:
        stats["dp"]["epsilon_spent"] = float(engine.get_epsilon(cfg.dp_delta))
        model = model._module  # unwrap the GradSampleModule; the weights are shared
    model.eval()
    stats.update(steps=len(losses), loss_first=losses[0] if losses else None,
                 loss_last_20=sum(losses[-20:]) / max(1, len(losses[-20:])))
    stats["model"] = model
    return stats


def per_sample_masked_loss(model: Any, ids: Any, am: Any, labels: Any, position_offset: int = 0,
                           with_token_types: bool = True) -> Any:
    """DP-SGD's loss: each sequence's mean cross-entropy over its masked tokens, averaged over the batch.

    Opacus clips *per-sample* gradients, so every layer must keep the batch dimension: the masked
    positions are gathered into a padded (batch, max masked, hidden) tensor before the vocabulary
    projection (which costs more than the encoder when applied to every position), and position
    and token-type ids are passed with a batch dimension (BERT's defaults are (1, L) buffers, for
    which Opacus would compute per-sample gradients with a batch of 1). Averaging per sequence
    first makes the batch loss a mean of per-sample losses, the reduction Opacus assumes.
    """
    import torch

    from veil.models.minilm import mlm_head

    inner = getattr(model, "_module", model)  # under Opacus: the GradSampleModule's wrapped model
    base = getattr(inner, inner.base_model_prefix)
    pos = torch.arange(ids.shape[1]).expand_as(ids).contiguous() + position_offset
    extra = {"token_type_ids": torch.zeros_like(ids)} if with_token_types else {}
    hidden = base(input_ids=ids, attention_mask=am, position_ids=pos, **extra).last_hidden_state
    sel = labels != -100
    counts = sel.sum(1)
    m = max(1, int(counts.max()))
    order = torch.argsort((~sel).to(torch.int8), dim=1, stable=True)[:, :m]  # masked positions first
    valid = torch.arange(m).expand(ids.shape[0], m) < counts[:, None]
    h = hidden.gather(1, order[..., None].expand(-1, -1, hidden.shape[-1]))
    logits = mlm_head(inner)(h)  # (batch, m, vocab)
    tgt = labels.gather(1, order).masked_fill(~valid, -100)
    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), tgt, ignore_index=-100, reduction="none")
    per_sample = (ce * valid).sum(1) / counts.clamp(min=1)
    return per_sample.mean()


def make_private(model: Any, opt: Any, loader: Any, cfg: TrainConfig) -> tuple[Any, Any, Any, Any]:
    """Wrap model, optimiser and loader for DP-SGD with Opacus, calibrated to (epsilon, delta)."""
    try:
        from opacus import PrivacyEngine
    except ImportError:
        raise VeilError("the dp method needs opacus (pip install 'opacus==1.6.0')") from None
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]ecure RNG.*")
        engine = PrivacyEngine(accountant="rdp")
        model, opt, loader = engine.make_private_with_epsilon(
            module=model, optimizer=opt, data_loader=loader, target_epsilon=cfg.dp_epsilon,
            target_delta=cfg.dp_delta, epochs=cfg.epochs, max_grad_norm=cfg.dp_max_grad_norm,
            grad_sample_mode=cfg.dp_grad_sample_mode, poisson_sampling=True)
    return model, opt, loader, engine
