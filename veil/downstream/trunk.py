"""Train / evaluate stage: the frozen trunk shared by the downstream LMs that adapt only their top layers.

With ``lm.lora_layers: N`` every adapted LM shares the pre-trained model's embeddings and its bottom
layers, weight for weight. Evaluating eleven LMs on one test set (perplexity, the ASR hypotheses) then
computes those layers' output eleven times over the same token batches; :data:`TRUNK` keeps it after the
first and runs only the top N layers and the output layer for the others (about 40% of a SmolLM2-135M
forward with N = 8). A model takes a stored state only when a hash of its own embeddings and bottom layers
(and config) equals the one that produced it, so the logits are those of the full forward (checked once per
architecture: a model whose forward does not take ``inputs_embeds`` straight into its layers turns the
trunk off).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Iterator

from veil.errors import VeilError

if TYPE_CHECKING:
    from veil.downstream.lm_settings import LMSettings

log = logging.getLogger(__name__)


class FrozenTrunk:
    """Hidden states entering layer ``k`` of a pre-trained LM, per token batch, shared by every model whose
    embeddings and layers below ``k`` are identical (see the module docstring)."""

    def __init__(self, max_bytes: int = 2 << 30) -> None:
        self.max_bytes = max_bytes
        self.states: dict[tuple[Any, ...], Any] = {}
        self.bytes = 0
        self.verified: set[str] = set()
        self.refused: set[str] = set()
        self.hits = self.misses = 0

    def clear(self) -> None:
        self.states.clear()
        self.bytes = 0
        self.hits = self.misses = 0

    @staticmethod
    def _stack(model: Any) -> tuple[Any, str, Any]:
        """(parent module, attribute, the transformer layer list) of a causal LM."""
        name = layer_stack_name(model)
        parent_name, _, attr = name.rpartition(".")
        return (model.get_submodule(parent_name) if parent_name else model), attr, model.get_submodule(name)

    def fingerprint(self, model: Any, k: int) -> str | None:
        """A hash of what the hidden state entering layer ``k`` depends on, and then some: the model's class,
        config (less its name and path) and every parameter but those of layers ``k`` and above (the
        embeddings, the bottom layers, and the final norm and output layer, which cost little to include).
        None where the model has no layer ``k``."""
        import torch

        # memoised on the model while no parameter has changed in place (an optimiser step, a merge)
        version = sum(p._version for p in model.parameters())
        memo = getattr(model, "_veil_trunk_fingerprints", {})
        if memo.get(k, (None, -1))[1] == version:
            return memo[k][0]
        try:
            _, _, stack = self._stack(model)
        except VeilError:
            return None
        if not 0 < k < len(stack):
            return None
        h = _weights_hash()
        cfg = {a: b for a, b in model.config.to_dict().items()
               if not a.startswith("_") and a not in ("transformers_version", "dtype", "torch_dtype", "architectures")}
        h.update(type(model).__name__.encode())
        h.update(json.dumps(cfg, sort_keys=True, default=str).encode())
        h.update(str(k).encode())
        top = {id(p) for layer in list(stack)[k:] for p in layer.parameters()}
        seen: set[int] = set()
        for name, p in model.named_parameters(remove_duplicate=False):
            if id(p) in top or id(p) in seen:
                continue
            seen.add(id(p))
            t = p.detach()
            h.update(f"{name}:{tuple(t.shape)}:{t.dtype}".encode())
            h.update(t.contiguous().cpu().view(-1).view(torch.uint8).numpy())
        memo[k] = (h.hexdigest(), version)
        model._veil_trunk_fingerprints = memo
        return memo[k][0]

    def logits(self, model: Any, x: Any, attn: Any, k: int, tag: str) -> Any:
        """``model(input_ids=x, attention_mask=attn).logits``, computing only layers ``k`` and above when the
        state entering layer ``k`` of this batch is stored."""
        import contextlib
        import hashlib

        fp = self.fingerprint(model, k)
        arch = type(model).__name__
        if fp is None or arch in self.refused:
            return model(input_ids=x, attention_mask=attn).logits
        batch = hashlib.blake2b(x.cpu().numpy().tobytes() + attn.cpu().numpy().tobytes(), digest_size=16).hexdigest()
        key = (fp, tag, tuple(x.shape), batch)
        parent, attr, stack = self._stack(model)

        @contextlib.contextmanager
        def top_only() -> Iterator[None]:
            import torch

            setattr(parent, attr, torch.nn.ModuleList(list(stack)[k:]))
            try:
                yield
            finally:
                setattr(parent, attr, stack)

        h = self.states.get(key)
        if h is not None:
            self.hits += 1
            with top_only():
                return model(inputs_embeds=h.to(x.device), attention_mask=attn).logits
        self.misses += 1
        seen: dict[str, Any] = {}

        def grab(_module: Any, args: Any, kwargs: Any) -> None:
            seen["h"] = args[0] if args else kwargs["hidden_states"]

        hook = stack[k].register_forward_pre_hook(grab, with_kwargs=True)
        try:
            logits = model(input_ids=x, attention_mask=attn).logits
        finally:
            hook.remove()
        h = seen["h"].detach()
        if arch not in self.verified:  # once per architecture: the top layers alone give the same logits
            with top_only():
                again = model(inputs_embeds=h, attention_mask=attn).logits
            valid = attn.bool()
            if not bool((again[valid] - logits[valid]).abs().max() <= 1e-4 * (1 + logits[valid].abs().max())):
                log.warning("%s: its layers above %d alone do not reproduce its logits; every evaluation runs the "
                            "whole model", arch, k)
                self.refused.add(arch)
                return logits
            self.verified.add(arch)
        size = h.numel() * h.element_size()
        if self.bytes + size <= self.max_bytes:
            self.states[key] = h.cpu()
            self.bytes += size
        return logits


def layer_stack_name(model: Any) -> str:
    """The module name of a causal LM's longest list of identical transformer layers."""
    import torch

    stacks = [(name, m) for name, m in model.named_modules()
              if isinstance(m, torch.nn.ModuleList) and len(m) and all(type(x) is type(m[0]) for x in m)]
    if not stacks:
        raise VeilError("lm.lora_layers: the model has no list of transformer layers")
    return max(stacks, key=lambda x: len(x[1]))[0]


def _weights_hash() -> Any:
    """A 128-bit hash fast enough for 100M parameters: xxh3 (xxhash, 10 GB/s here), else SHA-256 (1.4 GB/s)."""
    try:
        import xxhash

        return xxhash.xxh3_128()
    except ImportError:
        import hashlib

        return hashlib.sha256()


#: the process's shared trunk states (evaluation only; training never reads it)
TRUNK = FrozenTrunk()


def trunk_for(s: "LMSettings", model: Any, dev: str) -> tuple[int, str] | None:
    k = trunk_layer(s, model)
    return None if k is None else (k, f"fp32:{dev}")  # evaluations run in fp32 (lm.autocast)


def trunk_layer(s: "LMSettings", model: Any) -> int | None:
    """The layer below which every LM of these settings shares the pre-trained model (``lm.lora_layers``
    adapters on a ``lm.model``), None where nothing is shared."""
    if not s.model or s.adapt != "lora" or s.lora_layers is None or not s.share_trunk:
        return None
    try:
        _, _, stack = FrozenTrunk._stack(model)
    except VeilError:
        return None
    k = len(stack) - s.lora_layers
    return k if k > 0 else None
