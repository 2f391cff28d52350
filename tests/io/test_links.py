"""Issue 32 item 1: no file veil writes follows a symbolic link, and OUTPUT never ends as one.

A link planted at an output's side file (``OUT.partial``, ``OUT.progress.json``, the fill's
``OUT.substitutions.jsonl.partial``, the old fixed temporary names ``OUT.tmp`` and
``OUT.progress.json.tmp``, the lock) used to make veil overwrite the link's target with corpus
records. Now a link found before the work is refused in one line (before any model loads); one
planted during the run makes that write fail instead of following it; temporary files have random
names, are created exclusively and live in the output's folder.
"""

import json
import os
from pathlib import Path

import pytest

from tests.io.test_hardening import NameMasker, _corpus, _jsonl, _mask, fakes  # noqa: F401  (fakes: autouse)
from veil.cli import main
from veil.errors import VeilError
from veil.io import atomic

SECRET = "root's secret, mode 0600\n"


def _victim(tmp_path: Path) -> Path:
    v = tmp_path / "victim.txt"
    v.write_text(SECRET)
    v.chmod(0o600)
    return v


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def _masked(tmp_path):
    src = _corpus(tmp_path)
    masked = tmp_path / "m.jsonl"
    assert _mask(src, "-o", masked) == 0
    return masked


@pytest.mark.parametrize("suffix", [".partial", ".progress.json", ".veil.json", ".lock"])
def test_a_link_at_a_side_file_of_mask_is_refused_before_the_work(tmp_path, capsys, suffix):
    src, out, victim = _corpus(tmp_path), tmp_path / "out.jsonl", _victim(tmp_path)
    Path(str(out) + suffix).symlink_to(victim)
    assert _mask(src, "-o", out) == 2
    assert "symbolic link" in _one_line(capsys.readouterr().err)
    assert victim.read_text() == SECRET and NameMasker.built == 0 and not out.exists()


@pytest.mark.parametrize("suffix", [".substitutions.jsonl.partial", ".substitutions.jsonl", ".partial"])
def test_a_link_at_a_side_file_of_fill_is_refused_before_the_work(tmp_path, capsys, suffix):
    masked, out, victim = _masked(tmp_path), tmp_path / "f.jsonl", _victim(tmp_path)
    Path(str(out) + suffix).symlink_to(victim)
    assert main(["fill", str(masked), "-o", str(out), "--filler", "faker", "--no-progress"]) == 2
    assert "symbolic link" in _one_line(capsys.readouterr().err)
    assert victim.read_text() == SECRET and not out.exists()


@pytest.mark.parametrize("ext", ["csv", "parquet", "jsonl"])
def test_links_at_the_old_fixed_temporary_names_are_never_written_through(tmp_path, ext):
    """``OUT.tmp`` (the CSV / Parquet conversion) and ``OUT.progress.json.tmp`` were fixed names: now random."""
    src, out, victim = _corpus(tmp_path), tmp_path / f"out.{ext}", _victim(tmp_path)
    for name in (f"out.{ext}.tmp", f"out.{ext}.progress.json.tmp", f"out.{ext}.veil.json.tmp"):
        (tmp_path / name).symlink_to(victim)
    assert _mask(src, "-o", out) == 0
    assert victim.read_text() == SECRET
    assert out.is_file() and not out.is_symlink()
    strays = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]
    assert strays == []


class _Planter(NameMasker):
    """Test masker: on its first batch (after every check passed) plants a link where veil will write."""

    name = "planter"
    plant: tuple[Path, ...] = ()
    victim: Path | None = None

    def detect(self, text):
        for p in type(self).plant:
            if not p.is_symlink():
                p.unlink(missing_ok=True)
                p.symlink_to(type(self).victim)
        return super().detect(text)


@pytest.mark.parametrize("suffix", ["", ".partial", ".progress.json"])
def test_a_link_planted_during_the_run_is_not_followed_and_output_never_becomes_a_link(
        tmp_path, capsys, monkeypatch, suffix):
    from veil.registry import maskers

    monkeypatch.setitem(maskers._entries, "planter", _Planter)
    src, out, victim = _corpus(tmp_path), tmp_path / "out.jsonl", _victim(tmp_path)
    monkeypatch.setattr(_Planter, "plant", (Path(str(out) + suffix),))
    monkeypatch.setattr(_Planter, "victim", victim)
    rc = main(["mask", str(src), "-o", str(out), "--masker", "planter", "--no-progress"])
    err = capsys.readouterr().err
    assert victim.read_text() == SECRET
    assert not (out.is_symlink() and rc == 0)
    assert rc == 2 and ("symbolic link" in err or "was replaced during the run" in err), err
    _one_line(err)


