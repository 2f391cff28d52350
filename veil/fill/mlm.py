"""Fill stage: a masked language model (BERT, RoBERTa, any ``AutoModelForMaskedLM``) proposes whole-word substitutes.

``MLMFiller(model=NAME_OR_PATH)`` loads the model with ``AutoModelForMaskedLM.from_pretrained`` (a
hub name for users with a hub, or a local folder such as one written by ``veil finetune``);
``model=None`` / ``"minilm"`` is the offline default, the packaged all-MiniLM-L6-v2 encoder with
a warmed-up MLM head (:func:`veil.models.minilm.load_masked_lm`).

How a masked text reaches the model (:class:`MaskedLMProposer`):

- every unescaped marker becomes the tokenizer's own mask token (``[MASK]`` for BERT, ``<mask>``
  for RoBERTa); a run of ``[MASK]`` markers separated only by whitespace is one mask (paper
  §4.2.4); the text between markers is unescaped and tokenised with special tokens *split*, so a
  user's literal ``[MASK]`` or ``<mask>`` stays plain text and never becomes a mask;
- the candidates for a marker are the vocabulary entries that are one whole word: pieces that
  continue a word (``##ing``; BPE pieces without the leading-space marker ``Ġ`` / ``▁``),
  punctuation and special tokens are never proposed;
- texts longer than the model's window are cut to a window around the target mask.

Speed: each step of the fill loop (the next marker of every pending document) is one call. On a
CPU, BERT-family models (BERT, RoBERTa and relatives) run padding-free
(:mod:`veil.fill.mlm_packed`): the step's sentences are sorted by length and concatenated into
chunks of about 512 tokens, every linear layer runs on real tokens only, attention runs per group of
equal-length sentences, and the last layer runs at the target mask only (its keys and values
everywhere). Other models and GPUs take the generic path: length-sorted batches padded to their
longest row through the Hugging Face model. Either way the encoder runs under
``torch.inference_mode`` and the LM head (a hidden x vocabulary matmul, the biggest single layer of
a small model) is applied only at the target mask of each sentence, not at every position.
``dtype="bf16"`` (bfloat16 weights; CPUs with AVX-512 BF16 / AMX, or a GPU) and ``dtype="int8"``
(dynamic int8 quantisation of the linear layers, CPU) trade agreement with fp32 for speed where
the hardware has fast kernels for them (measured by ``bench/bench_fill_speed.py``).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Sequence

from veil.errors import VeilError
from veil.fill.base import LOAD_LOCK
from veil.fill.loop import CandidateFiller
from veil.fill.mlm_packed import TOKEN_BUDGET, PackedEncoder, packed_supported
from veil.markers import MARKER_RE, unescape
from veil.textutil import WORD_RE

log = logging.getLogger(__name__)

DTYPES = ("fp32", "bf16", "int8")
MIN_ROWS = 4  # a batch is not closed for padding before it has this many rows
POST_ROWS = 16  # logit rows per block of the log-softmax / top-k passes (16 x 30k floats: 2 MB)
HEAD_ROWS = 2048  # target positions per LM-head call (bounds the rows x vocabulary logits in memory)
_MASK_RUN_GAP = re.compile(r"\s*")


def load_mlm(name_or_path: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) for a masked LM; ``None`` / ``"minilm"``: the packaged offline MiniLM."""
    if name_or_path in (None, "minilm", "minilm-raw"):
        try:
            from veil.models.minilm import load_masked_lm
        except ImportError as e:  # pragma: no cover - the models module ships with veil
            raise VeilError(f"the offline MiniLM masked LM is unavailable ({e}); give --model") from None
        return load_masked_lm(name_or_path)
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(name_or_path)
        model = AutoModelForMaskedLM.from_pretrained(name_or_path)
    except Exception as e:  # transformers / safetensors / torch raise many types for weights they cannot read
        raise VeilError(f"cannot load masked LM {name_or_path!r}: {type(e).__name__}: {_first_line(e)}") from None
    return model, tok


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


def mlm_head(model: Any) -> Any | None:
    """The module mapping hidden states to vocabulary logits, or ``None`` when there is no single one."""
    for name in ("cls", "lm_head", "predictions", "generator_lm_head"):
        head = getattr(model, name, None)
        if head is not None and name != "generator_lm_head":
            return head
    return None


