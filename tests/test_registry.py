import subprocess
import sys

from veil import registry


def test_builtin_maskers_and_fillers_are_registered():
    assert registry.maskers.names() == ["allow_list", "deny_list", "dlp", "entity_tagger", "neural_tagger", "quasi", "vocab_threshold"]
    assert registry.fillers.names() == ["faker", "llm", "llm-instruct", "mlm"]


def test_every_registered_entry_resolves():
    for reg in (registry.maskers, registry.fillers, registry.readers, registry.writers, registry.downstream_lms):
        for name in reg.names():
            assert reg.get(name) is not None, (reg.kind, name)


def test_cli_help_does_not_import_heavy_libraries():
    code = ("import sys; from veil.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert 'torch' not in sys.modules and 'spacy' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
