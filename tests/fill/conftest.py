"""Fixtures for the fill tests: a tiny WordPiece tokenizer and a 2-layer BERT MLM trained for seconds."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

# A tiny "language": templated sentences whose blanks a 2-layer model learns in a few seconds.
TEMPLATES = [
    ("the cat sat on the {}", ["mat", "rug", "sofa", "bed"]),
    ("i live in {} with my family", ["paris", "london", "berlin", "rome"]),
    ("my friend {} likes to read", ["john", "mary", "anna", "peter"]),
    ("we ate {} for dinner", ["bread", "cheese", "pasta", "soup"]),
    ("she drives a {} car", ["red", "blue", "green", "black"]),
    ("he plays the {} every day", ["piano", "guitar", "violin", "drums"]),
]
EXTRA_WORDS = ["a", "an", "and", "is", "it", "of", "to", "was", "you", "[", "]", ".", ",", "!", "?",
               "##s", "##ed", "##ing", "##er", "mask", "<", ">", "x", "y", "z"]


def fixture_sentences(n: int = 600, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        tpl, words = rng.choice(TEMPLATES)
        out.append(tpl.format(rng.choice(words)))
    return out


def fixture_vocab() -> list[str]:
    words: set[str] = set(EXTRA_WORDS)
    for tpl, fills in TEMPLATES:
        words.update(tpl.replace("{}", "").split())
        words.update(fills)
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words)


def build_tokenizer(tmp: Path | None = None):
    """A WordPiece tokenizer (transformers' BERT tokenizer on the ``tokenizers`` library) over the fixture vocabulary."""
    from transformers import BertTokenizer

    return BertTokenizer(vocab={w: i for i, w in enumerate(fixture_vocab())}, do_lower_case=True)


def build_model(tok, seed: int = 0, layers: int = 2, hidden: int = 64):
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
                     intermediate_size=2 * hidden, max_position_embeddings=64, type_vocab_size=1)
    return BertForMaskedLM(cfg)


def train_one_blank(model, tok, sentences: list[str], steps: int = 250, seed: int = 0) -> float:
    """Masks one random word per sentence and trains the model to predict it; returns the last loss."""
    import torch

    rng = random.Random(seed)
    torch.manual_seed(seed)
    enc = tok(sentences, padding=True, return_tensors="pt")
    ids_all, att_all = enc["input_ids"], enc["attention_mask"]
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    loss = torch.tensor(0.0)
    for _ in range(steps):
        rows = [rng.randrange(len(sentences)) for _ in range(32)]
        ids, att = ids_all[rows].clone(), att_all[rows]
        labels = torch.full_like(ids, -100)
        for r in range(len(rows)):
            n = int(att[r].sum())
            p = rng.randrange(1, n - 1)
            labels[r, p] = ids[r, p]
            ids[r, p] = tok.mask_token_id
        loss = model(input_ids=ids, attention_mask=att, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return float(loss.detach())


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    """Tiny models run fastest on one thread; two threads on a busy machine are ~10x slower."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_mlm(tmp_path_factory):
    """(model, tokenizer, folder): a 2-layer BERT MLM trained on the fixture language, saved to a folder."""
    tmp = tmp_path_factory.mktemp("tiny_mlm")
    tok = build_tokenizer(tmp)
    model = build_model(tok)
    train_one_blank(model, tok, fixture_sentences())
    out = tmp / "model"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return model, tok, out


@pytest.fixture(scope="session")
def untrained_mlm(tmp_path_factory):
    """A randomly initialised 2-layer BERT MLM (weights do not matter for loop-equivalence tests)."""
    tmp = tmp_path_factory.mktemp("untrained_mlm")
    tok = build_tokenizer(tmp)
    return build_model(tok, seed=1).eval(), tok
