"""Task-evaluation stage: the classifiers (MiniLM fine-tuned with a classification head; TF-IDF + logistic regression).

Both take (context, text) pairs: the context is the conversation's previous utterance (empty for
none), so a short "yeah" after a question (an answer) can be told from one in the middle of the
other side's turn (a backchannel). ``fit_predict`` trains on one variant's utterances and returns
the class numbers predicted for the test utterances; nothing is saved (the stage caches scores).
"""

from __future__ import annotations

import logging
import random
from typing import Any, Iterator, Sequence

from veil.errors import VeilError

log = logging.getLogger(__name__)


def fit_predict(s: Any, train: Sequence[tuple[str, str]], y: Sequence[int], test: Sequence[tuple[str, str]],
                n_classes: int, seed: int, progress: bool = True, desc: str = "task") -> tuple[list[int], dict[str, Any]]:
    """(predicted classes of ``test``, training info) for the classifier ``s.classifier``."""
    if s.classifier == "tfidf":
        return tfidf_fit_predict(train, y, test, seed, use_context=s.context != "none")
    return minilm_fit_predict(s, train, y, test, n_classes, seed, progress, desc)


def tfidf_fit_predict(train: Sequence[tuple[str, str]], y: Sequence[int], test: Sequence[tuple[str, str]],
                      seed: int, use_context: bool = True) -> tuple[list[int], dict[str, Any]]:
    """Word 1-2-gram TF-IDF of the utterance (and, separately, of its context) + multinomial logistic regression."""
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    # the token pattern keeps one-letter words ("i", "a") and [MASK]-like markers as words
    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1, token_pattern=r"\[?\b\w+\b\]?")
    parts = [vec.fit_transform([t for _, t in train])]
    test_parts = [vec.transform([t for _, t in test])]
    if use_context:
        cvec = TfidfVectorizer(ngram_range=(1, 1), sublinear_tf=True, token_pattern=r"\[?\b\w+\b\]?")
        parts.append(cvec.fit_transform([c or "<none>" for c, _ in train]))
        test_parts.append(cvec.transform([c or "<none>" for c, _ in test]))
    clf = LogisticRegression(max_iter=2000, C=10.0, random_state=seed)
    clf.fit(hstack(parts).tocsr(), list(y))
    pred = clf.predict(hstack(test_parts).tocsr())
    return [int(p) for p in pred], {"features": int(hstack(parts).shape[1])}


def load_classifier(model: str | None, n_classes: int) -> tuple[Any, Any]:
    """(sequence classifier with a new ``n_classes`` head, tokenizer): the packaged MiniLM encoder by default."""
    import transformers
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    if model is None:
        from veil.models.minilm import minilm_encoder_path

        path: Any = minilm_encoder_path()
    else:
        path = model
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # "newly initialised classifier weights" is expected, not news
    try:
        tok = AutoTokenizer.from_pretrained(path)
        clf = AutoModelForSequenceClassification.from_pretrained(path, num_labels=n_classes,
                                                                 ignore_mismatched_sizes=True)
    except (OSError, ValueError) as e:
        raise VeilError(f"task: cannot load the classifier's encoder {str(path)!r}: {e}") from None
    finally:
        transformers.logging.set_verbosity(verbosity)
    return clf, tok


def encode(tok: Any, pairs: Sequence[tuple[str, str]], max_length: int, use_context: bool) -> list[list[int]]:
    """Word-piece ids of ``[CLS] context [SEP] text [SEP]`` (or ``[CLS] text [SEP]``), truncated longest first."""
    if use_context:
        enc = tok([c for c, _ in pairs], [t for _, t in pairs], truncation="longest_first", max_length=max_length)
    else:
        enc = tok([t for _, t in pairs], truncation=True, max_length=max_length)
    # token_type_ids are rebuilt by tok.pad from nothing, so keep them with the ids
    return [dict(input_ids=i, **({"token_type_ids": tt} if tt is not None else {}))
            for i, tt in zip(enc["input_ids"], enc.get("token_type_ids") or [None] * len(enc["input_ids"]))]


def minilm_fit_predict(s: Any, train: Sequence[tuple[str, str]], y: Sequence[int], test: Sequence[tuple[str, str]],
                       n_classes: int, seed: int, progress: bool = True,
                       desc: str = "task") -> tuple[list[int], dict[str, Any]]:
    """Fine-tune the whole encoder and a new head (cross-entropy, AdamW, linear schedule) through veil's loop."""
    import torch

    threads = torch.get_num_threads()
    if s.threads:
        torch.set_num_threads(s.threads)
    try:
        return _minilm_fit_predict(s, train, y, test, n_classes, seed, progress, desc)
    finally:  # the setting is process-wide: give the caller its own back
        torch.set_num_threads(threads)