def test_a_csv_run_whose_partial_file_is_swapped_for_a_link_copies_nothing_from_it(tmp_path, capsys, monkeypatch):
    """The CSV conversion reads the partial file: a link in its place must not carry the target into the output."""
    from veil.registry import maskers

    monkeypatch.setitem(maskers._entries, "planter", _Planter)
    src, out, victim = _corpus(tmp_path), tmp_path / "out.csv", _victim(tmp_path)
    monkeypatch.setattr(_Planter, "plant", (Path(str(out) + ".partial"),))
    monkeypatch.setattr(_Planter, "victim", victim)
    assert main(["mask", str(src), "-o", str(out), "--masker", "planter", "--no-progress"]) == 2
    assert "was replaced during the run" in _one_line(capsys.readouterr().err)
    assert not out.exists() and victim.read_text() == SECRET


def test_stats_json_given_a_folder_names_it_and_leaves_nothing(tmp_path, capsys):
    src, folder = _corpus(tmp_path), tmp_path / "stats"
    folder.mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    assert _mask(src, "--stats", "--stats-json", folder) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"{folder} is a folder" in err and ".tmp" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before and list(folder.iterdir()) == []
    assert NameMasker.built == 0  # refused before the statistics are computed


def test_stats_json_is_written_atomically(tmp_path):
    src, out = _corpus(tmp_path), tmp_path / "s.json"
    assert _mask(src, "--stats", "--stats-json", out) == 0
    assert json.loads(out.read_text())[str(src)]["documents"] == 6


# --- the helper itself ---------------------------------------------------------------------------------
def test_atomic_write_refuses_links_folders_and_devices_and_leaves_no_temporary(tmp_path):
    victim = _victim(tmp_path)
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    for target, message in ((link, "symbolic link"), (tmp_path, "is a folder"), (Path("/dev/null"), "not a regular")):
        with pytest.raises(VeilError, match=message):
            atomic.write_json_atomic(target, {"a": 1})
    assert victim.read_text() == SECRET
    with pytest.raises(RuntimeError):
        with atomic.atomic_write(tmp_path / "x.txt", "w") as f:
            f.write("half")
            raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "victim.txt"]
    with pytest.raises(VeilError, match="NaN"):
        atomic.write_json_atomic(tmp_path / "n.json", {"x": float("nan")})
    assert not (tmp_path / "n.json").exists()


def test_atomic_write_replaces_a_regular_file_and_keeps_the_umask(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("old")
    old_umask = os.umask(0o022)
    try:
        atomic.write_text_atomic(p, "new")
    finally:
        os.umask(old_umask)
    assert p.read_text() == "new" and (p.stat().st_mode & 0o777) == 0o644


def test_open_new_and_open_existing_never_follow_a_link(tmp_path):
    victim = _victim(tmp_path)
    link = tmp_path / "p.partial"
    link.symlink_to(victim)
    with pytest.raises(VeilError, match="symbolic link"):
        atomic.open_new(link)
    with pytest.raises(VeilError, match="symbolic link"):
        atomic.open_existing(link)
    fd = None
    with pytest.raises(FileExistsError):
        fd = atomic.create_new(link)
    assert fd is None and victim.read_text() == SECRET


def test_replace_file_refuses_a_source_swapped_for_a_link(tmp_path):
    victim = _victim(tmp_path)
    src = tmp_path / "a.partial"
    with atomic.open_new(src) as f:
        f.write(b"records\n")
        ident = atomic.identity(f)
    src.unlink()
    src.symlink_to(victim)
    with pytest.raises(VeilError, match="was replaced during the run"):
        atomic.replace_file(src, tmp_path / "a", ident)
    assert not (tmp_path / "a").exists()


def test_a_fine_tuned_model_is_never_written_through_a_link(tmp_path):
    """``veil finetune -o OUT`` wrote into ``OUT.partial``, a fixed name a link could take over."""
    from veil.fill.finetune import save_model

    class Saves:
        def save_pretrained(self, folder):
            (Path(folder) / "weights.bin").write_bytes(b"weights")

    victim = tmp_path / "victim"
    victim.mkdir()
    out = tmp_path / "ft"
    (tmp_path / "ft.partial").symlink_to(victim)
    save_model(Saves(), Saves(), out, {"steps": 1})
    assert list(victim.iterdir()) == [] and out.is_dir() and not out.is_symlink()
    assert (out / "weights.bin").read_bytes() == b"weights" and (out.stat().st_mode & 0o777) == 0o755
    save_model(Saves(), Saves(), out, {"steps": 2})  # replaced whole, atomically
    assert json.loads((out / "veil_finetune.json").read_text()) == {"steps": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ft", "ft.partial", "victim"]
