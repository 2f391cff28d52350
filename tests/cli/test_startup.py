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


def test_the_default_ner_pipeline_loads_without_presidio_or_torch():
    mods = _modules_after("from veil.mask.entity_tagger import load_ner\n"
                          "assert load_ner()('John Smith moved to Paris').ents\n"
                          "import torch  # still importable afterwards")
    assert "spacy" in mods and "presidio_analyzer" not in mods


def test_veil_mask_with_the_default_maskers_imports_no_torch(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": 1, "text": "Call John Smith at 415-555-0132."}\n')
    mods = _modules_after(f"from veil.cli import main\nassert main(['mask', {str(src)!r}, '-o', "
                          f"{str(tmp_path / 'o.jsonl')!r}, '-q']) == 0")
    # the default neural tagger runs on onnxruntime: neither torch nor transformers nor spaCy is loaded
    assert "onnxruntime" in mods and not mods & {"torch", "presidio_analyzer", "transformers", "spacy"}
