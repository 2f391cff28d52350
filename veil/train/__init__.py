"""Train / evaluate stage: adapt a downstream LM on each corpus variant and measure perplexity."""
