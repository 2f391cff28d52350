"""Padding-free encoder passes for BERT-family masked LMs on a CPU (the ``mlm`` filler's fast path).

:class:`PackedEncoder` runs the layers of a ``BertModel`` / ``RobertaModel`` (and their relatives
with the same layer structure) on *packed* tokens: the sentences of a chunk are concatenated into
one ``(tokens, hidden)`` matrix, so every linear layer, layer norm and activation runs on real
tokens only (no padding, however mixed the lengths), with as many rows per matrix product as the
token budget allows. Only self-attention needs the sentence boundaries: the sentences are sorted by
length, so those of equal length are contiguous and attend as one ``(n, heads, L, head_dim)`` batch
without a mask.

The last layer is evaluated at the target position only: its keys and values need every token,
but its query, attention output, feed-forward block and layer norms are needed at the one position
whose vocabulary logits are read (the same reasoning as applying the LM head only at the target).

It calls the model's own sub-modules (``query``, ``key``, ``value``, ``attention.output``,
``intermediate``, ``output``), so it follows the model's activation, layer-norm epsilon and weights
whatever their dtype, including dynamically quantised linear layers; the query / key / value
projections are fused into one matrix product (re-derived if the weights change in place).

The feed-forward block's first product runs, for an fp32 exact GELU on a CPU, as oneDNN's linear
with the bias and the GELU fused (``torch.ops.mkldnn._linear_pointwise``): 3-5% faster in
interleaved runs, Top-1 unchanged. Measured and left out (no gain beyond the noise of a shared
1-thread CPU): MKL-packed weights (``torch.ops.mkl._mkl_linear``, which uses them only for the
exact row count they were packed for), feed-forward blocks of 128-256 rows kept in L2, oneDNN's
linear with the residual addition fused, and token budgets from 256 to 2048.
"""

from __future__ import annotations

from typing import Any, Sequence

#: model types whose encoder layers have the BERT structure this module runs
PACKED_MODEL_TYPES = ("bert", "roberta", "xlm-roberta", "camembert")
TOKEN_BUDGET = 512  # tokens per packed chunk


def packed_supported(model: Any) -> bool:
    """Whether :class:`PackedEncoder` can run ``model`` (a ``*ForMaskedLM`` of the BERT family)."""
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "model_type", None) not in PACKED_MODEL_TYPES:
        return False
    if getattr(cfg, "is_decoder", False) or getattr(cfg, "add_cross_attention", False):
        return False
    if getattr(cfg, "position_embedding_type", "absolute") not in (None, "absolute"):
        return False
    if getattr(cfg, "chunk_size_feed_forward", 0):
        return False
    base = getattr(model, "base_model", None)
    emb = getattr(base, "embeddings", None)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    if emb is None or not layers or not all(hasattr(emb, a) for a in ("word_embeddings", "position_embeddings")):
        return False
    for layer in layers:
        sa = getattr(getattr(layer, "attention", None), "self", None)
        if sa is None or not all(hasattr(sa, a) for a in ("query", "key", "value")):
            return False
        ao, inter, out = getattr(layer.attention, "output", None), getattr(layer, "intermediate", None), \
            getattr(layer, "output", None)
        if not (all(hasattr(m, "dense") and hasattr(m, "LayerNorm") for m in (ao, out))
                and hasattr(inter, "dense") and hasattr(inter, "intermediate_act_fn")):
            return False
    return True


