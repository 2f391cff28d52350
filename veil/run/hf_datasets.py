"""Mask / fill stage over a Hugging Face ``datasets.Dataset``: one batched ``Dataset.map`` per stage.

``mask_dataset(ds, engine)`` returns a dataset of masked records (``id``, ``text``, ``placeholders``,
``style``, and the input's other columns), the columns ``veil mask`` writes to JSONL;
``fill_dataset(masked, filler)`` returns filled records (``id``, ``text``, other columns) with the
substitutions in a ``substitutions`` column (the records ``veil fill`` writes beside its output).
The stage runs in ``map``'s batches; with ``num_proc=N`` each process loads its own models (the stage
is pickled without them). Every document draws from its own seeded RNG, so the records equal the
local engine's.
"""

from __future__ import annotations

from typing import Any

from veil.errors import VeilError
from veil.run.stages import FillStage, MaskStage

_OPTIONAL = ("person", "group", "placeholders", "style")


def _columns(records: list[dict[str, Any]], substitutions: list[list[dict[str, Any]]] | None) -> dict[str, list[Any]]:
    keys: dict[str, None] = {}
    for r in records:
        keys.update(dict.fromkeys(r))
    cols = {k: [r.get(k) for r in records] for k in keys}
    if substitutions is not None:
        cols["substitutions"] = substitutions
    return cols


def _rows(batch: dict[str, list[Any]]) -> list[dict[str, Any]]:
    names = list(batch)
    n = len(batch[names[0]]) if names else 0
    return [{k: batch[k][i] for k in names} for i in range(n)]


def mask_dataset(ds: Any, engine: Any, *, text_field: str = "text", id_field: str = "id",
                 drop: tuple[str, ...] = (), batch_size: int = 256, num_proc: int | None = None) -> Any:
    """``ds`` masked by ``engine`` (a :class:`~veil.mask.engine.MaskingEngine`, or a function returning one,
    which each ``map`` process calls once)."""
    from veil.io.formats import Fields, record_to_document
    from veil.io.records import masked_to_record

    if text_field not in ds.column_names or id_field not in ds.column_names:
        raise VeilError(f"the dataset needs columns {text_field!r} and {id_field!r} (it has {', '.join(ds.column_names)})")
    fields = Fields(text=text_field, id=id_field)
    stage = MaskStage(engine if callable(engine) and not hasattr(engine, "mask") else (lambda: engine))

    def fn(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        docs = [record_to_document(rec, fields, "<dataset>", i, i) for i, rec in enumerate(_rows(batch), 1)]
        out = stage([[d] for d in docs])
        return _columns([masked_to_record(u[0], fields, frozenset(drop)) for u in out.units], None)

    return ds.map(fn, batched=True, batch_size=batch_size, num_proc=num_proc, remove_columns=ds.column_names,
                  desc="mask")


def fill_dataset(ds: Any, filler: Any, *, batch_size: int = 64, num_proc: int | None = None) -> Any:
    """``ds`` (masked records, as :func:`mask_dataset` returns them) filled by ``filler`` (a filler, or a
    function returning one)."""
    from veil.io.records import filled_to_record, record_to_masked, substitution_records

    stage = FillStage(filler if callable(filler) and not hasattr(filler, "fill") else (lambda: filler))

    def fn(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        # a column that only some rows have comes back as None in the others: that is "absent" for the
        # optional record fields; other columns are carried as they are
        docs = [record_to_masked({k: v for k, v in rec.items() if v is not None or k not in _OPTIONAL},
                                 None, "<dataset>", i, i) for i, rec in enumerate(_rows(batch), 1)]
        filled = [u[0] for u in stage([[d] for d in docs]).units]
        return _columns([filled_to_record(d) for d in filled], [substitution_records(d) for d in filled])

    return ds.map(fn, batched=True, batch_size=batch_size, num_proc=num_proc, remove_columns=ds.column_names,
                  desc="fill")
