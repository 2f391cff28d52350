"""Experiment stage: the experiment file (YAML) — corpora, maskers, fill methods, baselines, LM settings.

Baselines and fill methods are both *variants* of the LM's fine-tuning data:

- ``data: original`` (Oracle), ``data: masked`` (Baseline 0, ``[MASK]`` kept as a token; with
  ``mask_loss_weight: 0`` Baseline 1), ``data: filled`` (a fill method: ``filler``, ``strategy``,
  ``k``, ``options``, optional ``finetune`` of the filler first).
- ``data: none`` (``pretrained``): the pre-trained LM evaluated as it is, not adapted at all (the
  paper's "Pre-Trained-LM" row of its WER table): the floor every adaptation should beat.
- ``oracle``, ``baseline0``, ``baseline1`` and ``pretrained`` may be written as bare names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veil.config import check_keys, field_names, from_mapping
from veil.errors import VeilError
from veil.io.paths import resolve_path

BASELINES: dict[str, dict[str, Any]] = {
    "oracle": {"data": "original", "description": "the original training text, personal data included: the best "
                                                  "any anonymisation can hope for"},
    "baseline0": {"data": "masked", "description": "the masked text, every placeholder kept as the token [MASK]: "
                                                   "the worst case a fill must beat"},
    "baseline1": {"data": "masked", "mask_loss_weight": 0.0,
                  "description": "the masked text, with no loss on the [MASK] tokens: the model learns only from "
                                 "the words kept"},
    "pretrained": {"data": "none", "description": "nothing: the pre-trained language model, not adapted (the "
                                                  "paper's Pre-Trained-LM; every adaptation should beat it)"},
}
DATA_KINDS = ("original", "masked", "filled", "none")


@dataclass
class CorpusSpec:
    path: Path
    format: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    limit: int | None = None
    skip: int = 0
    min_words: int = 1
    exclude_containing: list[str] = field(default_factory=list)  # documents holding any of these are skipped

    def settings(self) -> dict[str, Any]:
        return {"path": str(self.path), "format": self.format, "fields": self.fields, "limit": self.limit,
                "skip": self.skip, "min_words": self.min_words,
                **({"exclude_containing": self.exclude_containing} if self.exclude_containing else {})}


@dataclass
class Variant:
    name: str
    data: str
    mask_loss_weight: float = 1.0
    filler: str | None = None
    strategy: str = "top1"
    k: int = 10
    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    finetune: dict[str, Any] | None = None
    description: str | None = None  # the report's legend (None: made from the settings)
    # the maskers whose columns this method fills (None: every one); not part of the fill's cache key, so a
    # method restricted to one column reuses the fills an unrestricted one with the same settings made
    techniques: list[str] | None = None

    def fill_settings(self) -> dict[str, Any]:
        return {"filler": self.filler, "strategy": self.strategy, "k": self.k, "model": self.model,
                "options": self.options, "finetune": self.finetune}


@dataclass
class ExperimentSpec:
    name: str
    source: Path
    train: CorpusSpec
    test: CorpusSpec
    pretrain: CorpusSpec | None
    techniques: dict[str, dict[str, Any]]
    variants: list[Variant]
    lm: dict[str, Any]
    style: str = "mask"
    seed: int = 0
    cache: Path | None = None
    report_extra: list[Path] = field(default_factory=list)
    # training documents shown original -> masked -> filled in report.html; 0 by default because the
    # report would then hold the corpus's private text (the demo's corpus is synthetic)
    report_examples: int = 0
    keep: list[str] = field(default_factory=list)  # corpus mark-up never masked (PTB's <unk>)
    asr: Any = None  # veil.downstream.asr.settings.ASRSettings: the LM-fused ASR evaluation (WER), when the file has asr:
    task: Any = None  # veil.downstream.task.settings.TaskSettings: a task evaluation beside perplexity (None: none)

    @property
    def methods(self) -> list[str]:
        return [v.name for v in self.variants]


def _corpus(d: Any, what: str, base: Path) -> CorpusSpec:
    if isinstance(d, str):
        d = {"path": d}
    if not isinstance(d, dict) or "path" not in d:
        raise VeilError(f"{what}: needs a path (and optionally format, fields, limit, skip)")
    check_keys(d, field_names(CorpusSpec), what, list_known=False)
    path = resolve_path(d["path"], base)
    if not path.exists():
        raise VeilError(f"{what}: {path} does not exist")
    limit = d.get("limit")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise VeilError(f"{what}: limit must be a positive integer")
    exclude = d.get("exclude_containing") or []
    if isinstance(exclude, str):
        exclude = [exclude]
    if not isinstance(exclude, list) or not all(isinstance(x, str) and x for x in exclude):
        raise VeilError(f"{what}: exclude_containing must be a list of strings (e.g. ['<unk>'])")
    return CorpusSpec(path, d.get("format"), dict(d.get("fields") or {}), limit, int(d.get("skip", 0)),
                      int(d.get("min_words", 1)), exclude)


def _variant(d: Any, i: int) -> Variant:
    if isinstance(d, str):
        if d not in BASELINES:
            raise VeilError(f"variant #{i + 1}: {d!r} is not a baseline ({', '.join(BASELINES)}); "
                            "write fill methods as {name, filler, strategy, ...}")
        d = {"name": d, **BASELINES[d]}
    if not isinstance(d, dict) or "name" not in d:
        raise VeilError(f"variant #{i + 1}: needs a name")
    d = dict(d)
    if d["name"] in BASELINES and "data" not in d:
        d = {**BASELINES[d["name"]], **d}
    if d["name"] in BASELINES:  # a baseline written out in full still describes itself in the report
        d.setdefault("description", BASELINES[d["name"]]["description"])
    if "filler" in d and "data" not in d:
        d["data"] = "filled"
    v = from_mapping(Variant, d, f"variant {d['name']!r}", list_known=False)
    if v.data not in DATA_KINDS:
        raise VeilError(f"variant {v.name!r}: data must be one of {', '.join(DATA_KINDS)}")
    if v.data == "filled":
        from veil.registry import fillers

        if not v.filler:
            raise VeilError(f"variant {v.name!r}: a fill method needs a filler")
        if v.filler not in fillers:
            raise VeilError(f"variant {v.name!r}: unknown filler {v.filler!r}; known: {', '.join(fillers.names())}")
        from veil.fill.strategies import STRATEGIES

        if v.strategy not in STRATEGIES:
            raise VeilError(f"variant {v.name!r}: strategy must be one of {', '.join(STRATEGIES)}")
    return v


def _check_variant_techniques(v: Variant, techs: dict[str, Any], path: Path) -> None:
    """``techniques: [entity_tagger]`` on a method: a non-empty list of the file's own maskers."""
    if v.techniques is None:
        return
    if isinstance(v.techniques, str):
        v.techniques = [v.techniques]
    if not isinstance(v.techniques, list) or not v.techniques or not all(isinstance(t, str) for t in v.techniques):
        raise VeilError(f"{path}: method {v.name!r}: techniques must be a non-empty list of the file's maskers")
    if v.data not in ("masked", "filled"):
        raise VeilError(f"{path}: method {v.name!r}: techniques applies to masked or filled variants only")
    unknown = [t for t in v.techniques if t not in techs]
    if unknown:
        raise VeilError(f"{path}: method {v.name!r}: {', '.join(unknown)} not in the file's techniques "
                        f"({', '.join(techs)})")


