"""Take the web page's screenshots for the docs: the demo mid-plan, at a desk and on a phone.

    uv run python scripts/web_screenshot.py docs/images

Starts `harness serve` on a throwaway HARNESS_HOME, runs the embedded demo from the page in the
system Chromium at 1280x800, saves `web.png` once the plan is half done (the demo is paced,
so the plan fills in step by step), then `web-phone.png` of the same session at 390x844 and
`web-dark.png` at the desk width in the dark theme once the plan is done.

Then the page as a daily tool (`web-daily.png`, `web-daily-phone.png`, `web-daily-list.png`):
a session whose long test run folds into one group with its failures, a failed command, a
turn that ended in an error with Retry, and a new turn running (Stop, "Working"); in the list
it is marked running and another session is marked waiting for an approval.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness_core import builtins
from harness_core.log import SessionStore
from harness_core.plugins import PluginHost
from playwright.sync_api import Browser, sync_playwright
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
        phone.wait_for_selector("[data-testid=todo-summary]:has-text('/4')", timeout=30000)
        phone.wait_for_timeout(300)
        phone.screenshot(path=str(target / "web-phone.png"))
        dark = browser.new_page(viewport=DESK, color_scheme="dark")
        dark.goto(f"{served.url}?token={served.token}")
        dark.goto(url)
        dark.wait_for_selector("[data-testid=todo-summary]:has-text('4/4')", timeout=30000)
        dark.wait_for_timeout(1500)
        dark.screenshot(path=str(target / "web-dark.png"))
        daily(browser, target)
        browser.close()
    print(f"wrote web.png, web-phone.png, web-dark.png and the web-daily ones in {target}")


TESTS = [
    f"tests/test_{name}.py"
    for name in [
        "api",
        "cli",
        "log",
        "loop",
        "parse",
        "io",
        "store",
        "web",
        "sandbox",
        "todo",
        "acp",
        "mcp",
    ]
]
NEXT = [
    {
        "text": "Trying again with the fixture fixed.",
        "tool_calls": [
            {"name": "bash", "arguments": {"command": "sleep 300; pytest -q tests/test_io.py"}}
        ],
    },
    {"text": "Done."},
]


def seed(home: Path) -> str:
    """A session with a long test run (two failures), a failed command and a turn error."""
    host = PluginHost()
    builtins.add_to(host)
    host.load_entry_points()
    with SessionStore(home, host.event_types).create() as log:
        seq = 0

        def run(command: str, code: int, output: str) -> None:
            nonlocal seq
            seq += 1
            call = {"id": f"c{seq}", "name": "bash", "arguments": json.dumps({"command": command})}
            log.append("message/assistant", {"tool_calls": [call]}, turn=log.next_turn - 1)
            result: dict[str, Any] = {
                "call_id": f"c{seq}",
                "tool_name": "bash",
                "text": f"{output}\n[exit code {code}]",
                "data": {"exit_code": code, "timed_out": False, "cut_bytes": 0},
            }
            log.append("tool/result", result, turn=log.next_turn - 1)

        log.append("turn/start", {}, turn=1)
        log.append("message/user", {"text": "Run the test suite, file by file"}, turn=1)
        log.append("message/assistant", {"text": "Running each test file."}, turn=1)
        for name in TESTS:
            failed = name.endswith(("parse.py", "io.py"))
            run(
                f"pytest -q {name}",
                1 if failed else 0,
                "1 failed, 9 passed" if failed else "10 passed",
            )
        log.append(
            "message/assistant", {"text": "Two files fail: **test_parse** and **test_io**."}, turn=1
        )
        log.append("turn/end", {"status": "completed"}, turn=1)
        log.append("turn/start", {}, turn=2)
        log.append("message/user", {"text": "Look at the io failure"}, turn=2)
        log.append("message/assistant", {"text": "Checking the fixture first."}, turn=2)
        run("test -f tests/fixtures/io.bin", 1, "")
        log.append(
            "turn/end",
            {
                "status": "error",
                "error": "model error: cannot reach https://api.deepseek.com (connection refused)",
            },
            turn=2,
        )
        return log.session_id


def daily(browser: Browser, target: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="harness-shot-")) / "home"
    home.mkdir(parents=True)
    session = seed(home)
    script = home.parent / "next.json"
    script.write_text(json.dumps({"steps": NEXT}))
    with (
        serve(home, "--model", f"scripted:{script}", "--approval", "ask") as served,
        served.client() as client,
    ):
        waiting = client.post("/api/sessions", json={}).json()["id"]
        client.post(
            f"/api/sessions/{waiting}/turns", json={"prompt": "Clean up the build directory"}
        )
        client.post(f"/api/sessions/{session}/turns", json={"prompt": "Try again"})
        asked = served.wait_question(session)
        client.post(
            f"/api/sessions/{session}/approvals",
            json={"call_id": asked["call_id"], "answer": "once"},
        )
        served.wait_question(waiting)
        for name, viewport, options in (
            ("web-daily.png", DESK, {}),
            ("web-daily-phone.png", PHONE, {"is_mobile": True, "has_touch": True}),
        ):
            context = browser.new_context(
                viewport=viewport, device_scale_factor=2 if viewport is PHONE else 1, **options
            )
            page = context.new_page()
            page.goto(f"{served.url}?token={served.token}")
            page.goto(f"{served.url}#/s/{session}")
            page.wait_for_selector(f"body[data-session='{session}']")
            page.wait_for_selector("[data-testid=session-waiting]", state="attached")
            page.click("[data-testid=tool-group] summary")
            page.evaluate("document.getElementById('messages').scrollTo(0, 1e9)")
            page.wait_for_timeout(500)
            page.screenshot(path=str(target / name))
            if viewport is PHONE:
                page.click("[data-testid=sessions-toggle]")
                page.wait_for_timeout(400)
                page.screenshot(path=str(target / "web-daily-list.png"))
            context.close()
        client.post(f"/api/sessions/{session}/cancel")
        client.post(f"/api/sessions/{waiting}/cancel")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images"))
