"""Audit stage, PPMLM: the fine-tuning methods, their training settings and the sequence type."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Method:
    """What a fine-tuning method protects and how it trains."""

    name: str
    protect_direct: bool = False  # direct identifier words are never targets
    protect_indirect: bool = False  # indirect identifier words / n-grams are never targets
    pseudonymise: bool = False  # direct identifiers replaced by "X" in the training text (MLMA)
    dp: bool = False  # DP-SGD with Opacus
    train: bool = True  # False: evaluate the pre-trained model as it is
    label: str = ""  # the name in tables and plots (the paper's)


# each registered by name in veil.registry.ppmlm_methods
MLM = Method("mlm", label="MLM")
MLMA = Method("mlma", pseudonymise=True, label="MLMA")
DPPMLM = Method("dppmlm", protect_direct=True, label="DPPMLM")
IPPMLM = Method("ippmlm", protect_indirect=True, label="IPPMLM")
PPMLM = Method("ppmlm", protect_direct=True, protect_indirect=True, label="PPMLM")
DP = Method("dp", dp=True, label="DP")
BASE = Method("base", train=False, label="no fine-tuning")
#: what ``veil audit ppmlm`` runs unless told otherwise, in this order
DEFAULT_METHODS = ("mlm", "mlma", "dppmlm", "ippmlm", "ppmlm", "dp")


def method_label(name: str) -> str:
    """The table name of a registered method (its name when unknown)."""
    from veil.registry import ppmlm_methods

    return ppmlm_methods.get(name).label if name in ppmlm_methods else name
PSEUDONYM = "X"


@dataclass(frozen=True)
class TrainConfig:
    """Fine-tuning defaults (the paper's where it states them), one screen."""

    epochs: int = 2  # the paper measures after 4..32 epochs; sized down for CPU
    batch_size: int = 16  # the paper uses 8 x 512 tokens; we pack shorter sequences
    max_length: int = 64  # tokens per sequence, [CLS] and [SEP] included
    lr: float = 1e-4  # AdamW, decreasing linearly to 0 (as the paper)
    mask_share: float = 0.15  # share of eligible words masked per sequence and epoch
    seed: int = 0
    trainable_layers: int | None = None  # train only the top N encoder layers + head (None: all)
    dp_epsilon: float = 8.0
    dp_delta: float = 1e-5
    dp_max_grad_norm: float = 10.0
    dp_grad_sample_mode: str = "hooks"  # Opacus per-sample gradients: "hooks", "functorch", "ghost"


@dataclass
class Chunk:
    """One packed training / probing sequence."""

    person: str
    input_ids: list[int]  # with [CLS] ... [SEP]
    word_ids: list[int]  # per token: index into ``words``, -1 for special tokens and punctuation
    words: list[str]  # lower-cased words, in order
    protected: list[bool] = field(default_factory=list)  # per word, for the method being trained

    def word_tokens(self) -> dict[int, list[int]]:
        pos: dict[int, list[int]] = {}
        for i, w in enumerate(self.word_ids):
            if w >= 0:
                pos.setdefault(w, []).append(i)
        return pos
