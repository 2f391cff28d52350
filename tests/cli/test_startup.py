"""Start-up cost: `veil --help` imports no heavy library; loading the NER pipeline does not import presidio."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules_after(code):
    r = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
                       capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert r.returncode == 0, r.stderr
    return set(r.stdout.split())


def test_help_imports_no_heavy_library():
    mods = _modules_after("from veil.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass")
    assert not mods & {"torch", "spacy", "presidio_analyzer", "transformers", "pyarrow"}


def test_the_default_ner_pipeline_loads_without_presidio():
    mods = _modules_after("from veil.mask.entity_tagger import load_ner\nload_ner()")
    assert "spacy" in mods and "presidio_analyzer" not in mods
