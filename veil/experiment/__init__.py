"""Experiment stage: experiment files, the stage cache and the grid runner (``veil experiment run``)."""

from veil.experiment.runner import ExperimentRunner, run_experiment
from veil.experiment.spec import ExperimentSpec, load_spec

__all__ = ["ExperimentRunner", "ExperimentSpec", "load_spec", "run_experiment"]
