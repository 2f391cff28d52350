"""Report stage check: render report.html in headless Chromium, save a screenshot, and check what it shows.

    python bench/check_report.py [REPORT.html] [--png OUT.png] [--width 1280 --height 2400]

Default report: out/demo/experiment/report.html (what `make demo` writes). Exits 0 with a "skipped"
line when Chromium is not installed (`apt-get install -y chromium`, Debian), 1 when the page lacks a
section a reader needs (legend, gap-recovered explanation, figures, privacy audit, version and date)
or the screenshot is blank, 2 when the report does not exist.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: what a reader must find in the page (the check on the HTML; the screenshot is for the eye)
REQUIRED = {
    "legend of the methods": r"What the methods are",
    "gap recovered explained": r"Gap recovered</b> = \(PPL Baseline0",
    "perplexity figure": r'alt="perplexity"',
    "gap figure": r'alt="gap recovered"',
    "privacy audit": r"<h2>Privacy audit</h2>",
    "noise note": r"Noise: ",
    "version and date": r"veil \S+ · report written \d{4}-\d\d-\d\d",
}


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def screenshot(browser: str, page: Path, png: Path, width: int, height: int) -> None:
    with tempfile.TemporaryDirectory() as profile:  # a fresh profile: no state shared with other runs
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                        f"--screenshot={png}", f"--window-size={width},{height}", "--hide-scrollbars",
                        page.resolve().as_uri()], check=True, capture_output=True, timeout=120)


def blank(png: Path) -> bool:
    """True when the screenshot is (nearly) one colour: the page did not render."""
    import matplotlib.image as mpimg

    img = mpimg.imread(str(png))
    return float(img[..., :3].std()) < 0.01


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", nargs="?", type=Path, default=Path("out/demo/experiment/report.html"))
    ap.add_argument("--png", type=Path, default=None, help="screenshot path (default: beside the report)")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=2400)
    args = ap.parse_args(argv)
    if not args.report.is_file():
        print(f"{args.report}: no such report (run `make demo` first)", file=sys.stderr)
        return 2
    html = args.report.read_text(encoding="utf-8")
    missing = [name for name, pattern in REQUIRED.items() if not re.search(pattern, html)]
    browser = find_chromium()
    if browser is None:
        print("screenshot skipped: chromium is not installed (apt-get install -y chromium)")
    else:
        png = args.png or args.report.with_suffix(".png")
        screenshot(browser, args.report, png, args.width, args.height)
        if blank(png):
            missing.append("a rendered page (the screenshot is blank)")
        print(f"screenshot: {png}")
    if missing:
        print("report check FAILED, missing: " + "; ".join(missing), file=sys.stderr)
        return 1
    print(f"report check passed: {args.report} has {', '.join(REQUIRED)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
