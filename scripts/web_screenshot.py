"""Take the web page's screenshot for the docs: the demo mid-plan, panel docked above the input.

    uv run python scripts/web_screenshot.py docs/images/web.png

Starts `harness serve` on a throwaway HARNESS_HOME, runs the embedded demo from the page in the
system Chromium, and saves the page once the plan is half done.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from playwright.sync_api import sync_playwright
from web_support import serve

FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def main(target: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs the chromium package (apt-get install chromium)")
    home = Path(tempfile.mkdtemp(prefix="harness-shot-")) / "home"
    with serve(home) as served, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=FLAGS)
        page = browser.new_page(viewport={"width": 1100, "height": 720})
        page.goto(f"{served.url}?token={served.token}")
        page.click("[data-testid=demo]")
        page.wait_for_selector("[data-testid=todo-summary]:has-text('4/4')", timeout=30000)
        page.wait_for_timeout(300)
        page.screenshot(path=str(target))
        browser.close()
    print(f"wrote {target}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images/web.png"))
