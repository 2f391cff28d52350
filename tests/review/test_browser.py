"""The review page in a real browser: headless Chromium (Debian's package) driven by Playwright.

Skips cleanly where Chromium or Playwright is missing (`make review-check` installs Chromium and runs
this file; it saves a screenshot to $VEIL_REVIEW_SCREENSHOT). A reviewer selects a missed name with
the mouse and tags it (d), rejects a false-positive mask (click, x), marks the document done (Enter),
reloads the page, sees both decisions again, and the gold export holds both.
"""

import contextlib
import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from veil.cli import main

pytestmark = pytest.mark.browser

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def _missing(why):
    if os.environ.get("VEIL_REQUIRE_BROWSER"):  # make review-check: a browser that cannot run is a failure
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture
def browser():
    if CHROMIUM is None:
        _missing("Chromium is not installed (apt-get install -y chromium; make review-check does)")
    try:
        from playwright import sync_api
    except ImportError:
        _missing("the playwright package is not installed (pip install playwright)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@contextlib.contextmanager
def _review_page(browser, masked, original):
    """MASKED's review page, served on a free port and open in the browser: (page, url); no page error may
    occur, and the server is stopped at the end."""
    from test_review_cli import start_server

    server, url = start_server([str(masked), "--original", str(original), "--port", "0"])
    errors: list[str] = []
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 720})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        yield page, url
        assert not errors, errors
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)


def test_tag_a_missed_name_reject_a_false_positive_reload_export(corpus, browser, tmp_path, capsys):
    original, masked = corpus
    with _review_page(browser, masked, original) as (page, url):
        page.wait_for_selector("#masked .ph")
        assert page.inner_text("#doc-title").startswith("d1")
        assert "Dunder Mifflin" in page.inner_text("#original")
        assert page.input_value("#label") == "PERSON_NAME"
        # select the missed last name with the mouse (a double click selects one word) and tag it
        page.locator("#masked").get_by_text("Green", exact=False).first.wait_for()
        box = page.evaluate("""() => {
            const node = [...document.querySelector('#masked .utt').childNodes].find(n => n.nodeType === 3 && n.data.includes('Green'));
            const r = document.createRange(); const i = node.data.indexOf('Green');
            r.setStart(node, i); r.setEnd(node, i + 5); const b = r.getBoundingClientRect();
            return {x: b.x + b.width / 2, y: b.y + b.height / 2};
        }""")
        page.mouse.dblclick(box["x"], box["y"])
        assert page.evaluate("() => getSelection().toString()").strip() == "Green"
        page.keyboard.press("d")
        page.wait_for_selector("#masked .missed")
        assert page.inner_text("#masked .missed") == "Green"
        assert page.inner_text("#original .missed") == "Green"  # the same piece in the original
        # the mask over "Please" is a false positive: click it, reject it
        page.click("#masked .ph[data-i='1']")
        page.keyboard.press("x")
        page.wait_for_selector("#masked .ph.rejected")
        assert "rejected" in page.inner_text("#message") or "not PI" in page.inner_text("#message")
        shot = Path(os.environ.get("VEIL_REVIEW_SCREENSHOT") or tmp_path / "review.png")
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.click("#masked .missed")  # show a selection in the picture
        page.screenshot(path=str(shot))
        assert shot.stat().st_size > 10_000
        page.keyboard.press("Enter")  # done: the next document opens
        page.wait_for_function("() => document.querySelector('#doc-title').textContent.startsWith('d2')")
        assert "1 / 3 done" in page.inner_text("#progress-text")
        # a reload (or a new browser) shows the saved decisions
        page.goto(url + "#doc=0")
        page.reload()
        page.wait_for_selector("#masked .missed")
        assert page.inner_text("#masked .missed") == "Green"
        assert page.locator("#masked .ph.rejected").count() == 1
        assert page.inner_text("#doc-status") == "✓ done"
    gold = tmp_path / "gold.jsonl"
    assert main(["review", str(masked), "--export", "gold", "-o", str(gold)]) == 0
    rec = json.loads(gold.read_text().splitlines()[0])
    assert [(rec["text"][s["start"]:s["end"]], s["origin"]) for s in rec["spans"]] == [
        ("Rachel", "mask"), ("Green", "missed")]
    assert [rec["text"][s["start"]:s["end"]] for s in rec["rejected"]] == ["Please"]


def test_a_call_on_one_page(browser, tmp_path):
    """--group-field: every utterance of a call on one page; a tag goes to its utterance; Enter marks the call done."""
    original = tmp_path / "calls.jsonl"
    rows = [("a1", "A", "Hi, this is Rachel Green."), ("a2", "A", "I live on Elm Street, Scranton."),
            ("b1", "B", "Nothing personal here.")]
    original.write_text("".join(json.dumps({"id": i, "call": c, "text": t}) + "\n" for i, c, t in rows))
    masked = tmp_path / "masked.jsonl"
    assert main(["mask", str(original), "-o", str(masked), "--masker", "dlp", "--group-field", "call", "-q"]) == 0
    with _review_page(browser, masked, original) as (page, url):
        page.wait_for_selector("#masked .utt")
        assert page.inner_text("#doc-title").startswith("A") and "2 utterances" in page.inner_text("#doc-title")
        assert page.locator("#masked .utt").count() == 2 and page.locator("#original .utt").count() == 2
        box = page.evaluate("""() => {
            const utt = document.querySelectorAll('#masked .utt')[1];
            const node = [...utt.childNodes].find(n => n.nodeType === 3 && n.data.includes('Scranton'));
            const r = document.createRange(); const i = node.data.indexOf('Scranton');
            r.setStart(node, i); r.setEnd(node, i + 8); const b = r.getBoundingClientRect();
            return {x: b.x + b.width / 2, y: b.y + b.height / 2};
        }""")
        page.mouse.dblclick(box["x"], box["y"])
        page.select_option("#label", "LOCATION")
        page.keyboard.press("q")
        page.wait_for_selector("#masked .utt[data-doc='1'] .missed")
        assert page.inner_text("#original .utt[data-doc='1'] .missed") == "Scranton"
        assert page.locator("#masked .utt[data-doc='0'] .missed").count() == 0
        page.keyboard.press("Enter")  # the whole call done: the next call opens
        page.wait_for_function("() => document.querySelector('#doc-title').textContent.startsWith('B')")
        assert "1 / 2 calls done" in page.inner_text("#progress-text")
    lines = [json.loads(x) for x in masked.with_name(masked.name + ".review.jsonl").read_text().splitlines()[1:]]
    assert [(d["doc"], d["action"]) for d in lines] == [("a2", "missed"), ("a1", "done"), ("a2", "done")]
