"""Take the web page's screenshots for the docs: the demo mid-plan, at a desk and on a phone.

    uv run python scripts/web_screenshot.py docs/images

Starts `harness serve` on a throwaway HARNESS_HOME, runs the embedded demo from the page in the
system Chromium at 1280x800, saves `web.png` once the plan is half done (the demo is paced,
so the plan fills in step by step), then `web-phone.png` of the same session at 390x844 and
`web-dark.png` at the desk width in the dark theme once the plan is done.
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
DESK = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def main(target: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs the chromium package (apt-get install chromium)")
    target.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="harness-shot-")) / "home"
    with serve(home) as served, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=FLAGS)
        page = browser.new_page(viewport=DESK)
        page.goto(f"{served.url}?token={served.token}")
        page.click("[data-testid=demo]")
        page.wait_for_selector("[data-testid=todo-summary]:has-text('2/4')", timeout=30000)
        page.wait_for_timeout(300)
        page.screenshot(path=str(target / "web.png"))
        url = page.url
        phone = browser.new_page(viewport=PHONE, device_scale_factor=2, is_mobile=True)
        phone.goto(f"{served.url}?token={served.token}")
        phone.goto(url)
        phone.wait_for_selector("[data-testid=todo-summary]:has-text('3/4')", timeout=30000)
        phone.wait_for_timeout(300)
        phone.screenshot(path=str(target / "web-phone.png"))
        dark = browser.new_page(viewport=DESK, color_scheme="dark")
        dark.goto(f"{served.url}?token={served.token}")
        dark.goto(url)
        dark.wait_for_selector("[data-testid=todo-summary]:has-text('4/4')", timeout=30000)
        dark.wait_for_timeout(1500)
        dark.screenshot(path=str(target / "web-dark.png"))
        browser.close()
    print(f"wrote web.png, web-phone.png and web-dark.png in {target}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images"))
