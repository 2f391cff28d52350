"""Fill stage: reading a masked JSONL corpus and filling it into an output file, atomically and resumably.

Input: one JSON object a line with ``id`` and ``text`` (the masked text, look-alikes escaped) and,
as ``veil mask`` writes them, ``placeholders`` (``[{start, end, label, key, technique}]``),
``style``, ``person``, ``group``; other fields are carried through. Without ``placeholders`` the
markers of the text are the placeholders (their technique is then unknown, so no avoid-list applies).

Output: ``OUTPUT`` (``{id, text, ...carried fields}``) and ``OUTPUT.substitutions.jsonl``
(``{id, placeholder, key, label, substitute, start, end}``, offsets into the filled text).
Both are written under ``.partial`` names chunk by chunk; a small ``.progress.json`` records how
many documents and bytes are complete and how long the run has taken so far, so an interrupted run
resumes where it stopped (same results: every document draws from its own seeded RNG) and its
reported time covers the runs before it; the final names appear only when the whole corpus is done.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from veil.errors import InputError, VeilError
from veil.io.records import filled_to_record as filled_record  # noqa: F401  (the fill output's record)
from veil.io.records import substitution_records  # noqa: F401
from veil.mask.placeholders import find_markers, parse_marker_name
from veil.types import FilledDocument, MaskedDocument, Placeholder

log = logging.getLogger(__name__)

_CORE = ("id", "text", "placeholders", "style", "person", "group")


def substitutions_path(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".substitutions.jsonl")


def _infer_style(text: str) -> str:
    names = [n for _, _, n in find_markers(text)]
    if all(n.upper() == "MASK" for n in names):
        return "mask"
    return "numbered" if any(parse_marker_name(n)[1] is not None for n in names) else "typed"


def masked_from_record(rec: Any, path: str, line: int) -> MaskedDocument:
    if not isinstance(rec, dict):
        raise InputError(path, line, "expected a JSON object with fields id and text")
    if "text" not in rec or not isinstance(rec["text"], str):
        raise InputError(path, line, "missing string field 'text'")
    if "id" not in rec:
        raise InputError(path, line, "missing field 'id'")
    try:
        phs = tuple(Placeholder.from_dict(p) for p in rec.get("placeholders") or ())
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(path, line, f"bad placeholders record: {e}") from None
    style = rec.get("style") or _infer_style(rec["text"])
    meta = {k: v for k, v in rec.items() if k not in _CORE}
    return MaskedDocument(str(rec["id"]), rec["text"], phs, style, rec.get("person"), rec.get("group"), meta)


def iter_masked_jsonl(path: str | Path) -> Iterator[MaskedDocument]:
    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), None, "no such file")
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(str(path), n, f"not valid JSON ({e.msg})") from None
            yield masked_from_record(rec, str(path), n)


def read_masked_jsonl(path: str | Path, limit: int | None = None) -> list[MaskedDocument]:
    out = []
    for d in iter_masked_jsonl(path):
        if limit is not None and len(out) >= limit:
            break
        out.append(d)
    return out



def _stat(path: str | Path) -> list[int]:
    """Size and modification time: a resumed run must read the same input file."""
    st = Path(path).stat()
    return [st.st_size, st.st_mtime_ns]


def _write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj), encoding="utf-8")
    os.replace(tmp, path)


def fill_file(filler: Any, input_path: str | Path, output: str | Path, *, chunk_size: int = 256,
              settings: dict[str, Any] | None = None, overwrite: bool = False, limit: int | None = None,
              progress: bool = True) -> dict[str, Any]:
    """Fill ``input_path`` into ``output`` (+ substitutions file); resumes an interrupted run.

    ``settings`` (filler name, model, strategy, seed, ...) are stored with the progress record; a
    resume with different settings is refused unless ``overwrite``. Returns run statistics.
    """
    from tqdm import tqdm

    output = Path(output)
    subs_out = substitutions_path(output)
    part, subs_part = output.with_name(output.name + ".partial"), subs_out.with_name(subs_out.name + ".partial")
    state_path = output.with_name(output.name + ".progress.json")
    settings = dict(settings or {})
    docs = read_masked_jsonl(input_path, limit)
    if not docs:
        raise InputError(str(input_path), None, "the corpus is empty")
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.exists() and subs_out.exists() and not state_path.exists() and not overwrite:
        log.info("%s is complete already; nothing to do (pass --overwrite to fill again)", output)
        return {"documents": len(docs), "filled_now": 0, "complete_already": True}
    done, earlier_s = 0, 0.0
    if state_path.exists() and part.exists() and subs_part.exists() and not overwrite:
        state = json.loads(state_path.read_text(encoding="utf-8"))
        if (state.get("settings") != settings or state.get("input") != str(Path(input_path).resolve())
                or state.get("input_stat") != _stat(input_path)):
            raise VeilError(f"{output}: an unfinished run with other settings or another input exists "
                            f"({state_path}); pass --overwrite to start again")
        done = int(state["docs"])
        earlier_s = float(state.get("seconds", 0.0))  # time the interrupted runs spent on the chunks kept
        for p, size in ((part, state["bytes"]), (subs_part, state["subs_bytes"])):
            with p.open("r+b") as f:
                f.truncate(int(size))
        log.info("resuming %s after %d of %d documents", output, done, len(docs))
    else:
        part.write_bytes(b"")
        subs_part.write_bytes(b"")
    t0 = time.perf_counter()
    n_docs = n_subs = 0
    bar = tqdm(total=len(docs), initial=done, unit="doc", desc="fill", disable=not progress)
    with part.open("ab") as fo, subs_part.open("ab") as fs:
        for start in range(done, len(docs), chunk_size):
            chunk = docs[start:start + chunk_size]
            filled = filler.fill(chunk)
            fo.write("".join(json.dumps(filled_record(d), ensure_ascii=False) + "\n" for d in filled).encode())
            fs.write("".join(json.dumps(r, ensure_ascii=False) + "\n"
                             for d in filled for r in substitution_records(d)).encode())
            fo.flush()
            fs.flush()
            os.fsync(fo.fileno())
            os.fsync(fs.fileno())
            n_docs += len(chunk)
            n_subs += sum(len(d.substitutions) for d in filled)
            _write_json_atomic(state_path, {"docs": start + len(chunk), "bytes": fo.tell(), "subs_bytes": fs.tell(),
                                            "settings": settings, "input": str(Path(input_path).resolve()),
                                            "input_stat": _stat(input_path),
                                            "seconds": earlier_s + time.perf_counter() - t0})  # unrounded: a fast chunk is not 0
            bar.update(len(chunk))
    bar.close()
    os.replace(subs_part, subs_out)
    os.replace(part, output)
    state_path.unlink(missing_ok=True)
    secs = time.perf_counter() - t0
    # seconds: this run; seconds_earlier: interrupted runs before it, up to their last complete chunk
    stats = {"documents": len(docs), "filled_now": n_docs, "substitutions_now": n_subs, "seconds": round(secs, 2),
             "seconds_earlier": round(earlier_s, 2), "docs_per_s": round(n_docs / secs, 2) if secs > 0 else None}
    stats.update({k: v for k, v in getattr(filler, "stats", {}).items()})
    return stats


def fill_documents(filler: Any, docs: Sequence[MaskedDocument], chunk_size: int = 256,
                   progress: bool = False) -> list[FilledDocument]:
    """Fill in memory, chunk by chunk, with a progress bar (used by ``veil finetune`` rounds)."""
    from tqdm import tqdm

    out: list[FilledDocument] = []
    with tqdm(total=len(docs), unit="doc", desc="fill", disable=not progress) as bar:
        for s in range(0, len(docs), chunk_size):
            out.extend(filler.fill(docs[s:s + chunk_size]))
            bar.update(min(chunk_size, len(docs) - s))
    return out


def iter_filled_jsonl(output: str | Path) -> Iterator[FilledDocument]:
    """The filled documents of a ``veil fill`` output with their substitutions (from the file beside it)."""
    from veil.types import Substitution

    output = Path(output)
    subs: dict[str, list[Substitution]] = {}
    with substitutions_path(output).open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                subs.setdefault(str(r["id"]), []).append(Substitution(
                    str(r["id"]), r["placeholder"], r["key"], r["label"], r["substitute"], r["start"], r["end"]))
    with output.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                meta = {k: v for k, v in r.items() if k not in _CORE}
                yield FilledDocument(str(r["id"]), r["text"], tuple(subs.get(str(r["id"]), ())),
                                     r.get("person"), r.get("group"), meta)