class PackedEncoder:
    """Final hidden states at one target position per sentence, computed on packed (unpadded) tokens."""

    def __init__(self, model: Any, token_budget: int = TOKEN_BUDGET) -> None:
        if not packed_supported(model):
            raise ValueError(f"no packed encoder for {type(model).__name__}")
        cfg = model.config
        base = model.base_model
        self.emb = base.embeddings
        self.layers = list(base.encoder.layer)
        self.heads = int(cfg.num_attention_heads)
        self.hidden = int(cfg.hidden_size)
        self.head_dim = self.hidden // self.heads
        # RoBERTa numbers positions from padding_idx + 1 (no padding here, so every token counts)
        self.pos_offset = 0
        if cfg.model_type != "bert":
            self.pos_offset = int(getattr(self.emb, "padding_idx", cfg.pad_token_id)) + 1
        self.has_token_types = hasattr(self.emb, "token_type_embeddings")
        self.token_budget = max(1, int(token_budget))
        self._fused: dict[Any, tuple] = {}
        self.fuse_gelu = True

    # --- linear layers --------------------------------------------------------------------------
    def _linear(self, key: Any, mods: Sequence[Any], x: Any) -> Any:
        """``mods`` (linear layers reading the same input) applied to ``x``, outputs concatenated:
        plain ``nn.Linear`` layers as one matrix product with their weights fused (the fused copy
        is rebuilt when a weight changes in place, e.g. training between fills), anything else
        (dynamically quantised layers) module by module."""
        import torch

        from veil.models.cpu_linear import fast_linear, is_linear

        if len(mods) == 1:
            return mods[0](x)
        if not all(is_linear(m) and m.bias is not None for m in mods):
            return torch.cat([m(x) for m in mods], dim=-1)
        stamp = tuple((p.data_ptr(), p._version) for m in mods for p in (m.weight, m.bias))
        entry = self._fused.get(key)
        if entry is None or entry[0] != stamp:
            entry = self._fused[key] = (stamp, torch.cat([m.weight for m in mods]).detach(),
                                        torch.cat([m.bias for m in mods]).detach())
        return fast_linear(x, entry[1], entry[2])

    # --- attention ------------------------------------------------------------------------------
    def _attend(self, sa: Any, q: Any, k: Any, v: Any, runs: Sequence[tuple[int, int, int, int]],
                q_per_seq: bool) -> Any:
        """Self-attention within each sentence. ``runs``: (first row, first sentence, sentences,
        length) of sentences of equal length; ``q_per_seq``: ``q`` has one row per sentence (the
        target), else one per token."""
        import torch

        sdpa = torch.nn.functional.scaled_dot_product_attention
        heads, dh = self.heads, self.head_dim
        scale = getattr(sa, "scaling", dh ** -0.5)
        out = torch.empty_like(q)
        for r0, s0, n, L in runs:
            kk = k[r0:r0 + n * L].view(n, L, heads, dh).transpose(1, 2)
            vv = v[r0:r0 + n * L].view(n, L, heads, dh).transpose(1, 2)
            if q_per_seq:
                qq = q[s0:s0 + n].view(n, 1, heads, dh).transpose(1, 2)
                out[s0:s0 + n] = sdpa(qq, kk, vv, scale=scale).transpose(1, 2).reshape(n, heads * dh)
            else:
                qq = q[r0:r0 + n * L].view(n, L, heads, dh).transpose(1, 2)
                out[r0:r0 + n * L] = sdpa(qq, kk, vv, scale=scale).transpose(1, 2).reshape(n * L, heads * dh)
        return out

    # --- the pass -------------------------------------------------------------------------------
    def chunks(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices sorted by length, cut into chunks of at most ``token_budget`` tokens (a longer
        sentence is a chunk of its own)."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        out: list[list[int]] = []
        cur: list[int] = []
        tokens = 0
        for i in order:
            if cur and tokens + lengths[i] > self.token_budget:
                out.append(cur)
                cur, tokens = [], 0
            cur.append(i)
            tokens += lengths[i]
        if cur:
            out.append(cur)
        return out

    def hidden_at_targets(self, encoded: Sequence[tuple[list[int], int]], device: Any = None) -> Any:
        """Last-layer hidden state at each sentence's target position, one row per sentence, in input order."""
        import torch

        n = len(encoded)
        result = None
        for idx in self.chunks([len(ids) for ids, _ in encoded]):
            flat: list[int] = []
            pos: list[int] = []
            targets: list[int] = []
            runs: list[tuple[int, int, int, int]] = []
            for s, i in enumerate(idx):
                ids, where = encoded[i]
                L = len(ids)
                if runs and runs[-1][3] == L:
                    r0, s0, m, _ = runs[-1]
                    runs[-1] = (r0, s0, m + 1, L)
                else:
                    runs.append((len(flat), s, 1, L))
                targets.append(len(flat) + where)
                flat.extend(ids)
                pos.extend(range(self.pos_offset, self.pos_offset + L))
            h = self._forward(torch.tensor(flat, device=device), torch.tensor(pos, device=device),
                              torch.tensor(targets, device=device), runs)
            if result is None:
                result = torch.empty((n, h.shape[-1]), dtype=h.dtype, device=h.device)
            result[torch.tensor(idx, device=h.device)] = h
        return result

    def _forward(self, ids: Any, pos: Any, targets: Any, runs: Sequence[tuple[int, int, int, int]]) -> Any:
        import torch

        kw = {"token_type_ids": torch.zeros_like(ids)[None]} if self.has_token_types else {}
        x = self.emb(input_ids=ids[None], position_ids=pos[None], **kw)[0]
        last = len(self.layers) - 1
        H = self.hidden
        for i, layer in enumerate(self.layers):
            sa, ao = layer.attention.self, layer.attention.output
            if i < last:
                q, k, v = self._linear((i, "qkv"), (sa.query, sa.key, sa.value), x).split(H, dim=-1)
                ctx = self._attend(sa, q, k, v, runs, q_per_seq=False)
            else:  # keys and values everywhere, the rest at the targets only
                k, v = self._linear((i, "kv"), (sa.key, sa.value), x).split(H, dim=-1)
                x = x[targets]
                ctx = self._attend(sa, self._linear((i, "q"), (sa.query,), x), k, v, runs, q_per_seq=True)
            # BertSelfOutput, BertIntermediate, BertOutput (dropout is the identity in eval mode)
            a = ao.LayerNorm(ao.dense(ctx) + x)
            x = layer.output.LayerNorm(layer.output.dense(self._intermediate(layer.intermediate, a)) + a)
        return x

    def _intermediate(self, inter: Any, a: Any) -> Any:
        """``BertIntermediate``: dense + activation; an fp32 exact GELU runs as oneDNN's linear with
        the bias and the GELU fused into the product (no separate passes over tokens x FFN)."""
        import torch

        if self.fuse_gelu and self._fusable(inter.dense) and self._exact_gelu(inter.intermediate_act_fn):
            return torch.ops.mkldnn._linear_pointwise(a, inter.dense.weight, inter.dense.bias, "gelu", [], "none")
        return inter.intermediate_act_fn(inter.dense(a))

    @staticmethod
    def _exact_gelu(act: Any) -> bool:
        import torch

        return getattr(act, "act", act) is torch.nn.functional.gelu

    @staticmethod
    def _fusable(dense: Any) -> bool:
        """An fp32 CPU ``nn.Linear`` with a bias, and oneDNN's fused linear available."""
        import torch

        from veil.models.cpu_linear import is_linear, onednn_available

        return (is_linear(dense) and dense.bias is not None and dense.weight.dtype == torch.float32
                and dense.weight.device.type == "cpu" and onednn_available())
