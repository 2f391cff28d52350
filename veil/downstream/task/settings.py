"""Task-evaluation stage: the experiment file's ``task:`` section (all defaults on one screen, unknown keys are errors)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from veil.config import from_mapping
from veil.errors import VeilError

TASKS = ("dialogue_acts",)
CLASSIFIERS = ("minilm", "tfidf")
CONTEXTS = ("none", "previous")


@dataclass(frozen=True)
class TaskSettings:
    """How the task classifier is trained and scored (``task:`` in the experiment file)."""

    name: str = "dialogue_acts"  # the task; Switchboard dialogue acts (one label a document)
    label_field: str = "da_tag"  # the Document.meta key of the label (read_switchboard's DA tag)
    # minilm: the offline all-MiniLM-L6-v2 encoder + a classification head, fine-tuned (the headline);
    # tfidf: TF-IDF word/bigram features + logistic regression (a cheap reference, no fine-tuning)
    classifier: str = "minilm"
    model: str | None = None  # minilm only: a local BERT-like checkpoint instead of the packaged encoder
    context: str = "previous"  # previous: the conversation's previous utterance is the classifier's first segment
    min_tag_count: int = 0  # tags with fewer training utterances than this become "other" (0: keep every tag)
    epochs: int = 3  # passes over the training utterances
    # the top encoder layers fine-tuned with the head (None: all, embeddings included); fewer layers
    # cost less per step on a CPU, since nothing below the lowest trained layer needs a backward pass
    trainable_layers: int | None = None
    batch_size: int = 32
    lr: float = 5e-5  # AdamW peak rate of the encoder, linear warm-up (first 6% of steps) and decay to 0
    # the new head's (and the pooler's) peak rate: at the encoder's rate a freshly initialised head
    # hardly moves in a few hundred steps (measured: 3% macro-F1, 47% accuracy on Switchboard at 1e-4)
    head_lr: float = 1e-3
    weight_decay: float = 0.01
    max_length: int = 96  # word pieces of context + utterance; the context is truncated first
    seeds: int = 1  # fine-tuning runs per variant (seed, seed+1, ...): mean ± standard deviation
    seed: int | None = None  # None: the experiment's seed
    threads: int | None = None  # torch threads (None: torch's default)
    device: str | None = None  # cpu / cuda (None: a GPU when present)

    @classmethod
    def from_dict(cls, d: Any) -> "TaskSettings":
        if d is True or d is None:
            d = {}
        if isinstance(d, str):
            d = {"name": d}
        if not isinstance(d, dict):
            raise VeilError("task: must be a mapping (name, classifier, context, epochs, ...)")
        s = from_mapping(cls, d, "task")
        s.check()
        return s

    def check(self) -> None:
        def choice(key: str, allowed: tuple[str, ...]) -> None:
            if getattr(self, key) not in allowed:
                raise VeilError(f"task.{key}: {getattr(self, key)!r} is not one of {', '.join(allowed)}")

        choice("name", TASKS)
        choice("classifier", CLASSIFIERS)
        choice("context", CONTEXTS)
        for key in ("epochs", "batch_size", "max_length", "seeds"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise VeilError(f"task.{key} must be a positive integer (got {v!r})")
        for key in ("min_tag_count",):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise VeilError(f"task.{key} must be 0 or a positive integer (got {v!r})")
        for key in ("lr", "head_lr", "weight_decay"):
            v = getattr(self, key)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0 or (key != "weight_decay" and v == 0):
                raise VeilError(f"task.{key} must be a positive number (got {v!r})")
        if self.trainable_layers is not None and (not isinstance(self.trainable_layers, int)
                                                  or isinstance(self.trainable_layers, bool) or self.trainable_layers < 0):
            raise VeilError(f"task.trainable_layers must be 0 or a positive integer (got {self.trainable_layers!r})")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise VeilError(f"task.threads must be a positive integer (got {self.threads!r})")
        if self.seed is not None and (not isinstance(self.seed, int) or isinstance(self.seed, bool)):
            raise VeilError(f"task.seed must be an integer (got {self.seed!r})")
        if not isinstance(self.label_field, str) or not self.label_field:
            raise VeilError("task.label_field must name a document field (e.g. da_tag)")
        if self.device is not None and not (isinstance(self.device, str) and self.device.startswith(("cpu", "cuda"))):
            raise VeilError(f"task.device must be cpu or cuda[:N] (got {self.device!r})")
        if self.model is not None and self.classifier != "minilm":
            raise VeilError("task.model applies to classifier: minilm only")

    def training_settings(self) -> dict[str, Any]:
        """What the trained classifier depends on (part of the stage's cache key; seeds and threads are not)."""
        d = asdict(self)
        for k in ("seeds", "seed", "threads", "device"):
            d.pop(k)
        if self.trainable_layers is None:  # (keys of entries made before the option existed stay valid)
            d.pop("trainable_layers")
        if self.classifier == "tfidf":  # settings of the encoder's fine-tuning do not apply
            for k in ("model", "epochs", "batch_size", "lr", "weight_decay", "max_length", "trainable_layers",
                      "head_lr"):
                d.pop(k, None)
        return d
