"""Downstream stage: the LM adapted on each corpus variant (perplexity), its tokenizer, LM-fused ASR (WER) and the downstream task."""
