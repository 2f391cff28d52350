import subprocess
import sys

from veil import registry
from veil.mask.detectors import DEFAULT_DETECTORS


def test_every_builtin_is_registered():
    """One line per kind: a plug-in that loses its registration line shows here."""
    assert registry.maskers.names() == ["allow_list", "deny_list", "dlp", "entity_tagger", "neural_tagger", "quasi", "vocab_threshold"]
    assert registry.detectors.names() == sorted(DEFAULT_DETECTORS) == [
        "age", "case_code", "credit_card", "date", "duration", "email", "health", "ip_address", "life_event_date",
        "money", "nationality", "non_latin_name", "number", "occupation", "phone", "quantity", "service",
        "spelled_name", "spelled_word", "spoken_address", "spoken_age", "spoken_email", "spoken_price",
        "street_address", "titled_name", "url", "us_ssn", "username"]
    assert registry.fillers.names() == ["faker", "llm", "llm-instruct", "mlm"]
    assert registry.readers.names() == ["csv", "jsonl", "parquet", "switchboard", "txt"]
    assert registry.gold_formats.names() == ["conll", "presidio", "review", "sgd", "switchboard_pii", "tab"]
    assert registry.downstream_lms.names() == ["gpt2"]
    assert registry.ppmlm_methods.names() == ["base", "dp", "dppmlm", "ippmlm", "mlm", "mlma", "ppmlm"]


def test_every_registry_is_listed_in_all():
    kinds = [v for v in vars(registry).values() if isinstance(v, registry.Registry)]
    assert sorted(r.kind for r in kinds) == sorted(r.kind for r in registry.ALL)


def test_every_registered_entry_resolves_under_its_own_name():
    for reg in registry.ALL:
        for name in reg.names():
            obj = reg.get(name)
            assert obj is not None, (reg.kind, name)
            if reg in (registry.maskers, registry.fillers, registry.ppmlm_methods):
                assert obj.name == name, (reg.kind, name, obj.name)


def test_cli_help_does_not_import_heavy_libraries():
    code = ("import sys; from veil.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert 'torch' not in sys.modules and 'spacy' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
