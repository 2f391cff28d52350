"""Issue 32 item 3: no copy of standard input outlives a run, whatever ends it.

``veil mask - -o -`` keeps a copy of standard input (the unmasked corpus) to check it before the
work. After SIGTERM or SIGKILL a full copy stayed in ``veil-stdin-*``; SIGINT said "re-run the same
command to resume", which standard output cannot do. Now the copy is a nameless file that dies with
the process (Linux), or a private folder removed on exit and by the next run.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.io.test_hardening import fakes  # noqa: F401  (autouse: the names masker)
from veil.io import scratch

ROOT = Path(__file__).resolve().parents[2]

# a CLI whose masker signals that the work started, then waits: the test sends its signal meanwhile
_SLOW_CLI = """
import sys, time
from pathlib import Path
from veil.registry import maskers
from tests.io.test_hardening import NameMasker

class Slow(NameMasker):
    name = "slow"
    def detect(self, text):
        Path(sys.argv[1]).touch()
        time.sleep(60)
        return super().detect(text)

maskers.register("slow", Slow)
from veil.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _start(tmp_path: Path):
    tmproot = tmp_path / "tmp"
    tmproot.mkdir(exist_ok=True)
    started = tmp_path / "started"
    started.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmproot)}
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_CLI, str(started), "mask", "-", "-o", "-", "--masker",
                             "slow", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=ROOT, text=True,
                            # a shell's background job ignores SIGINT, and a child would inherit that
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    proc.stdin.write("".join(json.dumps({"id": i, "text": f"secret Anna Smith {i}"}) + "\n" for i in range(5)))
    proc.stdin.close()
    proc.stdin = None  # (communicate() would flush it)
    deadline = time.time() + 120
    while not started.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.time() < deadline, "the masker never started"
        time.sleep(0.1)
    return proc, tmproot


def _stdin_copies(tmproot: Path) -> list[str]:
    found = []
    for p in tmproot.rglob("*"):
        if p.name.startswith("veil-stdin-") or (p.is_file() and "secret Anna" in p.read_text(errors="replace")):
            found.append(str(p.relative_to(tmproot)))
    return found


@pytest.mark.skipif(not scratch.FD_FOLDER.is_dir(), reason="the nameless copy needs /proc/self/fd")
def test_no_named_copy_of_stdin_exists_even_during_the_run_and_sigkill_leaves_nothing(tmp_path):
    proc, tmproot = _start(tmp_path)
    try:
        assert _stdin_copies(tmproot) == []  # the copy has no name to find
    finally:
        proc.kill()
        proc.wait(30)
    assert _stdin_copies(tmproot) == []
    # the standard-output folder a SIGKILL left (masked text only) goes with the next run
    left = [p.name for p in tmproot.iterdir()]
    scratch_dirs = [n for n in left if n.startswith("veil-stdout-")]
    if scratch_dirs:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmproot)}
        code = ("import sys\nfrom veil.registry import maskers\nfrom tests.io.test_hardening import NameMasker\n"
                "maskers.register('names', NameMasker)\nfrom veil.cli import main\nsys.exit(main(sys.argv[1:]))")
        r = subprocess.run([sys.executable, "-c", code, "mask", "-", "-o", "-", "--masker", "names", "-q"],
                           input='{"text": "hi Bob"}\n', capture_output=True, text=True, env=env, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        assert [p.name for p in tmproot.iterdir()] == []


@pytest.mark.parametrize("sig, rc, word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")])
def test_sigterm_and_sigint_remove_everything_and_do_not_promise_a_resume_on_stdout(tmp_path, sig, rc, word):
    proc, tmproot = _start(tmp_path)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == rc, err
    assert err.strip() == f"veil mask: {word}; nothing was kept (standard output cannot be resumed): run the command again"
    assert "resume the" not in err and out == ""
    assert list(tmproot.iterdir()) == []


def test_without_proc_the_copy_lives_in_a_private_folder_removed_on_exit(tmp_path, monkeypatch, capsys):
    import io

    from veil.cli import main

    monkeypatch.setattr(scratch, "FD_FOLDER", tmp_path / "no-proc")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    seen = []
    real = scratch.private_dir

    def spy(prefix):
        d = real(prefix)
        seen.append(d)
        assert (d.stat().st_mode & 0o777) == 0o700
        return d

    monkeypatch.setattr(scratch, "private_dir", spy)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"id": 1, "text": "hi Anna"}\n')))
    assert main(["mask", "-", "-o", str(tmp_path / "o.jsonl"), "--masker", "names", "--no-progress"]) == 0
    assert [d.name.startswith("veil-stdin-") for d in seen] == [True] and not seen[0].exists()


def test_folders_of_killed_runs_are_removed_by_the_next_one(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    left = tmp_path / f"veil-stdin-{dead.pid}-abc"
    left.mkdir()
    (left / "stdin").write_text("secret")
    mine = tmp_path / f"veil-stdin-{os.getpid()}-xyz"
    mine.mkdir()
    assert scratch.remove_abandoned("veil-stdin-") == [left]
    assert not left.exists() and mine.exists()


def test_bad_standard_input_is_named_stdin(tmp_path, capsys, monkeypatch):
    import io

    from veil.cli import main

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"id": 1, "text": "hi"}\n{"id": 2,\n')))
    assert main(["mask", "-", "-o", "-", "--masker", "names", "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == "veil mask: error: <stdin>:2: invalid JSON (Expecting property name " \
                                              "enclosed in double quotes at column 10)"
