"""One builder of a masking engine (run/components.build_engine): its checks hold for every caller, the API caches it."""

from __future__ import annotations

import pytest

import veil
import veil.api
from veil.errors import VeilError
from veil.mask.dlp import DLPMasker
from veil.mask.engine import MaskingEngine
from veil.run.components import DEFAULT_MASKERS, DEFAULT_PLACEHOLDER, build_engine


def test_the_builder_checks_names_options_and_style():
    with pytest.raises(VeilError, match="unknown masker 'nope'"):
        build_engine(["nope"])
    with pytest.raises(VeilError, match="not run"):
        build_engine(["dlp"], options={"allow_list": {}})
    with pytest.raises(VeilError, match="placeholder style"):
        build_engine(["dlp"], "stars")
    with pytest.raises(VeilError, match="must be a list"):
        build_engine("dlp")
    with pytest.raises(VeilError, match="non-empty"):
        build_engine([])
    with pytest.raises(VeilError, match="configure Masker objects directly"):
        build_engine([DLPMasker()], options={"dlp": {}})
    given = DLPMasker()
    assert build_engine([given]).maskers == [given]


def test_one_default_style_everywhere():
    assert DEFAULT_PLACEHOLDER == "numbered"
    assert build_engine(["dlp"]).style == MaskingEngine([DLPMasker()]).style == DEFAULT_PLACEHOLDER
    assert not hasattr(MaskingEngine, "from_names")  # the builder without the checks is gone
    assert [type(m).name for m in build_engine().maskers] == list(DEFAULT_MASKERS)


def test_the_api_caches_the_builders_engine_and_reports_its_errors():
    a = veil.api.masking_engine(["dlp"])
    assert veil.api.masking_engine(["dlp"]) is a and a.style == "numbered"
    with pytest.raises(VeilError, match="placeholder style"):
        veil.api.masking_engine(["dlp"], "stars")
    with pytest.raises(VeilError, match="must be a list"):
        veil.mask("x", maskers="dlp")
