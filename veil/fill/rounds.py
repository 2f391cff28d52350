"""Fill stage: the MLM filler's *fill -> fine-tune* rounds (paper §3.2, *FT* on top1 / topk fills).

Each round fills the whole masked corpus with the current model (with ``fill``, the in-memory corpus
loop its caller hands down: :func:`veil.run.inmemory.fill_documents`), then fine-tunes it on those
fills (:func:`veil.fill.finetune.train_mlm`); the next round starts from that model. ``mask-free``
data makes one round on the documents with no placeholder. :func:`mlm_finetune` is the MLM filler's
``finetune`` hook.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

from veil.errors import VeilError
from veil.fill.finetune import DATA_SOURCES, MLMTrainConfig, mask_free_texts, save_model, train_mlm
from veil.types import FilledDocument, MaskedDocument

log = logging.getLogger(__name__)


def mlm_finetune(filler_cls: Any, load: Callable[[str | None], tuple[Any, Any]], docs: Sequence[MaskedDocument],
                 output_dir: str | Path, *, texts: Sequence[str] | None = None, data: str = "mask-free",
                 model: str | None = None, rounds: int = 1, k: int = 10, seed: int = 0, progress: bool = True,
                 fill: Callable[..., Sequence[FilledDocument]] | None = None, **options: Any) -> dict[str, Any]:
    """The MLM filler's ``finetune`` hook: on ``texts``, or ``rounds`` of fill -> fine-tune on ``data``.
    ``options`` are :class:`veil.fill.finetune.MLMTrainConfig` fields (epochs, max_steps, lr, ...)."""
    try:
        cfg = MLMTrainConfig(**{"seed": seed, **options})
    except TypeError as e:
        raise VeilError(f"mlm fine-tuning: {e}") from None
    if texts is None:
        return {"rounds": finetune_rounds(docs, output_dir, filler_cls=filler_cls, load=load, model=model, data=data,
                                          rounds=rounds, cfg=cfg, k=k, seed=seed, progress=progress, fill=fill)}
    if rounds != 1:
        raise VeilError("given training texts make one round; drop rounds")
    mdl, tok = load(model)
    info = train_mlm(mdl, tok, texts, cfg, progress=progress)
    info.update(data="given texts", texts=len(texts), base_model=model)
    save_model(mdl, tok, Path(output_dir), info)
    return info


def finetune_rounds(docs: Sequence[MaskedDocument], output_dir: str | Path, *, filler_cls: Any,
                    load: Callable[[str | None], tuple[Any, Any]], model: str | None = None,
                    data: str = "mask-free", rounds: int = 1, cfg: MLMTrainConfig | None = None,
                    k: int = 10, seed: int = 0, fill_batch_size: int = 64, filler_options: dict | None = None,
                    model_obj: Any = None, tokenizer: Any = None, progress: bool = True,
                    fill: Callable[..., Sequence[FilledDocument]] | None = None) -> list[dict[str, Any]]:
    """``rounds`` x (fill the corpus with the current model if ``data`` is top1/topk -> MLM fine-tune).

    Round r's model is saved to ``output_dir/round-r``; the last round also to ``output_dir``.
    A round whose folder is complete is loaded instead of trained again (resume). ``filler_cls`` fills
    with a loaded model (``model_obj=``, ``tokenizer=``), ``load(name_or_folder)`` loads one: the MLM
    filler passes itself and its loader (:meth:`veil.fill.mlm.MLMFiller.finetune`). ``fill(filler, docs,
    progress)`` fills in memory (top1 / topk data; the fill stage cannot reach the corpus loop itself).
    """
    import torch

    if data not in DATA_SOURCES:
        raise VeilError(f"unknown training data {data!r}; choose from {', '.join(DATA_SOURCES)}")
    if rounds < 1:
        raise VeilError("rounds must be at least 1")
    if data == "mask-free" and rounds > 1:
        raise VeilError("mask-free training text is the same in every round; use --epochs instead of --rounds")
    if data != "mask-free" and fill is None:
        raise VeilError(f"{data} rounds fill the corpus: pass fill= (veil.run.inmemory.fill_documents)")
    cfg = cfg or MLMTrainConfig(seed=seed)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if model_obj is not None:
        cur_model, tok = model_obj, tokenizer
    else:
        cur_model, tok = load(model)
    summaries: list[dict[str, Any]] = []
    for r in range(1, rounds + 1):
        round_dir = out / f"round-{r}"
        if (round_dir / "config.json").is_file():
            log.info("round %d: %s is complete; loading it", r, round_dir)
            cur_model, tok = load(str(round_dir))
            summaries.append({"round": r, "resumed": True})
            continue
        if data == "mask-free":
            texts = mask_free_texts(docs)
            log.info("round %d: %d mask-free documents of %d", r, len(texts), len(docs))
        else:
            filler = filler_cls(strategy=data, k=k, seed=seed + r - 1, batch_size=fill_batch_size,
                                model_obj=cur_model, tokenizer=tok, **(filler_options or {}))
            texts = [d.text for d in fill(filler, docs, progress)]
            log.info("round %d: filled %d documents with %s", r, len(texts), data)
        info = train_mlm(cur_model, tok, texts, cfg, progress=progress)
        info.update(round=r, data=data, texts=len(texts), base_model=model, config=asdict(cfg))
        log.info("round %d: %d steps, loss %.3f -> %.3f", r, info["steps"], info["first_loss"], info["mean_loss_last_10pct"])
        cur_model = cur_model.to("cpu") if torch.cuda.is_available() else cur_model
        save_model(cur_model, tok, round_dir, info)
        summaries.append(info)
    # the last round is also the folder's own model, so `--model OUT` loads it
    last = out / f"round-{rounds}"
    for name in os.listdir(last):
        src = last / name
        if src.is_file():
            from veil.io.atomic import atomic_write

            with open(src, "rb") as f, atomic_write(out / name, "wb") as dest:
                shutil.copyfileobj(f, dest)
    return summaries
