"""Detect and mask stage: the neural entity tagger (case-robust token classification), its training data and training."""
