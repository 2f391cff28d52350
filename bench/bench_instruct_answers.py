"""Fill stage benchmark: how often does the instruction filler's answer keep the input intact?

``llm-instruct`` writes the whole completed sentence; ``veil.fill.llm_instruct.align_output`` takes
its words only when every unmasked word survives in order and each ``[MASK]`` gets one word, and
sends the others to the ``llm`` fallback. This bench measures that share for LoRA adapters trained
with different numbers of steps (the experiment files' ``finetune.max_steps``), on the masked
sentences a real run fills.

One command, e.g. for the PTB 6,000 vocab_threshold run (its masked corpus and Top-K fill are in
the experiment cache)::

    .venv/bin/python bench/bench_instruct_answers.py --masked CACHE/mask/KEY/masked.jsonl \\
        --train CACHE/fill/KEY/filled.jsonl --steps 60 --steps 240 --zero-shot

``--train FILLED.jsonl --steps N`` trains an adapter as the experiment's ``instruct_ft`` does
(``finetune_instruct``, learning rate ``--lr``, seed 0, batch 8) into ``--work`` (kept: a second
run measures it without training again); ``--adapter DIR`` measures
an adapter trained before (its ``veil_adapter.json`` gives steps, loss and time); ``--zero-shot``
adds SmolLM2-135M-Instruct without an adapter. Sample: ``--sample`` masked sentences after
``--skip``, the window of the first marker of each (what the fill loop sends first). Prints a
markdown table (answer kept, dropped words, not one word per mask, generation seconds per sentence;
ratios of answers kept against the adapter with
``--baseline-steps``, the experiment files' 60)
and writes it to ``--out``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections import Counter
from pathlib import Path


def sample_inputs(masked: Path, skip: int, n: int) -> list[str]:
    from veil.io.records import read_masked
    from veil.fill.instruct_prompt import render_window
    from veil.markers import find_markers

    out = []
    for doc in itertools.islice(read_masked(masked), skip, None):
        ms = find_markers(doc.text)
        if ms:
            out.append(render_window(doc.text, (ms[0][0], ms[0][1]))[0])
            if len(out) == n:
                break
    return out


def adapter_meta(folder: str | Path) -> dict:
    """The training summary ``finetune_instruct`` saves beside an adapter (steps, loss, seconds)."""
    from veil.models.smollm2 import ADAPTER_META

    return json.loads((Path(folder) / ADAPTER_META).read_text(encoding="utf-8"))


def measure(model: str | None, inputs: list[str]) -> dict:
    from veil.fill.instruct_prompt import align_output
    from veil.fill.llm_instruct import InstructLLMFiller

    filler = InstructLLMFiller(model=model)
    t = time.perf_counter()
    outs = filler.generate(inputs)
    secs = time.perf_counter() - t
    c = Counter(align_output(i, o)[0] for i, o in zip(inputs, outs))
    return {"ok": c["ok"], "dropped": c["dropped"], "multiword": c["multiword"], "n": len(inputs),
            "gen_s_per_sentence": secs / len(inputs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--masked", type=Path, required=True, help="a veil mask output (masked.jsonl)")
    ap.add_argument("--train", type=Path, help="filled corpus the adapters of --steps are trained on")
    ap.add_argument("--steps", type=int, action="append", default=[], help="train an adapter with N steps")
    ap.add_argument("--adapter", action="append", default=[], help="an adapter folder trained before")
    ap.add_argument("--zero-shot", action="store_true", help="also the base model without an adapter")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--baseline-steps", type=int, default=60,
                    help="the ratios are against the adapter with this many steps (the experiment files' setting)")
    ap.add_argument("--sample", type=int, default=96)
    ap.add_argument("--skip", type=int, default=3000)
    ap.add_argument("--work", type=Path, default=Path(".veil-cache/bench/instruct_adapters"))
    ap.add_argument("--out", type=Path, default=Path("bench/results/instruct_answers.md"))
    a = ap.parse_args(argv)
    if a.steps and not a.train:
        ap.error("--steps needs --train")

    from veil.experiment.grid import read_texts  # the experiment's reader of a fill's texts
    from veil.fill.llm_instruct import finetune_instruct
    from veil.models.smollm2 import ADAPTER_META

    models: list[tuple[str, str | None]] = []
    texts: list[str] | None = None
    for n in a.steps:
        out = a.work / f"steps_{n}"
        if not (out / ADAPTER_META).is_file():
            texts = texts if texts is not None else read_texts(a.train)
            finetune_instruct(texts, out, seed=0, max_steps=n, learning_rate=a.lr, progress=True)
        models.append((f"LoRA {n} steps", str(out)))
    models += [(f"LoRA {adapter_meta(d)['steps']} steps", d) for d in a.adapter]
    if a.zero_shot:
        models.append(("zero-shot", None))
    if not models:
        ap.error("nothing to measure: give --steps, --adapter or --zero-shot")

    inputs = sample_inputs(a.masked, a.skip, a.sample)
    rows = []
    for label, model in models:
        r = measure(model, inputs)
        meta = adapter_meta(model) if model else {}
        rows.append({"model": label, **r, "final_loss": meta.get("final_loss"), "lora_s": meta.get("seconds"),
                     "steps": meta.get("steps")})
    rows.sort(key=lambda r: -1 if r["steps"] is None else r["steps"])
    ref = next((r for r in rows if r["steps"] == a.baseline_steps), rows[0])
    base = ref["ok"] or 1
    lines = [f"Instruction filler answers kept intact ({len(inputs)} masked sentences of `{a.masked}`, "
             f"from line {a.skip}; first marker's window; greedy generation, one thread)", "",
             f"| model | LoRA s | final loss | answer kept | dropped words | not one word per mask | "
             f"generation s/sentence | kept vs {ref['model']} |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['lora_s'] if r['lora_s'] is not None else '-'} | "
                     f"{'%.3f' % r['final_loss'] if r['final_loss'] is not None else '-'} | "
                     f"{r['ok']}/{r['n']} ({r['ok'] / r['n']:.0%}) | {r['dropped'] / r['n']:.0%} | "
                     f"{r['multiword'] / r['n']:.0%} | {r['gen_s_per_sentence']:.2f} | {r['ok'] / base:.2f}x |")
    table = "\n".join(lines)
    print(table)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
