"""Task-evaluation stage: a classifier fine-tuned on each variant of the training text, scored on untouched test text.

The Dialpad paper (§5) judges anonymised call transcripts by the task scores of a model trained on
them; veil's task is Switchboard dialogue-act classification (macro-F1 and accuracy), run by the
experiment runner beside the downstream LM's perplexity (``task:`` in the experiment file).
"""
