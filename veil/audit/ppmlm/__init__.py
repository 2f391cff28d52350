"""Audit stage: privacy-preserving masked-LM fine-tuning (PPMLM §4.2, §5.1) and the probes that audit it.

One module per concern: ``methods`` (the methods, settings, sequence type), ``identifiers``
(what a method protects), ``sequences`` (packing, masked targets), ``training`` (fine-tuning,
DP-SGD), ``probing`` (predictions at masked words), ``audit`` (the whole run). Their public names
are importable from here.

Fine-tuning methods (the paper's baselines), all with whole-word masking of 15% of the eligible
words of every sequence, re-drawn each epoch:

========  ==========================================================================
mlm       standard MLM: every word may be a target
mlma      MLM on pseudonymised text: direct identifiers replaced by "X" before training
dppmlm    targets never among *direct* identifiers (they stay visible as context)
ippmlm    targets never among *indirect* identifiers
ppmlm     targets never among direct or indirect identifiers (the paper's method)
dp        standard MLM trained with DP-SGD (Opacus; epsilon 8, delta 1e-5, clipping 10)
base      no fine-tuning: the pre-trained model itself, as a reference row
========  ==========================================================================

Identifiers are word-level here, as the paper's "blacklist": a *direct* identifier word is a word
of an entity the tagger found (persons, organisations, places, ...), minus English stop words
("the" of "the United States" identifies nobody); an *indirect* identifier is a word used by fewer
than k persons (``veil.audit.identifiers``). Indirect n-grams (n >= 2), when asked for, are
protected where they occur (every word of an occurrence), since their words alone are common.

A sequence is a run of consecutive documents of one person within one group (a Switchboard
conversation side), packed to at most ``max_length`` tokens, so every training sequence belongs
to exactly one person.
"""

from __future__ import annotations

from veil.audit.ppmlm.methods import (  # noqa: F401
    Chunk, DEFAULT_METHODS, Method, PSEUDONYM, TrainConfig, method_label,
)
from veil.audit.ppmlm.identifiers import (  # noqa: F401
    direct_words, protected_flags, pseudonymise, split_indirect, stop_words,
)
from veil.audit.ppmlm.sequences import (  # noqa: F401
    choose_targets, encode_documents, masked_example,
)
from veil.audit.ppmlm.training import (  # noqa: F401
    _MaskingDataset, _freeze_for, make_private, per_sample_masked_loss, train,
)
from veil.audit.ppmlm.probing import (  # noqa: F401
    ProbePlan, config_dict, finite, plan_probes, probe, training_counts,
)
from veil.audit.ppmlm.audit import (  # noqa: F401
    AuditConfig, AuditData, evaluate_method, prepare, replace_spans, run_method, select_persons, set_protection,
)