def segment_markers(text: str) -> list[tuple[int, int]]:
    """Character spans of the masks the model sees: each marker, runs of ``[MASK]`` merged."""
    spans: list[tuple[int, int]] = []
    for m in MARKER_RE.finditer(text):
        if (spans and m.group() == "[MASK]" and text[spans[-1][1] - 6:spans[-1][1]] == "[MASK]"
                and not text[spans[-1][1]:m.start()].strip()):
            spans[-1] = (spans[-1][0], m.end())
        else:
            spans.append((m.start(), m.end()))
    return spans


class MaskedLMProposer:
    """Ranked whole-word candidates at one mask of each of many masked texts, batched."""

    def __init__(self, model: Any, tokenizer: Any, *, batch_size: int = 64, max_length: int | None = None,
                 device: str | None = None, dtype: str = "fp32", head_at_masks: bool = True,
                 pad_tolerance: float | None = None, packed: bool | None = None,
                 token_budget: int = TOKEN_BUDGET) -> None:
        import torch

        from veil.models.device import resolve_device

        if tokenizer.mask_token is None or tokenizer.mask_token_id is None:
            raise VeilError("the tokenizer has no mask token; the mlm filler needs a masked language model")
        if dtype not in DTYPES:
            raise VeilError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        self.tok = tokenizer
        self.batch_size = batch_size
        self.dtype = dtype
        self.head_at_masks = head_at_masks
        self.device = torch.device(resolve_device(device))
        model = model.eval()
        if dtype == "int8":
            if self.device.type != "cpu":
                raise VeilError("dtype int8 (dynamic quantisation) runs on the CPU only")
            import warnings

            from veil.models.cpu_linear import restore_linears

            restore_linears(model)  # quantize_dynamic matches nn.Linear by exact type
            with warnings.catch_warnings():  # deprecated in favour of torchao, still the built-in CPU path
                warnings.simplefilter("ignore")
                model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        elif dtype == "bf16":
            model = model.to(torch.bfloat16)
        self.model = model.to(self.device)
        if dtype == "fp32" and self.device.type == "cpu":
            from veil.models.cpu_linear import accelerate_linears

            accelerate_linears(model)  # oneDNN where it beats the BLAS here (inference only)
        # a GPU runs padded rows in parallel for free, a CPU pays for every padded token
        self.pad_tolerance = pad_tolerance if pad_tolerance is not None else (0.25 if self.device.type == "cpu" else 1.0)
        self.head = mlm_head(model) if head_at_masks else None
        # padding-free passes (CPU, BERT-family layers, head at the targets); else padded batches
        if packed is None:
            packed = self.device.type == "cpu"
        self.packed = PackedEncoder(model, token_budget) if (
            packed and self.head is not None and packed_supported(model)) else None
        limit = getattr(model.config, "max_position_embeddings", None) or 512
        if getattr(model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
            limit -= 2  # RoBERTa's positions start after the padding index
        self.max_length = min(max_length or limit, limit)
        mask_tok = tokenizer.added_tokens_decoder.get(tokenizer.mask_token_id)
        self._mask_lstrip = bool(getattr(mask_tok, "lstrip", False))
        self._mask_rstrip = bool(getattr(mask_tok, "rstrip", False))
        self._prefix, self._suffix = special_template(tokenizer)
        self._room = self.max_length - len(self._prefix) - len(self._suffix)
        self.vocab_size = int(model.config.vocab_size)
        self.valid = self._whole_word_ids().to(self.device)
        self.word_bias = torch.zeros(self.vocab_size, device=self.device).masked_fill_(~self.valid, float("-inf"))
        self.n_valid = int(self.valid.sum())
        self._words: dict[int, str] = {}

    # --- vocabulary -----------------------------------------------------------------------------
    def _whole_word_ids(self) -> Any:
        """A boolean vector over the vocabulary: True for tokens that are one whole word."""
        import torch

        tok = self.tok
        n = min(self.vocab_size, len(tok))
        pieces = tok.convert_ids_to_tokens(list(range(n)))
        special = set(tok.all_special_ids)
        wordpiece = any(p.startswith("##") for p in pieces if p)
        bytelevel = not wordpiece and any(p.startswith("\u0120") for p in pieces if p)
        spm = not wordpiece and not bytelevel and any(p.startswith("\u2581") for p in pieces if p)
        ok = torch.zeros(self.vocab_size, dtype=torch.bool)
        for i, p in enumerate(pieces):
            if not p or i in special:
                continue
            if wordpiece:
                good = not p.startswith("##") and WORD_RE.fullmatch(p) is not None
            elif bytelevel or spm:
                lead = "\u0120" if bytelevel else "\u2581"
                if not p.startswith(lead):
                    continue
                s = tok.convert_tokens_to_string([p]) if bytelevel else p[1:]
                good = s[:1].isspace() or not bytelevel
                s = s.strip()
                good = good and WORD_RE.fullmatch(s) is not None
            else:
                good = WORD_RE.fullmatch(p) is not None
            ok[i] = good
        if not bool(ok.any()):
            raise VeilError("no whole-word token found in the tokenizer's vocabulary")
        return ok

    def word(self, token_id: int) -> str:
        w = self._words.get(token_id)
        if w is None:
            w = self._words[token_id] = self.tok.decode([token_id]).strip()
        return w

    # --- encoding -------------------------------------------------------------------------------
    def encode(self, texts: Sequence[str], targets: Sequence[tuple[int, int]]) -> list[tuple[list[int], int]]:
        """Token ids (with special tokens) and the target mask's position, per text."""
        pieces: list[str] = []
        layout: list[tuple[int, int]] = []  # per text: (first piece, number of pieces)
        target_idx: list[int] = []
        for text, (ts, te) in zip(texts, targets):
            spans = segment_markers(text)
            hit = [i for i, (s, e) in enumerate(spans) if s <= ts < e]
            if not hit:
                raise VeilError(f"target {ts, te} is not a marker of the text {text[:60]!r}")
            target_idx.append(hit[0])
            layout.append((len(pieces), len(spans) + 1))
            pos = 0
            for j, (s, e) in enumerate(spans):
                seg = unescape(text[pos:s])
                if self._mask_lstrip:
                    seg = seg.rstrip()
                if j and self._mask_rstrip:
                    seg = seg.lstrip()
                pieces.append(seg)
                pos = e
            tail = unescape(text[pos:])
            pieces.append(tail.lstrip() if spans and self._mask_rstrip else tail)
        enc = self.tok(pieces, add_special_tokens=False, split_special_tokens=True)["input_ids"] if pieces else []
        mask_id = self.tok.mask_token_id
        out: list[tuple[list[int], int]] = []
        for (first, count), t in zip(layout, target_idx):
            ids: list[int] = []
            where = 0
            for j in range(count):
                ids.extend(enc[first + j])
                if j < count - 1:
                    if j == t:
                        where = len(ids)
                    ids.append(mask_id)
            if len(ids) > self._room:  # keep a window around the target, more of it on the left
                lo = max(0, min(where - (2 * self._room) // 3, len(ids) - self._room))
                ids = ids[lo:lo + self._room]
                where -= lo
            out.append((self._prefix + ids + self._suffix, where + len(self._prefix)))
        return out

    # --- the model ------------------------------------------------------------------------------
    def logits_at_targets(self, encoded: Sequence[tuple[list[int], int]]) -> Any:
        """Vocabulary logits at each text's target position, one row per text, in input order (fp32).

        The encoder runs batch by batch; the LM head then runs once over the target positions of all
        batches together: its hidden x vocabulary weight (47 MB at MiniLM size) is read from memory
        once per call instead of once per batch, which on a CPU costs more than the head's FLOPs."""
        import torch

        n = len(encoded)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        out = None
        hidden_at: Any = None
        with torch.inference_mode():
            if self.packed is not None:
                hidden_at = self.packed.hidden_at_targets(encoded, self.device)
                return self._head_logits(hidden_at)
            for idx in self.batches([len(ids) for ids, _ in encoded]):
                longest = max(len(encoded[i][0]) for i in idx)
                ids = torch.full((len(idx), longest), pad, dtype=torch.long)
                att = torch.zeros((len(idx), longest), dtype=torch.long)
                for r, i in enumerate(idx):
                    seq = encoded[i][0]
                    ids[r, :len(seq)] = torch.tensor(seq, dtype=torch.long)
                    att[r, :len(seq)] = 1
                ids, att = ids.to(self.device), att.to(self.device)
                rows = torch.arange(len(idx), device=self.device)
                pos = torch.tensor([encoded[i][1] for i in idx], dtype=torch.long, device=self.device)
                where = torch.tensor(idx, device=self.device)
                if self.head is not None:
                    h = self.model.base_model(input_ids=ids, attention_mask=att)[0][rows, pos]
                    if hidden_at is None:
                        hidden_at = torch.empty((n, h.shape[-1]), dtype=h.dtype, device=self.device)
                    hidden_at[where] = h
                else:
                    if out is None:
                        out = torch.empty((n, self.vocab_size), dtype=torch.float32, device=self.device)
                    logits = self.model(input_ids=ids, attention_mask=att).logits[rows, pos]
                    out[where] = logits[:, :self.vocab_size].float()
            if self.head is not None:
                out = self._head_logits(hidden_at)
        return out

    def _head_logits(self, hidden: Any) -> Any:
        """The LM head on ``hidden`` (one row per text), ``HEAD_ROWS`` rows per call, fp32 logits."""
        import torch

        parts = [self.head(hidden[s:s + HEAD_ROWS]) for s in range(0, hidden.shape[0], HEAD_ROWS)]
        out = parts[0] if len(parts) == 1 else torch.cat(parts)
        if out.shape[-1] != self.vocab_size:
            out = out[:, :self.vocab_size]
        return out.float().contiguous()

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices grouped into batches of similar length: sorted by length, a batch closes at
        ``batch_size`` rows or (from ``MIN_ROWS`` rows on) when padding to its longest row would add
        more than ``pad_tolerance`` of its real tokens: on a CPU padded tokens cost as much as real
        ones, while very small batches pay the per-call overhead of every layer."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        out: list[list[int]] = []
        cur: list[int] = []
        real = 0
        for i in order:
            L = lengths[i]
            too_padded = len(cur) >= MIN_ROWS and L * (len(cur) + 1) > (1 + self.pad_tolerance) * (real + L)
            if cur and (len(cur) >= self.batch_size or too_padded):
                out.append(cur)
                cur, real = [], 0
            cur.append(i)
            real += L
        if cur:
            out.append(cur)
        return out

    def propose(self, texts: Sequence[str], targets: Sequence[tuple[int, int]],
                k: int) -> list[list[tuple[str, float]]]:
        import torch

        if not texts:
            return []
        logits = self.logits_at_targets(self.encode(texts, targets))
        # log-probabilities over the whole vocabulary, ranked among whole words: the normaliser is
        # taken first, then the other entries get -inf in place (adding 0 leaves a logit as it is);
        # POST_ROWS rows at a time, so the passes over a block of logits find it in the cache
        k = min(k, self.n_valid)
        n = logits.shape[0]
        vals = torch.empty((n, k), dtype=logits.dtype, device=logits.device)
        ids = torch.empty((n, k), dtype=torch.long, device=logits.device)
        with torch.inference_mode():
            for s in range(0, n, POST_ROWS):
                block = logits[s:s + POST_ROWS]
                lse = torch.logsumexp(block, dim=-1, keepdim=True)
                block.add_(self.word_bias)
                v, i = top_k(block, k)
                vals[s:s + POST_ROWS] = v - lse
                ids[s:s + POST_ROWS] = i
        vals, ids = vals.cpu().tolist(), ids.cpu().tolist()
        return [[(self.word(t), v) for t, v in zip(row_ids, row_vals)] for row_ids, row_vals in zip(ids, vals)]


def top_k(x: Any, k: int, group: int = 256) -> tuple[Any, Any]:
    """``torch.topk(x, k, dim=-1)`` of a 2-D tensor with wide rows and a small ``k``, in two passes
    that read each row once: the maximum of every ``group`` columns, then an exact top-k among the
    ``k`` groups with the highest maxima (they hold the row's k largest entries: a group outside them
    has k groups above it, each with an entry at least as large as all of its own). ``torch.topk``
    over a 30k vocabulary costs several times more (it partially sorts every row)."""
    import torch

    n, width = x.shape
    full = width // group
    if full < 2 or 4 * k * group > width:
        return torch.topk(x, k, dim=-1)
    maxima = x[:, :full * group].view(n, full, group).amax(-1)
    if full * group < width:
        maxima = torch.cat([maxima, x[:, full * group:].amax(-1, keepdim=True)], dim=1)
    best = torch.topk(maxima, k, dim=-1).indices
    cols = (best[:, :, None] * group + torch.arange(group, device=x.device)).view(n, -1)
    vals = x.gather(1, cols.clamp(max=width - 1)).masked_fill_(cols >= width, float("-inf"))
    v, j = torch.topk(vals, k, dim=-1)
    return v, cols.gather(1, j)


def special_template(tok: Any) -> tuple[list[int], list[int]]:
    """The special token ids the tokenizer puts before and after a single text (``[CLS]``, ``[SEP]``)."""
    probe = "hello"
    bare = tok(probe, add_special_tokens=False)["input_ids"]
    full = tok(probe, add_special_tokens=True)["input_ids"]
    for off in range(len(full) - len(bare) + 1):
        if full[off:off + len(bare)] == bare:
            return list(full[:off]), list(full[off + len(bare):])
    raise VeilError("could not locate the text inside the tokenizer's special-token template")


class MLMFiller(CandidateFiller):
    """``mlm``: a masked LM fills each marker with its best whole-word candidates.

    ``model``: a hub name or local folder (``AutoModelForMaskedLM``), or ``None`` / ``"minilm"``
    for the packaged offline MiniLM. ``device``: ``cpu`` / ``cuda`` (default: a GPU when present);
    ``dtype``: ``fp32`` / ``bf16`` / ``int8``; ``threads``: torch CPU threads (default: torch's).
    ``model_obj`` / ``tokenizer`` pass an already loaded pair (tests, benchmarks).
    """

    name = "mlm"
    description = "a masked LM"  # the report's legend: "filled by a masked LM"

    finetune_data = ("mask-free", "top1", "topk")  # top1 / topk: fill -> fine-tune rounds (paper §3.2)
    finetune_default_data = "topk"

    @classmethod
    def finetune(cls, docs, output_dir, **hook):
        """MLM fine-tuning (whole-word masking): :func:`veil.fill.rounds.mlm_finetune` with this filler's loader."""
        from veil.fill.rounds import mlm_finetune

        return mlm_finetune(cls, load_mlm, docs, output_dir, **hook)

    def __init__(self, model: str | None = None, strategy: str = "top1", k: int = 10, seed: int = 0,
                 batch_size: int = 64, *, device: str | None = None, dtype: str = "fp32",
                 threads: int | None = None, max_length: int | None = None, model_obj: Any = None,
                 tokenizer: Any = None, **options) -> None:
        super().__init__(strategy=strategy, k=k, seed=seed, batch_size=batch_size, **options)
        if dtype not in DTYPES:
            raise VeilError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        if (model_obj is None) != (tokenizer is None):
            raise VeilError("give both model_obj and tokenizer, or neither")
        self.model_name = model
        self.threads = threads
        self._proposer_kwargs = dict(batch_size=batch_size, max_length=max_length, device=device, dtype=dtype)
        self._given = (model_obj, tokenizer) if model_obj is not None else None
        self._proposer: MaskedLMProposer | None = None

    @property
    def proposer(self) -> MaskedLMProposer:
        with LOAD_LOCK:
            return self._proposer or self._build_proposer()

    def _build_proposer(self) -> MaskedLMProposer:
        if self._proposer is None:
            if self.threads:
                import torch

                torch.set_num_threads(self.threads)
            from veil.models.device import resolve_device

            resolve_device(self._proposer_kwargs["device"])  # a GPU asked for and absent fails before a model loads
            model, tok = self._given if self._given is not None else load_mlm(self.model_name)
            self._proposer = MaskedLMProposer(model, tok, **self._proposer_kwargs)
        return self._proposer

    def load(self) -> "MLMFiller":
        self.proposer
        return self

    def propose_batch(self, texts: Sequence[str], targets: Sequence[tuple[int, int]],
                      k: int) -> list[list[tuple[str, float]]]:
        return self.proposer.propose(texts, targets, k)