def apply_setters(raw: dict[str, Any], setters: list[str]) -> None:
    """``["lm.finetune_epochs=4", "train.limit=500"]``: dotted keys, values parsed as YAML."""
    import yaml

    for s in setters:
        key, eq, value = s.partition("=")
        if not eq or not key:
            raise VeilError(f"--set {s!r}: expected KEY=VALUE")
        *parents, last = key.split(".")
        node = raw
        for k in parents:
            if isinstance(node.get(k), str):
                node[k] = {"path": node[k]}
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise VeilError(f"--set {s!r}: {k} is not a mapping")
        try:
            node[last] = yaml.safe_load(value)
        except yaml.YAMLError as e:
            raise VeilError(f"--set {s!r}: the value is not valid YAML ({str(e).splitlines()[0]})") from None


def load_spec(path: str | Path, overrides: dict[str, Any] | None = None,
              setters: list[str] | None = None) -> ExperimentSpec:
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise VeilError(f"{path}: no such experiment file") from None
    except yaml.YAMLError as e:
        raise VeilError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise VeilError(f"{path}: an experiment file is a mapping (train, test, techniques, methods, ...)")
    raw.update(overrides or {})
    apply_setters(raw, list(setters or []))
    return parse_spec(raw, path)


def parse_spec(raw: dict[str, Any], path: Path) -> ExperimentSpec:
    from veil.registry import maskers

    base = path.resolve().parent
    check_keys(raw, ("name", "train", "test", "pretrain", "techniques", "baselines", "methods", "lm", "style", "seed",
                     "cache", "report", "keep", "asr", "task"), str(path))
    for key in ("train", "test", "techniques"):
        if key not in raw:
            raise VeilError(f"{path}: missing {key!r}")
    techs = raw["techniques"]
    if isinstance(techs, list):
        techs = {t: {} for t in techs}
    if not isinstance(techs, dict) or not techs:
        raise VeilError(f"{path}: techniques must be a non-empty list of masker names (or name: options)")
    for t in techs:
        if t not in maskers:
            raise VeilError(f"{path}: unknown masker {t!r}; known: {', '.join(maskers.names())}")
    for key, kind in (("baselines", list), ("methods", list), ("lm", dict), ("report", dict)):
        if raw.get(key) is not None and not isinstance(raw[key], kind):
            raise VeilError(f"{path}: {key} must be a {'list' if kind is list else 'mapping'}, got {raw[key]!r}")
    if not isinstance(raw.get("seed", 0), int) or isinstance(raw.get("seed", 0), bool):
        raise VeilError(f"{path}: seed must be a whole number, got {raw['seed']!r}")
    entries = list(raw.get("baselines") or []) + list(raw.get("methods") or [])
    if not entries:
        raise VeilError(f"{path}: no baselines or methods")
    variants = [_variant(d, i) for i, d in enumerate(entries)]
    for v in variants:
        _check_variant_techniques(v, techs, path)
    names = [v.name for v in variants]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise VeilError(f"{path}: method name(s) used twice: {', '.join(dup)}")
    report = raw.get("report") or {}
    extra = [resolve_path(p, base) for p in (report.get("extra") or [])]
    check_keys(report, ("examples", "extra"), str(path), "report key")
    examples = report.get("examples", 0)
    if not isinstance(examples, int) or isinstance(examples, bool) or examples < 0:
        raise VeilError(f"{path}: report.examples must be a number of documents (0 or more)")
    keep = raw.get("keep") or []
    if isinstance(keep, str):
        keep = [keep]
    if not isinstance(keep, list) or not all(isinstance(k, str) and k.strip() for k in keep):
        raise VeilError(f"{path}: keep must be a list of tokens (e.g. ['<unk>'])")
    style = raw.get("style", "mask")
    if style not in ("mask", "typed", "numbered"):
        raise VeilError(f"{path}: style must be mask, typed or numbered")
    asr = None
    if raw.get("asr") not in (None, False):  # asr: false (or null) runs no ASR evaluation
        from veil.downstream.asr.settings import ASRSettings

        if not isinstance(raw["asr"], dict):
            raise VeilError(f"{path}: asr must be a mapping (speech, voices, rates, sentences, dev, ...)")
        asr = ASRSettings.from_dict(raw["asr"])
    return ExperimentSpec(
        name=str(raw.get("name") or path.stem), source=path, train=_corpus(raw["train"], "train", base),
        test=_corpus(raw["test"], "test", base),
        pretrain=_corpus(raw["pretrain"], "pretrain", base) if raw.get("pretrain") else None,
        techniques={t: dict(o or {}) for t, o in techs.items()}, variants=variants, lm=dict(raw.get("lm") or {}),
        style=style, seed=int(raw.get("seed", 0)),
        cache=resolve_path(raw["cache"], base) if raw.get("cache") else None, report_extra=extra, keep=keep,
        report_examples=examples, asr=asr, task=_task(raw))


def _task(raw: dict[str, Any]) -> Any:
    """``task:`` (a mapping, or empty for the defaults; ``false`` for none) as TaskSettings."""
    if "task" not in raw or raw["task"] is False:
        return None
    from veil.downstream.task.settings import TaskSettings

    return TaskSettings.from_dict(raw["task"])
