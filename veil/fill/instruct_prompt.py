"""Fill stage: the ``llm-instruct`` filler's prompt and answer format (see :mod:`veil.fill.llm_instruct`).

The paper's instruction in SmolLM2-Instruct's own chat template, every marker shown as one
``[MASK]``; the window of text a prompt shows; and the strict parsing of an answer against the
input's unmasked words. The filler and its fine-tuning both build their prompts here.
"""

from __future__ import annotations

import re
from typing import Any

from veil.errors import VeilError
from veil.fill.causal_scorer import MarkerContext
from veil.markers import MARKER_RE, unescape
from veil.textutil import WORD_RE, iter_words

INSTRUCTION = "Predict the [MASK] tokens in the given sentence"
#: ``generate``: greedy generation of the whole answer, strict parsing, ``llm`` fallback (the paper);
#: ``ranked``: whole-word candidates for each marker ranked inside the model's answer (never breaks it)
DECODES = ("generate", "ranked")
MASK = "[MASK]"
_SLOTS_RE = re.compile(MARKER_RE.pattern + r"(?:\s+" + MARKER_RE.pattern + r")*")


# ------------------------------------------------------------------------------ prompts
def user_message(masked_sentence: str) -> str:
    return f"{INSTRUCTION}.\n\nInput: {masked_sentence}"


def build_prompt(tokenizer: Any, masked_sentence: str) -> str:
    """The generation prompt (chat template, generation header included)."""
    msgs = [{"role": "user", "content": user_message(masked_sentence)}]
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    # a base model without a chat template: the same turn as plain text
    return f"{user_message(masked_sentence)}\n\nOutput: "


def end_of_turn(tokenizer: Any) -> str:
    return tokenizer.eos_token if getattr(tokenizer, "chat_template", None) else "\n"


def _window(text: str, target: tuple[int, int], left_words: int, right_words: int) -> tuple[str, str]:
    """The raw text left and right of the marker at ``target``, cut to the word window."""
    s, e = target
    if not (0 <= s < e <= len(text)) or not _SLOTS_RE.fullmatch(text, s, e):
        raise VeilError(f"target {target} is not a marker in the text {text[:60]!r}...")
    left, right = text[:s], text[e:]
    starts = [m.start() for m in WORD_RE.finditer(left)]
    if len(starts) > left_words:
        left = left[starts[-left_words]:]
    ends = [m.end() for m in WORD_RE.finditer(right)]
    if len(ends) > right_words:
        right = right[:ends[right_words - 1]]
    return left, right


def render_window(text: str, target: tuple[int, int], left_words: int = 48,
                  right_words: int = 48) -> tuple[str, int]:
    """The model's input for the marker at ``target``: a window of the text with every marker (or run
    of consecutive markers) shown as one ``[MASK]``; returns (input, index of the target's mask)."""
    left, right = _window(text, target, left_words, right_words)
    left_r, n_left = _render(left)
    right_r, _ = _render(right)
    return left_r + MASK + right_r, n_left


def answer_context(tokenizer: Any, text: str, target: tuple[int, int], left_words: int = 48,
                   right_words: int = 48) -> MarkerContext:
    """The marker at ``target`` as a gap in the model's own answer (``decode="ranked"``).

    Left: the generation prompt for the windowed input (every marker shown as ``[MASK]``) followed by
    the answer up to the marker, i.e. the input's text before it; right: the input's text after it up
    to the next marker, or to the end of the turn when no marker follows. A candidate word is scored
    by the likelihood of the whole answer around it, so the proposals see the instruction and the
    full sentence, right context included. The tokenizer's BOS text is left off the prompt's start:
    the scorer puts the BOS id there itself."""
    left, right = _window(text, target, left_words, right_words)
    left_r = _render(left)[0]
    prompt = build_prompt(tokenizer, left_r + MASK + _render(right)[0])
    bos = getattr(tokenizer, "bos_token", None)
    if bos and prompt.startswith(bos):
        prompt = prompt[len(bos):]
    nxt = _SLOTS_RE.search(right)
    if nxt is not None:  # later markers are filled later: the answer scored ends before the next one
        after = _render(right[:nxt.start()])[0].rstrip()
    else:
        after = _render(right)[0].rstrip() + end_of_turn(tokenizer)
    return MarkerContext(prompt + left_r, after)


def _render(part: str) -> tuple[str, int]:
    """Markers (and runs of them) -> ``[MASK]``; escaped look-alikes unescaped; number of masks."""
    out, pos, n = [], 0, 0
    for m in _SLOTS_RE.finditer(part):
        out.append(unescape(part[pos:m.start()]))
        out.append(MASK)
        pos, n = m.end(), n + 1
    out.append(unescape(part[pos:]))
    return "".join(out), n


# ------------------------------------------------------------------------------ parsing
def _items(masked: str) -> list[str | None]:
    """The input as a sequence of words and ``None`` for each ``[MASK]``."""
    items: list[str | None] = []
    pos = 0
    for m in re.finditer(re.escape(MASK), masked):
        items.extend(w for _, _, w in iter_words(masked[pos:m.start()]))
        items.append(None)
        pos = m.end()
    items.extend(w for _, _, w in iter_words(masked[pos:]))
    return items


def align_output(masked: str, output: str) -> tuple[str, list[str] | None]:
    """Check a generated completion against its masked input.

    Returns ``("ok", fills)`` with one word per ``[MASK]`` when every unmasked word survived in
    order (case and punctuation ignored) and each mask got exactly one new word;
    ``("dropped", None)`` when unmasked words were lost, changed, reordered or added;
    ``("multiword", None)`` when the words survived but a mask got none, several, or ``MASK`` itself.
    """
    items = _items(masked)
    words = [w for _, _, w in iter_words(output)]
    if not words:
        return "dropped", None
    pattern = " ".join(re.escape(w) if w is not None else r"(\S+(?: \S+)*?)?" for w in items)
    # an empty slot leaves a doubled space in the pattern: allow it to collapse
    pattern = pattern.replace(r" (\S+(?: \S+)*?)? ", r" ?(\S+(?: \S+)*?)? ?")
    m = re.fullmatch(pattern, " ".join(words), flags=re.IGNORECASE)
    if not m:
        return "dropped", None
    fills = list(m.groups())
    if any(f is None or " " in f or f.casefold() == "mask" for f in fills):
        return "multiword", None
    return "ok", fills


# ------------------------------------------------------------------------------ the filler