def _minilm_fit_predict(s: Any, train: Sequence[tuple[str, str]], y: Sequence[int], test: Sequence[tuple[str, str]],
                        n_classes: int, seed: int, progress: bool, desc: str) -> tuple[list[int], dict[str, Any]]:
    import torch

    from veil.models.device import resolve_device
    from veil.training import adamw, optimise

    device = resolve_device(s.device)
    torch.manual_seed(seed)
    model, tok = load_classifier(s.model, n_classes)
    model.to(device)
    if s.trainable_layers is not None:
        freeze_below(model, s.trainable_layers)
    use_context = s.context != "none"
    feats = encode(tok, train, s.max_length, use_context)
    labels = list(y)
    per_epoch = (len(feats) + s.batch_size - 1) // s.batch_size
    steps = per_epoch * s.epochs
    rng = random.Random(seed)

    def batches() -> Iterator[tuple[list[dict[str, Any]], list[int]]]:
        # batches of similar length in random order: padding to a batch's longest input otherwise
        # more than doubles the tokens a CPU computes (mean 24 word pieces, batches padded to ~60)
        for _ in range(s.epochs):
            order = rng.sample(range(len(feats)), len(feats))
            chunk = s.batch_size * 16
            for c in range(0, len(order), chunk):
                order[c:c + chunk] = sorted(order[c:c + chunk], key=lambda j: len(feats[j]["input_ids"]))
            starts = list(range(0, len(order), s.batch_size))
            rng.shuffle(starts)
            for i in starts:
                idx = order[i:i + s.batch_size]
                yield [feats[j] for j in idx], [labels[j] for j in idx]

    def loss_of(batch: tuple[list[dict[str, Any]], list[int]]) -> Any:
        x, yb = batch
        inputs = tok.pad(x, return_tensors="pt").to(device)
        return model(**inputs, labels=torch.tensor(yb, device=device)).loss

    no_decay = ("bias", "LayerNorm.weight")
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    base = model.base_model_prefix + "."
    is_head = {n: not n.startswith(base) or ".pooler." in f".{n}" for n, _ in named}  # new, or untrained for this
    head = [(n, p) for n, p in named if is_head[n]]
    body = [(n, p) for n, p in named if not is_head[n]]
    groups = [{"params": [p for n, p in part if n.endswith(no_decay) == nd], "lr": lr,
               "weight_decay": 0.0 if nd else s.weight_decay}
              for part, lr in ((body, s.lr), (head, s.head_lr)) for nd in (False, True)]
    groups = [g for g in groups if g["params"]]
    opt, sched = adamw(groups, lr=s.lr, total=steps, warmup=max(1, int(0.06 * steps)))
    model.train()
    losses = optimise(batches(), loss_of, opt, sched, clip_params=[p for _, p in named], desc=f"fine-tune {desc}",
                      progress=progress, window=20, total=steps)
    model.eval()
    pred = predict(model, tok, encode(tok, test, s.max_length, use_context), s.batch_size * 2)
    tail = losses[-max(1, per_epoch):]
    return pred, {"steps": len(losses), "final_loss": round(sum(tail) / len(tail), 4)}


def freeze_below(model: Any, trainable_layers: int) -> None:
    """Only the top ``trainable_layers`` encoder layers, the pooler and the head keep their gradients."""
    base = getattr(model, model.base_model_prefix)
    layers = base.encoder.layer
    if trainable_layers > len(layers):
        raise VeilError(f"task.trainable_layers: the encoder has only {len(layers)} layers")
    for p in base.embeddings.parameters():
        p.requires_grad_(False)
    for layer in layers[:len(layers) - trainable_layers]:
        for p in layer.parameters():
            p.requires_grad_(False)


def predict(model: Any, tok: Any, feats: Sequence[dict[str, Any]], batch_size: int) -> list[int]:
    """Argmax class of every input; batches of similar length (less padding), answers in input order."""
    import torch

    order = sorted(range(len(feats)), key=lambda i: len(feats[i]["input_ids"]))
    out = [0] * len(feats)
    with torch.inference_mode():
        for i in range(0, len(order), batch_size):
            idx = order[i:i + batch_size]
            logits = model(**tok.pad([feats[j] for j in idx], return_tensors="pt").to(model.device)).logits
            for j, p in zip(idx, logits.argmax(-1).tolist()):
                out[j] = int(p)
    return out
