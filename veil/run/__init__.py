"""Run stage: the one corpus loop (:mod:`veil.run.corpus`), its stages (:mod:`veil.run.stages`), executors
(:mod:`veil.run.executors`: local or Ray), grouped documents (:mod:`veil.run.groups`), and the same stages over a
``datasets.Dataset`` (:mod:`veil.run.hf_datasets`)."""
