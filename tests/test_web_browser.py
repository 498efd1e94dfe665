"""The web page in a real browser: Chromium from the OS, driven by Playwright.

They pin what a person sees: the TodoRow summary and state, the docked plan panel's content,
its live update when the model writes again, the collapse round trip (also across a reload),
the panel leaving at the next turn, the embedded demo, hostile text shown as text, and
approval: rows waiting for allow or deny, cancel at a question, a subagent's question. Then
the page as people use it (docs/web.md), each at the width where it matters, 1280x800 (DESK)
and 390x844 (PHONE): the drawer and full-width layout, the paced demo from a session with no
model, switching sessions quickly, scrolling, the capped plan panel, the prompt kept until
accepted, a restarted server's new token, Markdown, rows split across pages, and axe-core.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import httpx
import playwright.sync_api as playwright_api
import pytest
from harness_core import builtins
from harness_core.log import SessionStore
from harness_core.plugins import PluginHost
from harness_core.testing.openai_server import OpenAIServer, error_reply, reply
from test_cli_support import bash_call, todo_call, write_script
from web_support import (
    ONCE_DENY_SESSION,
    SUBAGENT_ASKS,
    Served,
    asking,
    decisions,
    free_port,
    serve,
)

pytestmark = pytest.mark.slow  # real processes for seconds each: run first

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The probe's flags: no sandbox as root, and no background traffic on a closed network.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    assert CHROMIUM is not None, "chromium is not installed: ./scripts/test installs it"
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()


DESK = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def dismiss(dialog: object) -> None:
    """Refuse any dialog a test did not ask for, so none blocks the page."""
    dialog.dismiss()  # type: ignore[attr-defined]


@contextmanager
def browsing(browser: object, viewport: dict[str, int], **options: object) -> Iterator[object]:
    """A fresh browser context's page at `viewport`."""
    context = browser.new_context(viewport=viewport, **options)  # type: ignore[attr-defined]
    opened = context.new_page()
    opened.on("dialog", dismiss)
    try:
        yield opened
    finally:
        context.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    with browsing(browser, DESK) as opened:
        yield opened


@pytest.fixture
def phone(browser: object) -> Iterator[object]:
    with browsing(browser, PHONE, is_mobile=True, has_touch=True) as opened:
        yield opened


def open_session(page: object, served: Served, session: str) -> None:
    page.goto(f"{served.url}?token={served.token}")  # type: ignore[attr-defined]
    page.goto(f"{served.url}#/s/{session}")  # type: ignore[attr-defined]
    page.wait_for_selector(f"body[data-session='{session}']")  # type: ignore[attr-defined]


def send(page: object, prompt: str) -> None:
    page.fill("[data-testid=prompt]", prompt)  # type: ignore[attr-defined]
    page.press("[data-testid=prompt]", "Enter")  # type: ignore[attr-defined]


class _Recorder(BaseHTTPRequestHandler):
    """Another service on 127.0.0.1 (a dev server): keeps the headers of each request."""

    seen: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        self.seen.append(dict(self.headers.items()))
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.end_headers()
        self.wfile.write(b"<p>another service</p>")

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads what it recorded."""


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """A browser resets the spare connections it opened: not worth a traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@pytest.fixture
def other_service() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A plain HTTP server on another loopback port: its URL and the headers it received."""
    seen: ClassVar[list[dict[str, str]]] = []
    handler = type("Recorder", (_Recorder,), {"seen": seen})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", seen
    server.shutdown()
    server.server_close()


def test_token_cookie_not_sent_to_other_ports(
    page: object, harness_home: Path, other_service: tuple[str, list[dict[str, str]]]
) -> None:
    """After the page opened with its token and used the API, the browser visits another port
    of 127.0.0.1: nothing it sends there holds the token, and those headers replayed against
    harness get 401. The token also leaves the address bar."""
    expect = playwright_api.expect
    other, seen = other_service
    with serve(harness_home) as served, served.client() as client:
        session = client.post("/api/sessions", json={"model": "demo"}).json()["id"]
        open_session(page, served, session)
        expect(page.locator("[data-testid=session-link]")).to_have_count(1)  # type: ignore[attr-defined]
        assert "token" not in page.url  # type: ignore[attr-defined]
        page.goto(other)  # type: ignore[attr-defined]
        assert seen and served.token not in repr(seen)  # the page, maybe a favicon too
        with httpx.Client(base_url=served.url, timeout=10) as stranger:
            for headers in seen:
                replay = {
                    k: v for k, v in headers.items() if k.lower() in ("cookie", "authorization")
                }
                assert stranger.get("/api/sessions", headers=replay).status_code == 401
        assert page.context.cookies() == []  # type: ignore[attr-defined]


PLAN = [
    {
        "text": "A plan.",
        "tool_calls": [todo_call(("Read the code", "in_progress"), ("Fix it", "pending"))],
    },
    {"tool_calls": [bash_call("sleep 1.5")]},
    {"tool_calls": [todo_call(("Read the code", "completed"), ("Fix it", "in_progress"))]},
    {"tool_calls": [bash_call("sleep 1.5")]},
    {"text": "Half way there."},
    {"text": "A new turn, no plan yet."},
]


def test_the_plan_panel_fills_in_live_collapses_and_clears_at_the_next_turn(
    page: object, tmp_path: Path, harness_home: Path
) -> None:
    """TodoRow summary and state, the docked panel, its live update, collapse across a reload,
    and the panel leaving when the next turn starts."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "plan.json", PLAN)
    with serve(harness_home, "--model", model) as served, served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        open_session(page, served, session)
        send(page, "Fix the bug")
        dock = page.locator("[data-testid=input-dock] [data-testid=todo-dock]")  # type: ignore[attr-defined]
        expect(dock.locator("[data-testid=todo-summary]")).to_contain_text("0/2", timeout=15000)
        expect(dock.locator("[data-testid=todo-summary]")).to_contain_text("Read the code")
        items = dock.locator("[data-testid=todo-item]")
        expect(items).to_have_count(2)
        expect(items.nth(0)).to_have_attribute("data-status", "in_progress")
        expect(items.nth(1)).to_have_text("Fix it")
        first_row = page.locator("[data-testid=tool-row][data-tool=todo_write]").first  # type: ignore[attr-defined]
        expect(first_row).to_have_attribute("data-state", "ok")
        expect(first_row.locator("[data-testid=tool-summary]")).to_contain_text("Plan 0/2 done")
        # The model writes again while the page is open: the panel follows, live.
        expect(dock.locator("[data-testid=todo-summary]")).to_contain_text("1/2", timeout=15000)
        expect(items.nth(0)).to_have_attribute("data-status", "completed")
        toggle = dock.locator("[data-testid=todo-toggle]")
        expect(toggle).to_have_attribute("aria-expanded", "true")
        toggle.click()
        expect(toggle).to_have_attribute("aria-expanded", "false")
        expect(items).to_have_count(0)
        expect(dock.locator("[data-testid=todo-summary]")).to_contain_text("1/2")
        served.wait_idle(session)
        page.reload()  # type: ignore[attr-defined]
        expect(dock.locator("[data-testid=todo-toggle]")).to_have_attribute(
            "aria-expanded", "false"
        )
        expect(items).to_have_count(0)
        dock.locator("[data-testid=todo-toggle]").click()
        expect(items).to_have_count(2)
        send(page, "And now?")
        expect(page.locator("[data-testid=message][data-role=assistant]").last).to_have_text(  # type: ignore[attr-defined]
            "A new turn, no plan yet.", timeout=15000
        )
        expect(dock).to_have_count(0)


def test_the_embedded_demo_runs_without_a_model(page: object, harness_home: Path) -> None:
    """No model configured: the page offers the demo, whose plan fills in to 4/4; under
    --approval ask it still asks nothing (its commands are fixed) and says so in one line."""
    expect = playwright_api.expect
    with serve(harness_home, "--approval", "ask") as served:
        page.goto(f"{served.url}?token={served.token}")  # type: ignore[attr-defined]
        page.click("[data-testid=demo]")  # type: ignore[attr-defined]
        note = page.locator("[data-testid=demo-note]")  # type: ignore[attr-defined]
        expect(note).to_have_text(
            "demo: its commands are fixed and harmless, so tools run without asking"
        )
        summary = page.locator("[data-testid=todo-summary]")  # type: ignore[attr-defined]
        expect(summary).to_contain_text("4/4", timeout=20000)
        rows = page.locator("[data-testid=tool-row][data-tool=bash]")  # type: ignore[attr-defined]
        expect(rows).to_have_count(3)
        expect(page.locator("[data-testid=session-link]")).to_have_count(1)  # type: ignore[attr-defined]


HOSTILE = "<img src=x onerror=\"window.__xss='task'\">"
HOSTILE_SCRIPT = [
    {
        "text": "<b onmouseover=\"window.__xss='text'\">bold?</b> **really bold**",
        "tool_calls": [
            todo_call((HOSTILE, "in_progress")),
            bash_call("printf '<script>window.__xss=\"output\"</script>'"),
        ],
    },
    {"text": "Done."},
]


def test_model_and_tool_text_is_never_run_as_html(
    page: object, tmp_path: Path, harness_home: Path
) -> None:
    """A hostile task name, tool output and assistant text show as text and run nothing."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "hostile.json", HOSTILE_SCRIPT)
    with serve(harness_home, "--model", model) as served, served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        open_session(page, served, session)
        send(page, "go")
        expect(page.locator("[data-testid=todo-item]")).to_have_text(HOSTILE, timeout=15000)  # type: ignore[attr-defined]
        served.wait_idle(session)
        assistant = page.locator("[data-testid=message][data-role=assistant]").first  # type: ignore[attr-defined]
        expect(assistant).to_contain_text("<b onmouseover=\"window.__xss='text'\">bold?</b>")
        expect(assistant.locator("strong")).to_have_text("really bold")
        output = page.locator("[data-testid=tool-row][data-tool=bash] [data-testid=tool-output]")  # type: ignore[attr-defined]
        expect(output).to_contain_text("<script>", use_inner_text=False)
        page.hover("[data-testid=message][data-role=assistant]")  # type: ignore[attr-defined]
        assert page.evaluate("window.__xss") is None  # type: ignore[attr-defined]
        assert page.locator("img").count() == 0  # type: ignore[attr-defined]


def test_without_the_todo_plugin_the_page_works_and_shows_no_panel(
    page: object, tmp_path: Path, harness_home: Path
) -> None:
    """HARNESS_DISABLE_PLUGINS=todo: the conversation renders; no dock panel appears."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "plain.json", [{"text": "Hello there."}])
    env = {"HARNESS_DISABLE_PLUGINS": "todo"}
    with serve(harness_home, "--model", model, env=env) as served, served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        open_session(page, served, session)
        send(page, "hi")
        expect(page.locator("[data-testid=message][data-role=assistant]")).to_have_text(  # type: ignore[attr-defined]
            "Hello there.", timeout=15000
        )
        expect(page.locator("[data-testid=todo-dock]")).to_have_count(0)  # type: ignore[attr-defined]


def test_the_page_catches_up_after_a_server_restart_without_a_reload(
    page: object, tmp_path: Path, harness_home: Path
) -> None:
    """The server stops and starts again on its port: the open page reconnects and shows the
    next turn, with nothing shown twice."""
    expect = playwright_api.expect
    model = write_script(
        tmp_path / "two.json", [{"text": "First answer."}, {"text": "Second answer."}]
    )
    port, env = free_port(), {"HARNESS_WEB_TOKEN": "fixed-token-for-the-test"}
    with (
        serve(harness_home, "--model", model, env=env, port=port) as served,
        served.client() as client,
    ):
        session = client.post("/api/sessions", json={}).json()["id"]
        open_session(page, served, session)
        send(page, "one")
        answers = page.locator("[data-testid=message][data-role=assistant]")  # type: ignore[attr-defined]
        expect(answers).to_have_text(["First answer."], timeout=15000)
    second = write_script(tmp_path / "second.json", [{"text": "After the restart."}])
    with (
        serve(harness_home, "--model", second, env=env, port=port) as served,
        served.client() as client,
    ):
        client.post(f"/api/sessions/{session}/turns", json={"prompt": "two"})
        served.wait_idle(session)
        expect(answers).to_have_text(["First answer.", "After the restart."], timeout=20000)
        users = page.locator("[data-testid=message][data-role=user]")  # type: ignore[attr-defined]
        expect(users).to_have_text(["one", "two"])


DENIED = "Error: bash was denied: the user refused it"
LONG = "echo allowed && echo " + "x" * 120  # longer than the row's one line
ASKING = [
    {"tool_calls": [bash_call(LONG)]},
    {"tool_calls": [bash_call("echo refused")]},
    {"tool_calls": [bash_call("echo for the session")]},
    {"tool_calls": [bash_call("echo granted")]},
    {"text": "Done."},
]


def test_a_waiting_row_is_allowed_and_denied_by_clicks(
    page: object, tmp_path: Path, harness_home: Path
) -> None:
    """--approval ask: each bash row waits with three buttons and the whole command, also
    after a reload; allow runs it, deny sends the model the refusal, allow for the session answers the next call,
    and who allowed what is still shown after a reload."""
    expect = playwright_api.expect
    with asking(harness_home, tmp_path / "asking.json", ASKING) as (served, _client, session):
        open_session(page, served, session)
        send(page, "go")
        rows = page.locator("[data-testid=tool-row][data-tool=bash]")  # type: ignore[attr-defined]
        first = rows.nth(0)
        expect(first).to_have_attribute("data-state", "waiting", timeout=15000)
        page.reload()  # type: ignore[attr-defined]
        expect(first).to_have_attribute("data-state", "waiting", timeout=15000)  # still asked
        expect(first.locator("[data-testid=approval-detail]")).to_have_text(LONG)
        first.locator("[data-testid=allow]").click()
        expect(first).to_have_attribute("data-state", "ok", timeout=15000)
        expect(first.locator("[data-testid=allow]")).to_have_count(0)
        expect(first.locator("[data-testid=approval-note]")).to_have_text("allowed by the user")
        second = rows.nth(1)
        expect(second).to_have_attribute("data-state", "waiting", timeout=15000)
        second.locator("[data-testid=deny]").click()
        expect(second).to_have_attribute("data-state", "error", timeout=15000)
        expect(second.locator("[data-testid=tool-output]")).to_have_text(
            DENIED, use_inner_text=False
        )
        third = rows.nth(2)
        expect(third).to_have_attribute("data-state", "waiting", timeout=15000)
        third.locator("[data-testid=allow-session]").click()
        expect(rows.nth(3)).to_have_attribute("data-state", "ok", timeout=15000)
        expect(rows.nth(3).locator("[data-testid=approval-note]")).to_have_text(
            "allowed by the user for this session"
        )
        page_data = served.wait_idle(session)
        page.reload()  # type: ignore[attr-defined]
        expect(rows.nth(2).locator("[data-testid=approval-note]")).to_have_text(
            "allowed by the user for this session", timeout=15000
        )
        for n, state in enumerate(["ok", "error", "ok", "ok"]):
            expect(rows.nth(n)).to_have_attribute("data-state", state)
    assert decisions(page_data) == ONCE_DENY_SESSION  # the fourth call ran on the grant
    results = [e["data"]["text"] for e in page_data["events"] if e["type"] == "tool/result"]
    assert results[1] == DENIED


def test_cancel_at_a_waiting_row_interrupts_it(
    page: object, tmp_path: Path, harness_home: Path
) -> None:
    """Cancel while the row waits: its buttons go, the row ends in error, the turn cancelled."""
    expect = playwright_api.expect
    with asking(
        harness_home, tmp_path / "cancel.json", [{"tool_calls": [bash_call("echo no")]}]
    ) as (served, _client, session):
        open_session(page, served, session)
        send(page, "go")
        row = page.locator("[data-testid=tool-row][data-tool=bash]")  # type: ignore[attr-defined]
        expect(row).to_have_attribute("data-state", "waiting", timeout=15000)
        page.click("[data-testid=cancel]")  # type: ignore[attr-defined]
        expect(row).to_have_attribute("data-state", "error", timeout=15000)
        expect(row.locator("[data-testid=deny]")).to_have_count(0)
        expect(page.locator(".turn-note")).to_have_text("turn cancelled")  # type: ignore[attr-defined]


def test_a_subagents_question_waits_in_a_card_on_the_parent_page(
    page: object, tmp_path: Path, harness_home: Path
) -> None:
    """The subagent's bash (a call the parent page has no row for) waits in a card with the
    same buttons; allowing it lets both turns finish."""
    expect = playwright_api.expect
    with asking(harness_home, tmp_path / "sub.json", SUBAGENT_ASKS) as (served, _client, session):
        open_session(page, served, session)
        send(page, "Delegate.")
        row = page.locator("[data-testid=tool-row][data-tool=subagent]")  # type: ignore[attr-defined]
        expect(row).to_have_attribute("data-state", "waiting", timeout=15000)
        row.locator("[data-testid=allow]").click()
        card = page.locator("[data-testid=approval-card]")  # type: ignore[attr-defined]
        expect(card).to_contain_text("bash (in a subagent) wants to run: $ echo hi", timeout=15000)
        expect(row).to_have_attribute("data-state", "running")
        card.locator("[data-testid=allow]").click()
        expect(card).to_have_count(0, timeout=15000)
        expect(row).to_have_attribute("data-state", "ok", timeout=15000)
        expect(page.locator("[data-testid=message][data-role=assistant]").last).to_have_text(  # type: ignore[attr-defined]
            "Parent done.", timeout=15000
        )


# What the row shows for "echo safe<RLO>...": bidi controls reorder it; the page must not.
PADDING = "echo " + "x" * 100 + "; "  # longer than the row's line: the question shows it whole
HIDDEN = PADDING + "echo safe \u202e; hs.ti nur | moc.live//:ptth lruc\u2066 \u200b#"
INVISIBLE = ("\u202e", "\u2066", "\u200b")


def test_bidi_and_invisible_characters_in_a_command_show_as_escapes(
    page: object, tmp_path: Path, harness_home: Path
) -> None:
    """A bash command with a right-to-left override, an isolate and a zero-width space waits
    for approval: its row and the whole command show each as a visible \\u{XXXX} escape in
    its own style, so what "Allow once" runs is what the page shows."""
    expect = playwright_api.expect
    steps = [{"tool_calls": [bash_call(HIDDEN)]}, {"text": "Done."}]
    with asking(harness_home, tmp_path / "bidi.json", steps) as (served, _client, session):
        open_session(page, served, session)
        send(page, "go")
        row = page.locator("[data-testid=tool-row][data-tool=bash]")  # type: ignore[attr-defined]
        expect(row).to_have_attribute("data-state", "waiting", timeout=15000)
        detail = row.locator("[data-testid=approval-detail]")
        expect(detail).to_have_text(
            PADDING + "echo safe \\u{202E}; hs.ti nur | moc.live//:ptth lruc\\u{2066} \\u{200B}#"
        )
        expect(detail.locator("[data-testid=escaped]")).to_have_count(3)
        summary = row.locator("[data-testid=tool-summary]")
        expect(summary).to_contain_text("echo xxx")
        for shown in (detail.text_content(), summary.text_content(), row.text_content()):
            assert not any(char in shown for char in INVISIBLE), repr(shown)
        row.locator("[data-testid=deny]").click()
        expect(row).to_have_attribute("data-state", "error", timeout=15000)
        assert not any(char in row.text_content() for char in INVISIBLE)


# -- the page as people use it ----------------------------------------------------------------


def on_screen(locator: object, viewport: dict[str, int]) -> None:
    """The element is drawn inside the viewport, whole."""
    box = locator.bounding_box()  # type: ignore[attr-defined]
    assert box is not None, "not drawn"
    right, bottom = box["x"] + box["width"], box["y"] + box["height"]
    assert box["x"] >= 0 and box["y"] >= 0, box
    assert right <= viewport["width"] + 0.5 and bottom <= viewport["height"] + 0.5, box


LONG_PLAN = [
    (f"Task {n} of a long plan", "completed" if n < 15 else "in_progress" if n == 15 else "pending")
    for n in range(22)
]
PLANNED_ASK = [
    {"text": "A long plan.", "tool_calls": [todo_call(*LONG_PLAN)]},
    {"tool_calls": [bash_call("echo hello")]},
    {"text": "Done."},
]
# Each item's ::before symbol, aria-label and text, read in the page.
MARKS = """[...document.querySelectorAll('[data-testid=todo-item]')].map((item) =>
  [getComputedStyle(item, '::before').content, item.getAttribute('aria-label'), item.textContent,
   getComputedStyle(item).opacity])"""


@pytest.mark.parametrize("viewport", [DESK, PHONE], ids=["desk", "phone"])
def test_the_prompt_the_capped_plan_and_an_approval_stay_on_screen(
    browser: object, tmp_path: Path, harness_home: Path, viewport: dict[str, int]
) -> None:
    """A 22-task plan docked and a bash call waiting: the plan panel is at most a third of the
    viewport with the task in progress in view, each task marked by a symbol and an
    aria-label (its text stays the task); the approval takes focus and marks the tab title;
    its three buttons, the prompt, Send and Cancel are on screen. On a phone the session list
    is a drawer and the conversation, the dock and the prompt take the full width."""
    expect = playwright_api.expect
    mobile = viewport is PHONE
    with (
        asking(harness_home, tmp_path / "plan.json", PLANNED_ASK) as (served, _client, session),
        browsing(browser, viewport, is_mobile=mobile) as page,
    ):
        open_session(page, served, session)
        send(page, "Plan it.")
        row = page.locator("[data-testid=tool-row][data-tool=bash]")  # type: ignore[attr-defined]
        expect(row).to_have_attribute("data-state", "waiting", timeout=15000)
        expect(row.locator("[data-testid=approval]")).to_be_focused()
        expect(page).to_have_title(re.compile(r"Approval needed"))
        for testid in ("allow", "allow-session", "deny", "prompt", "send", "cancel"):
            on_screen(page.locator(f"[data-testid={testid}]"), viewport)  # type: ignore[attr-defined]
        dock = page.locator("[data-testid=todo-dock]")  # type: ignore[attr-defined]
        assert dock.bounding_box()["height"] <= viewport["height"] * 0.34
        current = dock.locator("[data-testid=todo-item][data-status=in_progress]")
        expect(current).to_have_text("Task 15 of a long plan")
        shown, panel = current.bounding_box(), dock.locator("ul").bounding_box()
        assert (
            panel["y"] <= shown["y"]
            and shown["y"] + shown["height"] <= panel["y"] + panel["height"]
        )
        marks = page.evaluate(MARKS)  # type: ignore[attr-defined]
        assert marks[0] == ['"☑"', "done: Task 0 of a long plan", "Task 0 of a long plan", "1"]
        assert marks[15][:3] == ['"▶"', "in progress: Task 15 of a long plan", LONG_PLAN[15][0]]
        assert marks[21][:3] == ['"☐"', "pending: Task 21 of a long plan", LONG_PLAN[21][0]]
        link = page.locator("[data-testid=session-link]")  # type: ignore[attr-defined]
        toggle = page.locator("[data-testid=sessions-toggle]")  # type: ignore[attr-defined]
        hint = page.locator("[data-testid=prompt]").get_attribute("placeholder")  # type: ignore[attr-defined]
        assert hint == "Ask something" if mobile else "Enter sends" in hint
        if mobile:
            for part in ("#messages", "[data-testid=input-dock]", "[data-testid=prompt]"):
                box = page.locator(part).bounding_box()  # type: ignore[attr-defined]
                assert box["width"] >= viewport["width"] - 100, (part, box)
            assert dock.bounding_box()["width"] >= viewport["width"] - 40
            expect(link).to_be_hidden()
            toggle.click()
            expect(toggle).to_have_attribute("aria-expanded", "true")
            expect(link).to_be_visible()
            expect(page.locator("#sidebar")).to_have_css("transform", "none")  # type: ignore[attr-defined]
            on_screen(link, viewport)
            link.click()
            expect(link).to_be_hidden()
        else:
            expect(toggle).to_be_hidden()
            expect(link).to_be_visible()
        row.locator("[data-testid=deny]").click()
        expect(row).to_have_attribute("data-state", "error", timeout=15000)
        expect(page).not_to_have_title(re.compile(r"Approval needed"))


def test_with_no_model_a_session_still_starts_and_the_demo_runs_there_paced(
    page: object, harness_home: Path
) -> None:
    """No model anywhere: the empty page says so; New session shows a blank page and the first
    prompt makes the session (201); that prompt is refused in one line that says how to choose a model, the prompt stays in the box, and the
    error offers the demo, which runs in that session paced: the plan goes 0/4, 1/4, ... 4/4
    step by step, taking seconds, not milliseconds."""
    expect = playwright_api.expect
    with serve(harness_home, "--approval", "ask") as served:
        page.goto(f"{served.url}?token={served.token}")  # type: ignore[attr-defined]
        expect(page.locator(".welcome")).to_contain_text("No model is configured")  # type: ignore[attr-defined]
        page.click("[data-testid=new-session]")  # type: ignore[attr-defined]
        send(page, "Hello?")
        error = page.locator("[data-testid=error]")  # type: ignore[attr-defined]
        expect(error).to_contain_text("no model chosen: start harness serve with --model")
        assert "\n" not in error.text_content()
        expect(page.locator("[data-testid=prompt]")).to_have_value("Hello?")  # type: ignore[attr-defined]
        expect(page.locator("[data-testid=message]")).to_have_count(0)  # type: ignore[attr-defined]
        error.get_by_role("button", name="Run the demo").click()
        expect(page.locator("[data-testid=demo-note]")).to_be_visible()  # type: ignore[attr-defined]
        summary = page.locator("[data-testid=todo-summary]")  # type: ignore[attr-defined]
        expect(summary).to_contain_text("Plan 0/4", timeout=15000)
        started = time.monotonic()
        for done in range(1, 5):  # each state is seen: the plan fills in step by step
            expect(summary).to_contain_text(f"Plan {done}/4", timeout=15000)
        assert time.monotonic() - started > 3
        expect(error).to_be_hidden()
        expect(page.locator("[data-testid=tool-row][data-tool=bash]")).to_have_count(3)  # type: ignore[attr-defined]
        expect(page.locator("[data-testid=session-link]")).to_have_count(1)  # type: ignore[attr-defined]


# Counts the event streams the page opens, and which are still open (not aborted).
COUNT_STREAMS = """
window.__streams = [];
const original = window.fetch;
window.fetch = (input, init) => {
  const url = String(input && input.url || input);
  if (url.includes('/events')) window.__streams.push({ url, signal: init && init.signal });
  return original(input, init);
};
"""
OPEN_STREAMS = "window.__streams.filter((s) => !s.signal.aborted).map((s) => s.url)"


def test_switching_sessions_quickly_never_mixes_them(
    page: object, tmp_path: Path, harness_home: Path
) -> None:
    """Open A, then B 30 ms later: only B's messages show, B's link is current, B's stream
    alone stays open, B's new events arrive and A's do not."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "two.json", [{"text": "An answer."}, {"text": "Again."}])
    with serve(harness_home, "--model", model) as served, served.client() as client:
        a, b = (client.post("/api/sessions", json={}).json()["id"] for _ in range(2))
        for session, prompt in ((a, "prompt of A"), (b, "prompt of B")):
            client.post(f"/api/sessions/{session}/turns", json={"prompt": prompt})
            served.wait_idle(session)
        page.add_init_script(COUNT_STREAMS)  # type: ignore[attr-defined]
        page.goto(f"{served.url}?token={served.token}")  # type: ignore[attr-defined]
        page.evaluate(  # type: ignore[attr-defined]
            f"location.hash = '#/s/{a}'; setTimeout(() => {{ location.hash = '#/s/{b}'; }}, 30)"
        )
        page.wait_for_selector(f"body[data-session='{b}']")  # type: ignore[attr-defined]
        users = page.locator("[data-testid=message][data-role=user]")  # type: ignore[attr-defined]
        expect(users).to_have_text(["prompt of B"])
        page.wait_for_timeout(500)  # type: ignore[attr-defined]  # anything of A's late would show
        expect(users).to_have_text(["prompt of B"])
        expect(page.locator("[data-testid=session-link].current")).to_have_attribute("data-id", b)  # type: ignore[attr-defined]
        streams = page.evaluate(OPEN_STREAMS)  # type: ignore[attr-defined]
        assert len(streams) == 1 and f"/sessions/{b}/events" in streams[0], streams
        client.post(f"/api/sessions/{a}/turns", json={"prompt": "second of A"})
        served.wait_idle(a)
        client.post(f"/api/sessions/{b}/turns", json={"prompt": "second of B"})
        expect(users).to_have_text(["prompt of B", "second of B"])
        served.wait_idle(b)
        expect(page.locator("[data-testid=message][data-role=assistant]")).to_have_text(  # type: ignore[attr-defined]
            ["An answer.", "Again."]
        )


LONG_ANSWER = "\n\n".join(f"Paragraph {n} of a long answer." for n in range(60))
SCROLLING = [
    {
        "text": "Planning.",
        "tool_calls": [
            todo_call(("Read", "completed"), ("Write", "in_progress"), ("Check", "pending"))
        ],
    },
    {"text": LONG_ANSWER + "\n\nThe last line."},
    {"text": "A later answer."},
    {"text": "The latest answer."},
]
SCROLL_TOP = "document.getElementById('messages').scrollTop"


def test_opening_shows_the_last_message_and_a_reader_scrolled_up_stays_put(
    phone: object, tmp_path: Path, harness_home: Path
) -> None:
    """On a phone with a plan docked: opening a session shows its last line above the dock;
    a reader scrolled up stays where they are while events arrive; at the end, the page
    follows them."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "long.json", SCROLLING)
    with serve(harness_home, "--model", model) as served, served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        client.post(f"/api/sessions/{session}/turns", json={"prompt": "go"})
        served.wait_idle(session)
        open_session(phone, served, session)
        expect(phone.locator("[data-testid=todo-dock]")).to_be_visible()  # type: ignore[attr-defined]
        messages = phone.locator("#messages")  # type: ignore[attr-defined]
        last = phone.locator("[data-testid=message] p").last  # type: ignore[attr-defined]
        expect(last).to_have_text("The last line.")
        expect(last).to_be_in_viewport()
        area, line = messages.bounding_box(), last.bounding_box()
        assert area["y"] <= line["y"] and line["y"] + line["height"] <= area["y"] + area["height"]
        phone.evaluate(f"{SCROLL_TOP} = 0")  # type: ignore[attr-defined]
        client.post(f"/api/sessions/{session}/turns", json={"prompt": "more"})
        answers = phone.locator("[data-testid=message][data-role=assistant]")  # type: ignore[attr-defined]
        expect(answers.last).to_have_text("A later answer.", timeout=15000)
        phone.wait_for_timeout(300)  # type: ignore[attr-defined]
        assert phone.evaluate(SCROLL_TOP) == 0  # type: ignore[attr-defined]
        phone.evaluate(f"{SCROLL_TOP} = 1e9")  # type: ignore[attr-defined]
        # The page learns the reader is at the end from the scroll event, which fires before
        # the next frame's callbacks: two frames on, it has (a fixed wait lost that race on a
        # loaded machine).
        phone.evaluate(TWO_FRAMES)  # type: ignore[attr-defined]
        client.post(f"/api/sessions/{session}/turns", json={"prompt": "and more"})
        expect(answers.last).to_have_text("The latest answer.", timeout=15000)
        expect(answers.last).to_be_in_viewport()


SLOW = [{"tool_calls": [bash_call("sleep 30")]}, {"text": "The queued one ran."}]
TWO_FRAMES = "new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
COMPOSING_ENTER = {"key": "Enter", "code": "Enter", "isComposing": True, "bubbles": True}
WIDTHS = "[document.getElementById('messages').scrollWidth, document.getElementById('messages').clientWidth]"


def test_the_prompt_stays_until_accepted_esc_cancels_and_composing_enter_does_not_send(
    phone: object, tmp_path: Path, harness_home: Path
) -> None:
    """Enter that ends an input-method composition sends nothing; a sent prompt leaves the
    box; a 20,000-character prompt queued behind a running turn leaves the prompt and its
    buttons on screen and wraps; Esc in the prompt cancels the turn (the text typed stays);
    with the server gone, a send shows one line in the error and the prompt stays."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "slow.json", SLOW)
    box = phone.locator("[data-testid=prompt]")  # type: ignore[attr-defined]
    users = phone.locator("[data-testid=message][data-role=user]")  # type: ignore[attr-defined]
    with serve(harness_home, "--model", model) as served, served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        open_session(phone, served, session)
        box.fill("かんじ")
        box.dispatch_event("keydown", COMPOSING_ENTER)
        phone.wait_for_timeout(300)  # type: ignore[attr-defined]
        expect(box).to_have_value("かんじ")
        expect(users).to_have_count(0)
        send(phone, "go")
        expect(box).to_have_value("")
        row = phone.locator("[data-testid=tool-row][data-tool=bash]")  # type: ignore[attr-defined]
        expect(row).to_have_attribute("data-state", "running", timeout=15000)
        send(phone, "y" * 20000)
        expect(phone.locator("[data-testid=queue-item]")).to_have_count(1)  # type: ignore[attr-defined]
        for testid in ("prompt", "send", "cancel"):
            on_screen(phone.locator(f"[data-testid={testid}]"), PHONE)  # type: ignore[attr-defined]
        box.fill("typed meanwhile")
        box.press("Escape")
        expect(phone.locator(".turn-note")).to_have_text("turn cancelled", timeout=15000)  # type: ignore[attr-defined]
        expect(box).to_have_value("typed meanwhile")
        expect(phone.locator("[data-testid=message][data-role=assistant]")).to_have_text(  # type: ignore[attr-defined]
            "The queued one ran.", timeout=15000
        )
        scrolled, width = phone.evaluate(WIDTHS)  # type: ignore[attr-defined]
        assert scrolled <= width
    send(phone, "typed meanwhile")  # the server is gone
    error = phone.locator("[data-testid=error]")  # type: ignore[attr-defined]
    expect(error).to_contain_text("connection lost")
    assert "\n" not in error.text_content()
    expect(box).to_have_value("typed meanwhile")


def test_a_restarted_server_with_a_new_token_says_to_open_the_printed_url(
    page: object, harness_home: Path
) -> None:
    """The server restarts on its port with another token: the stream's 401 shows the
    connection notice saying to open the URL harness serve printed."""
    expect = playwright_api.expect
    port = free_port()
    with (
        serve(harness_home, env={"HARNESS_WEB_TOKEN": "the-first-token"}, port=port) as served,
        served.client() as client,
    ):
        session = client.post("/api/sessions", json={}).json()["id"]  # no model: still 201
        open_session(page, served, session)
        notice = page.locator("[data-testid=connection]")  # type: ignore[attr-defined]
        expect(notice).to_be_hidden()
    with serve(harness_home, env={"HARNESS_WEB_TOKEN": "the-second-token"}, port=port):
        expect(notice).to_contain_text("open the URL harness serve printed", timeout=20000)
        expect(notice).to_be_visible()


MARKDOWN = "\n".join(
    [
        "Steps:",
        "",
        "- first bullet",
        "- second bullet",
        "  - nested bullet",
        "",
        "1. first number",
        "2. second number",
        "",
        "> a quoted line",
        "",
        "Fish &amp; chips &copy; `&amp;` <b>bold?</b> &bogus;",
        "",
        "| name | value |",
        "| --- | --- |",
        "| alpha | **1** |",
        "",
        "```python",
        "print('copied')",
        "```",
        "",
        "z" * 5000,
    ]
)


def test_markdown_lists_quotes_tables_code_and_long_words(
    phone: object, tmp_path: Path, harness_home: Path
) -> None:
    """A numbered list after a bulleted one is its own list, a nested list nests, a quote and
    a table are drawn as such, entities read as their characters (outside code, never as a
    tag), a code block copies its code, and a 5,000-character word wraps inside the message on
    a phone."""
    expect = playwright_api.expect
    phone.context.grant_permissions(["clipboard-read", "clipboard-write"])  # type: ignore[attr-defined]
    model = write_script(tmp_path / "md.json", [{"text": MARKDOWN}])
    with serve(harness_home, "--model", model) as served, served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        open_session(phone, served, session)
        send(phone, "Format something.")
        message = phone.locator("[data-testid=message][data-role=assistant]")  # type: ignore[attr-defined]
        expect(message.locator(":scope > ol > li")).to_have_text(
            ["first number", "second number"], timeout=15000
        )
        expect(message.locator(":scope > ul > li")).to_have_count(2)
        expect(message.locator("ul ul > li")).to_have_text(["nested bullet"])
        expect(message.locator("blockquote")).to_have_text("a quoted line")
        expect(message.locator("p", has_text="Fish")).to_have_text(
            "Fish & chips © &amp; <b>bold?</b> &bogus;"
        )
        expect(message.locator("b")).to_have_count(0)
        expect(message.locator("th")).to_have_text(["name", "value"])
        expect(message.locator("td strong")).to_have_text("1")
        expect(message.locator("pre code")).to_have_text("print('copied')")
        message.locator("[data-testid=copy]").click()
        expect(message.locator("[data-testid=copy]")).to_have_text("Copied")
        assert phone.evaluate("navigator.clipboard.readText()") == "print('copied')"  # type: ignore[attr-defined]
        scrolled, width = phone.evaluate(WIDTHS)  # type: ignore[attr-defined]
        assert scrolled <= width
        assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]  # type: ignore[attr-defined]


def split_session(home: Path, calls: int) -> str:
    """A session whose 200-event tail page starts with a tool/result: its call is on the
    older page. `calls` bash calls, each answered."""
    host = PluginHost()
    builtins.add_to(host)
    host.load_entry_points()
    with SessionStore(home, host.event_types).create() as log:
        log.append("turn/start", {}, turn=1)
        log.append("message/user", {"text": "go"}, turn=1)
        for n in range(calls):
            call = {"id": f"call-{n}", "name": "bash", "arguments": json.dumps({"command": "true"})}
            log.append("message/assistant", {"tool_calls": [call]}, turn=1)
            result = {"call_id": f"call-{n}", "tool_name": "bash", "text": f"output {n}"}
            log.append("tool/result", result, turn=1)
        log.append("message/assistant", {"text": "Done."}, turn=1)
        log.append("turn/end", {"status": "completed"}, turn=1)
        log.append("turn/start", {}, turn=2)  # seven events after the last result, so the
        log.append("message/user", {"text": "again"}, turn=2)  # tail starts on a result
        log.append("message/assistant", {"text": "One."}, turn=2)
        log.append("message/assistant", {"text": "Two."}, turn=2)
        log.append("turn/end", {"status": "completed"}, turn=2)
        return log.session_id


OUTPUTS = """[...document.querySelectorAll('[data-testid=tool-row]')].map((row) =>
  [row.dataset.state, row.querySelector('[data-testid=tool-output]').textContent])"""


def test_a_row_split_across_pages_keeps_its_output(page: object, harness_home: Path) -> None:
    """The tail page starts with a result whose call is on the older page: once the older
    page loads (the reader scrolls up), that row is ✓ with its output, like every other."""
    expect = playwright_api.expect
    session = split_session(harness_home, 120)
    with serve(harness_home) as served, served.client() as client:
        tail = client.get(f"/api/sessions/{session}/history", params={"limit": 200}).json()
        assert tail["events"][0]["type"] == "tool/result"
        open_session(page, served, session)
        # The rows fold into groups, so the top (and the older page's button) is soon in view.
        page.locator("#messages").evaluate("(box) => box.scrollTo(0, 0)")  # type: ignore[attr-defined]
        rows = page.locator("[data-testid=tool-row]")  # type: ignore[attr-defined]
        expect(rows).to_have_count(120)
        assert page.evaluate(OUTPUTS) == [["ok", f"output {n}"] for n in range(120)]  # type: ignore[attr-defined]


AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
SERIOUS = """axe.run(document).then((result) => result.violations
  .filter((v) => ['serious', 'critical'].includes(v.impact))
  .map((v) => [v.id, v.nodes.slice(0, 3).map((n) => n.target.join(' '))]))"""
RICH = [
    {"text": MARKDOWN[:200], "tool_calls": [todo_call(*LONG_PLAN[:4])]},
    {"tool_calls": [bash_call("echo hello")]},
    {"text": "Done."},
]


@pytest.mark.parametrize(
    ("viewport", "scheme"), [(DESK, "light"), (PHONE, "dark")], ids=["desk-light", "phone-dark"]
)
def test_axe_core_finds_no_serious_or_critical_violation(
    browser: object,
    tmp_path: Path,
    harness_home: Path,
    viewport: dict[str, int],
    scheme: str,
) -> None:
    """axe-core (vendored in tests/vendor with its license) on a page with Markdown, a plan,
    rows and a waiting approval, light at a desk and dark on a phone."""
    expect = playwright_api.expect
    with (
        asking(harness_home, tmp_path / "rich.json", RICH) as (served, _client, session),
        browsing(browser, viewport, color_scheme=scheme, bypass_csp=True) as page,
    ):
        open_session(page, served, session)
        send(page, "go")
        row = page.locator("[data-testid=tool-row][data-tool=bash]")  # type: ignore[attr-defined]
        expect(row).to_have_attribute("data-state", "waiting", timeout=15000)
        page.add_script_tag(path=str(AXE))  # type: ignore[attr-defined]
        assert page.evaluate(SERIOUS) == []  # type: ignore[attr-defined]


def test_a_queued_prompt_can_be_taken_back_to_edit_or_removed(
    page: object, harness_home: Path, tmp_path: Path
) -> None:
    """While a turn runs, each queued prompt has an edit and a remove button: remove drops it
    (it never runs); edit takes it back into the prompt box; the item's text stays the prompt."""
    model = write_script(
        tmp_path / "slow.json",
        [{"tool_calls": [bash_call("sleep 8")]}, {"text": "first"}, {"text": "kept"}],
    )
    expect = playwright_api.expect
    items = page.locator("[data-testid=queue-item]")  # type: ignore[attr-defined]
    with serve(harness_home, "--model", model) as served, served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        open_session(page, served, session)
        send(page, "go")
        row = page.locator("[data-testid=tool-row][data-tool=bash]")  # type: ignore[attr-defined]
        expect(row).to_have_attribute("data-state", "running", timeout=15000)
        for prompt in ("drop me", "edit me", "keep me"):
            send(page, prompt)
        expect(items).to_have_count(3)
        expect(items.first).to_have_text("drop me")
        items.first.get_by_role("button", name="Remove this queued prompt").click()
        expect(items).to_have_count(2)
        items.first.get_by_role("button", name="Edit this queued prompt").click()
        expect(items).to_have_count(1)
        expect(items.first).to_have_text("keep me")
        expect(page.locator("[data-testid=prompt]")).to_have_value("edit me")  # type: ignore[attr-defined]
        finished = served.wait_idle(session, timeout=60)
    prompts = [e["data"]["text"] for e in finished["events"] if e["type"] == "message/user"]
    assert prompts == ["go", "keep me"]


def test_the_open_session_can_be_deleted_after_a_confirmation(
    page: object, harness_home: Path, tmp_path: Path
) -> None:
    """The topbar's Delete asks first; accepted, the session leaves the list for good."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "one.json", [{"text": "Done."}])
    with serve(harness_home, "--model", model) as served, served.client() as client:
        keep = client.post("/api/sessions", json={}).json()["id"]
        drop = client.post("/api/sessions", json={}).json()["id"]
        open_session(page, served, drop)
        asked: list[str] = []
        page.remove_listener("dialog", dismiss)  # type: ignore[attr-defined]
        page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))  # type: ignore[attr-defined]
        page.get_by_role("button", name="Delete this session").click()  # type: ignore[attr-defined]
        links = page.locator("[data-testid=session-link]")  # type: ignore[attr-defined]
        expect(links).to_have_count(1)
        expect(links.first).to_have_attribute("data-id", keep)
        assert asked and "Delete this session" in asked[0]
        listed = [s["id"] for s in client.get("/api/sessions").json()["sessions"]]
    assert listed == [keep]


def test_a_session_is_renamed_in_the_list_with_the_keyboard_and_found_by_search(
    browser: object, harness_home: Path, tmp_path: Path
) -> None:
    """The list's ✎ opens a box on the title: Esc leaves it as it was, Enter saves it (the top
    bar follows), an empty title stays in the box with the server's one line; the search box
    finds the session by its new title; another tab shows it once it is looked at again."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "one.json", [{"text": "Done."}])
    with (
        serve(harness_home, "--model", model) as served,
        served.client() as client,
        browsing(browser, DESK) as page,
        browsing(browser, DESK) as other,
    ):
        first = client.post("/api/sessions", json={}).json()["id"]
        second = client.post("/api/sessions", json={}).json()["id"]
        client.post(f"/api/sessions/{second}/turns", json={"prompt": "a first prompt"})
        served.wait_idle(second)
        open_session(other, served, first)
        open_session(page, served, second)
        entry = page.locator(f".session-entry[data-id='{second}']")  # type: ignore[attr-defined]
        link = entry.locator("[data-testid=session-link]")
        expect(link).to_contain_text("a first prompt")
        rename = entry.get_by_role("button", name="Rename session: a first prompt")
        rename.focus()
        page.keyboard.press("Enter")  # type: ignore[attr-defined]
        box = entry.locator("[data-testid=rename-input]")
        expect(box).to_be_focused()
        expect(box).to_have_value("a first prompt")
        page.keyboard.type("dropped")  # type: ignore[attr-defined]
        page.keyboard.press("Escape")  # type: ignore[attr-defined]
        expect(box).to_have_count(0)
        expect(link).to_contain_text("a first prompt")
        expect(rename).to_be_focused()
        page.keyboard.press("Enter")  # type: ignore[attr-defined]
        page.keyboard.press("Control+A")  # type: ignore[attr-defined]
        page.keyboard.press("Delete")  # type: ignore[attr-defined]
        page.keyboard.press("Enter")  # type: ignore[attr-defined]
        expect(page.locator("[data-testid=error]")).to_contain_text("must not be empty")  # type: ignore[attr-defined]
        expect(box).to_be_focused()
        page.keyboard.type("Quarterly report")  # type: ignore[attr-defined]
        page.keyboard.press("Enter")  # type: ignore[attr-defined]
        expect(box).to_have_count(0)
        expect(link).to_contain_text("Quarterly report")
        expect(page.locator("#session-title")).to_have_text("Quarterly report")  # type: ignore[attr-defined]
        expect(page.locator("[data-testid=error]")).to_be_hidden()  # type: ignore[attr-defined]
        expect(entry.locator("[data-testid=rename]")).to_be_focused()
        assert page.title() == "Quarterly report · harness"  # type: ignore[attr-defined]
        page.fill("#search", "quarterly")  # type: ignore[attr-defined]
        expect(page.locator("[data-testid=session-link]:visible")).to_have_count(1)  # type: ignore[attr-defined]
        expect(page.locator("[data-testid=session-link]:visible")).to_have_attribute(
            "data-id", second
        )  # type: ignore[attr-defined]
        # The other tab lists the sessions again when it is looked at.
        other.evaluate("document.dispatchEvent(new Event('visibilitychange'))")  # type: ignore[attr-defined]
        renamed = other.locator(f"[data-testid=session-link][data-id='{second}']")  # type: ignore[attr-defined]
        expect(renamed).to_contain_text("Quarterly report")
        listed = {s["id"]: s["title"] for s in client.get("/api/sessions").json()["sessions"]}
    assert listed == {first: None, second: "Quarterly report"}


# -- the page as a daily tool: at both widths, the phone with touch ---------------------------

BOTH = pytest.mark.parametrize("device", ["desk", "phone"])


@contextmanager
def device_page(browser: object, device: str, **options: object) -> Iterator[object]:
    if device == "desk":
        with browsing(browser, DESK, **options) as opened:
            yield opened
    else:
        with browsing(browser, PHONE, is_mobile=True, has_touch=True, **options) as opened:
            yield opened


@BOTH
def test_while_a_turn_runs_send_is_stop_and_the_page_says_it_is_working(
    browser: object, device: str, tmp_path: Path, harness_home: Path
) -> None:
    """The first prompt on the start page: the welcome text goes, the prompt shows as a
    message, Send becomes Stop and the conversation says it is working; Stop cancels the
    turn, and Send and the quiet conversation come back."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "slow.json", SLOW)
    with serve(harness_home, "--model", model) as served, device_page(browser, device) as page:
        page.goto(f"{served.url}?token={served.token}")  # type: ignore[attr-defined]
        expect(page.locator(".welcome")).to_be_visible()  # type: ignore[attr-defined]
        button = page.locator("[data-testid=send]")  # type: ignore[attr-defined]
        working = page.locator("[data-testid=working]")  # type: ignore[attr-defined]
        expect(working).to_be_hidden()
        send(page, "Count the files")
        expect(page.locator(".welcome")).to_have_count(0)  # type: ignore[attr-defined]
        users = page.locator("[data-testid=message][data-role=user]")  # type: ignore[attr-defined]
        expect(users).to_have_text(["Count the files"])
        expect(button).to_have_attribute("data-state", "stop", timeout=15000)
        expect(button).to_have_text("Stop")
        expect(working).to_be_visible()
        button.click()
        expect(page.locator(".turn-note")).to_have_text("turn cancelled", timeout=15000)  # type: ignore[attr-defined]
        expect(button).to_have_attribute("data-state", "send")
        expect(button).to_have_text("Send")
        expect(working).to_be_hidden()
        expect(users).to_have_text(["Count the files"])  # shown once, never twice


@BOTH
def test_a_failed_turn_is_an_error_with_retry_that_sends_the_prompt_again(
    browser: object, device: str, harness_home: Path, openai_server: OpenAIServer
) -> None:
    """The model's endpoint refuses the turn: the page shows the one line as an error (not a
    grey note) with Retry; Retry sends the same prompt again and the answer comes."""
    expect = playwright_api.expect
    openai_server.expect(error_reply(400, "the context is too long"))
    env = {"OPENAI_BASE_URL": openai_server.base_url, "OPENAI_API_KEY": "sk-test"}
    with (
        serve(harness_home, "--model", "openai:gpt-test", env=env) as served,
        served.client() as client,
        device_page(browser, device) as page,
    ):
        session = client.post("/api/sessions", json={}).json()["id"]
        open_session(page, served, session)
        send(page, "Summarize the repo")
        failure = page.locator("[data-testid=turn-error]")  # type: ignore[attr-defined]
        expect(failure).to_contain_text("the context is too long", timeout=15000)
        expect(failure).to_have_attribute("role", "alert")
        colours = failure.evaluate(
            "(box) => [getComputedStyle(box).backgroundColor,"
            " getComputedStyle(box).borderLeftColor]"
        )
        assert "rgba(0, 0, 0, 0)" not in colours  # drawn as an error, not a bare line
        openai_server.expect(reply("Summed up."))
        failure.locator("[data-testid=retry]").click()
        expect(page.locator("[data-testid=message][data-role=assistant]")).to_have_text(  # type: ignore[attr-defined]
            ["Summed up."], timeout=15000
        )
        users = page.locator("[data-testid=message][data-role=user]")  # type: ignore[attr-defined]
        expect(users).to_have_text(["Summarize the repo", "Summarize the repo"])


@BOTH
def test_a_turn_whose_session_cannot_be_opened_is_an_error_with_retry(
    browser: object, device: str, harness_home: Path, openai_server: OpenAIServer
) -> None:
    """The server took the prompt, then could not open the session for writing (its log is
    damaged past the lock): the page stops working and shows the one line as the turn's
    error with Retry, not a prompt left pending; once the cause is gone, Retry runs it."""
    from test_web_api import damage_past_the_lock

    expect = playwright_api.expect
    env = {"OPENAI_BASE_URL": openai_server.base_url, "OPENAI_API_KEY": "sk-test"}
    with (
        serve(harness_home, "--model", "openai:gpt-test", env=env) as served,
        served.client() as client,
        device_page(browser, device) as page,
    ):
        session = client.post("/api/sessions", json={}).json()["id"]
        open_session(page, served, session)
        blocking = damage_past_the_lock(harness_home, session)
        send(page, "Summarize the repo")
        failure = page.locator("[data-testid=turn-error]")  # type: ignore[attr-defined]
        expect(failure).to_contain_text("too many torn-tail files beside", timeout=15000)
        expect(page.locator("[data-testid=send]")).to_have_attribute("data-state", "send")  # type: ignore[attr-defined]
        expect(page.locator("[data-testid=message][data-role=user]")).to_have_count(0)  # type: ignore[attr-defined]
        for aside in blocking:
            aside.unlink()
        openai_server.expect(reply("Summed up."))
        failure.locator("[data-testid=retry]").click()
        expect(page.locator("[data-testid=message][data-role=assistant]")).to_have_text(  # type: ignore[attr-defined]
            ["Summed up."], timeout=15000
        )
        expect(failure).to_have_count(0)


@BOTH
def test_a_command_that_exits_non_zero_is_a_failure_at_a_glance(
    browser: object, device: str, tmp_path: Path, harness_home: Path
) -> None:
    """`false` gets data-exit=1, the failure state and mark; `true` stays ok with exit 0;
    after a reload (rows from the tail page) the same."""
    expect = playwright_api.expect
    steps = [{"tool_calls": [bash_call("false"), bash_call("true")]}, {"text": "Checked."}]
    model = write_script(tmp_path / "exit.json", steps)
    with (
        serve(harness_home, "--model", model) as served,
        served.client() as client,
        device_page(browser, device) as page,
    ):
        session = client.post("/api/sessions", json={}).json()["id"]
        open_session(page, served, session)
        send(page, "Check")
        rows = page.locator("[data-testid=tool-row][data-tool=bash]")  # type: ignore[attr-defined]
        for _ in range(2):
            expect(rows.nth(0)).to_have_attribute("data-exit", "1", timeout=15000)
            expect(rows.nth(0)).to_have_attribute("data-state", "error")
            mark = (
                rows.nth(0)
                .locator(".mark")
                .evaluate("(m) => getComputedStyle(m, '::before').content")
            )
            assert mark == '"✗"'
            expect(rows.nth(1)).to_have_attribute("data-exit", "0")
            expect(rows.nth(1)).to_have_attribute("data-state", "ok")
            served.wait_idle(session)
            page.reload()  # type: ignore[attr-defined]
            page.wait_for_selector(f"body[data-session='{session}']")  # type: ignore[attr-defined]


@BOTH
def test_the_token_survives_a_restart_and_a_page_without_it_asks_for_it(
    browser: object, device: str, tmp_path: Path, harness_home: Path
) -> None:
    """The token is kept in HARNESS_HOME/web-token (0600): a restarted server keeps the open
    page working. --new-token makes another: the page shows the token form and a message,
    the printed URL pasted there brings it back with the draft kept. A tab without a token
    shows the form; a wrong token shows the form, not a line of JSON."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "answers.json", [{"text": "One."}, {"text": "Two."}])
    port = free_port()
    plain = {"HARNESS_WEB_TOKEN": None}
    answers = None
    with device_page(browser, device) as page:
        form = page.locator("[data-testid=token-form]")  # type: ignore[attr-defined]
        with serve(harness_home, "--model", model, env=plain, port=port) as served:
            kept = harness_home / "web-token"
            assert kept.read_text().strip() == served.token
            assert kept.stat().st_mode & 0o777 == 0o600
            first = served.token
            page.goto(served.url)  # type: ignore[attr-defined]
            expect(form).to_be_visible()
            expect(form).to_contain_text("paste the URL harness serve printed")
            page.fill("[data-testid=token-input]", first)  # type: ignore[attr-defined]
            page.press("[data-testid=token-input]", "Enter")  # type: ignore[attr-defined]
            expect(form).to_be_hidden()
            send(page, "First")
            answers = page.locator("[data-testid=message][data-role=assistant]")  # type: ignore[attr-defined]
            expect(answers).to_have_text(["One."], timeout=15000)
        with serve(harness_home, "--model", model, env=plain, port=port) as served:
            assert served.token == first
            send(page, "Second")
            # a new server's player starts the script again
            expect(answers).to_have_text(["One.", "One."], timeout=20000)
            expect(form).to_be_hidden()
        with serve(harness_home, "--new-token", env=plain, port=port) as served:
            assert served.token != first
            assert (harness_home / "web-token").read_text().strip() == served.token
            page.fill("[data-testid=prompt]", "a draft")  # type: ignore[attr-defined]
            page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")  # type: ignore[attr-defined]
            expect(form).to_be_visible(timeout=10000)
            expect(form).to_contain_text("refused this page's token")
            page.fill("[data-testid=token-input]", f"{served.url}?token={served.token}")  # type: ignore[attr-defined]
            page.press("[data-testid=token-input]", "Enter")  # type: ignore[attr-defined]
            expect(form).to_be_hidden()
            expect(page.locator("[data-testid=session-link]")).to_have_count(1)  # type: ignore[attr-defined]
            expect(page.locator("[data-testid=prompt]")).to_have_value("a draft")  # type: ignore[attr-defined]
            page.goto(f"{served.url}?token=not-the-token")  # type: ignore[attr-defined]
            expect(form).to_be_visible()
            assert '{"error"' not in page.locator("body").inner_text()  # type: ignore[attr-defined]


@BOTH
def test_the_list_marks_running_and_waiting_sessions_live_with_relative_times(
    browser: object, device: str, tmp_path: Path, harness_home: Path
) -> None:
    """Under --approval ask, one session runs a command (allowed) and another waits for an
    answer, neither open on the page: the list marks them, live, and the marks go when the
    turn ends; rows read as a title and a relative time, not an event count."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "slow.json", SLOW)
    with (
        serve(harness_home, "--model", model, "--approval", "ask") as served,
        served.client() as client,
        device_page(browser, device) as page,
    ):
        running, waiting = (client.post("/api/sessions", json={}).json()["id"] for _ in "ab")
        page.goto(f"{served.url}?token={served.token}")  # type: ignore[attr-defined]
        links = page.locator("[data-testid=session-link]")  # type: ignore[attr-defined]
        expect(links).to_have_count(2)
        expect(links.first).to_contain_text("Just now")
        expect(links.first).not_to_contain_text("events")
        client.post(f"/api/sessions/{running}/turns", json={"prompt": "Wait a while"})
        asked = served.wait_question(running)
        client.post(
            f"/api/sessions/{running}/approvals",
            json={"call_id": asked["call_id"], "answer": "once"},
        )
        client.post(f"/api/sessions/{waiting}/turns", json={"prompt": "Ask me"})
        served.wait_question(waiting)
        if device == "phone":  # the list is a drawer there: its button says something waits
            toggle = page.locator("[data-testid=sessions-toggle]")  # type: ignore[attr-defined]
            expect(toggle).to_have_attribute("data-waiting", "1", timeout=15000)
            toggle.click()
        one = page.locator(f"[data-testid=session-link][data-id='{running}']")  # type: ignore[attr-defined]
        other = page.locator(f"[data-testid=session-link][data-id='{waiting}']")  # type: ignore[attr-defined]
        expect(one.locator("[data-testid=session-running]")).to_be_visible(timeout=15000)
        expect(other.locator("[data-testid=session-waiting]")).to_be_visible(timeout=15000)
        expect(one.locator("[data-testid=session-waiting]")).to_have_count(0)
        client.post(f"/api/sessions/{running}/cancel")
        expect(one.locator("[data-testid=session-running]")).to_have_count(0, timeout=15000)
        expect(other.locator("[data-testid=session-waiting]")).to_be_visible()


LONG_RUN = [
    {"text": "Plan.", "tool_calls": [todo_call(("Look at each", "in_progress"))]},
    {
        "text": "Running them.",
        "tool_calls": [bash_call(f"echo {n}") for n in range(11)] + [bash_call("false")],
    },
    {"text": "All looked at.", "tool_calls": [todo_call(("Look at each", "completed"))]},
    {"text": "\n\n".join(f"Line {n} of the report." for n in range(80))},
]


@BOTH
def test_a_long_run_folds_into_a_group_jump_to_latest_and_a_finished_plan_collapses(
    browser: object, device: str, tmp_path: Path, harness_home: Path
) -> None:
    """Twelve commands in a row fold into one "Ran 12 commands · 1 failed" line that opens;
    a reader scrolled up gets "jump to latest", which takes them back to the end; the plan,
    all done, shows its summary only until opened."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "long.json", LONG_RUN)
    with (
        serve(harness_home, "--model", model) as served,
        served.client() as client,
        device_page(browser, device) as page,
    ):
        session = client.post("/api/sessions", json={}).json()["id"]
        open_session(page, served, session)
        send(page, "Look at everything")
        answer = page.locator("[data-testid=message][data-role=assistant]").last  # type: ignore[attr-defined]
        expect(answer).to_contain_text("Line 79 of the report.", timeout=20000)
        send_button = page.locator("[data-testid=send]")  # type: ignore[attr-defined]
        expect(send_button).to_have_attribute("data-state", "send")  # the turn ended
        jump = page.locator("[data-testid=jump-latest]")  # type: ignore[attr-defined]
        expect(jump).to_be_hidden()
        page.locator("#messages").evaluate("(box) => box.scrollTo(0, 0)")  # type: ignore[attr-defined]
        expect(jump).to_be_visible()
        jump.click()
        expect(jump).to_be_hidden()
        expect(answer).to_be_in_viewport()
        group = page.locator("[data-testid=tool-group]")  # type: ignore[attr-defined]
        expect(group).to_have_count(1)
        expect(group.locator(".group-line")).to_have_text("Ran 12 commands · 1 failed")
        rows = group.locator("[data-testid=tool-row]")
        expect(rows).to_have_count(12)
        expect(rows.first).to_be_hidden()
        group.locator(".group-line").click()
        expect(rows.first).to_be_visible()
        dock = page.locator("[data-testid=todo-dock]")  # type: ignore[attr-defined]
        expect(dock.locator("[data-testid=todo-summary]")).to_contain_text("1/1")
        expect(dock.locator("[data-testid=todo-item]")).to_have_count(0)
        toggle = dock.locator("[data-testid=todo-toggle]")
        expect(toggle).to_have_attribute("aria-expanded", "false")
        toggle.click()
        expect(dock.locator("[data-testid=todo-item]")).to_have_count(1)


RUNNING_LONG = [*({"tool_calls": [bash_call(f"echo {n}")]} for n in range(12))]
RUNNING_LONG.append({"tool_calls": [bash_call("sleep 30")]})


def test_a_running_group_shows_its_newest_rows_and_every_row_once_the_turn_ends(
    browser: object, tmp_path: Path, harness_home: Path
) -> None:
    """While a long run streams in, its open group shows the newest eight rows only (a
    thousand-command run lays out as a short one each frame); once the turn ends, the group
    folds, and opening it shows every row."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "running.json", RUNNING_LONG)
    with (
        serve(harness_home, "--model", model) as served,
        served.client() as client,
        device_page(browser, "desk") as page,
    ):
        open_session(page, served, client.post("/api/sessions", json={}).json()["id"])
        send(page, "Run them all")
        group = page.locator("[data-testid=tool-group]")  # type: ignore[attr-defined]
        rows = group.locator("[data-testid=tool-row]")
        expect(rows).to_have_count(13, timeout=20000)
        expect(group).to_have_attribute("open", "")
        expect(group.locator(".group-line")).to_have_text("Ran 13 commands · 1 running")
        expect(group.locator("[data-testid=tool-row]:visible")).to_have_count(8)
        expect(rows.first).to_be_hidden()
        expect(rows.last).to_be_visible()
        page.locator("[data-testid=send]").click()  # type: ignore[attr-defined]  # Stop
        expect(page.locator(".turn-note")).to_have_text("turn cancelled", timeout=15000)  # type: ignore[attr-defined]
        expect(group).not_to_have_attribute("open", "")
        group.locator(".group-line").click()
        expect(group.locator("[data-testid=tool-row]:visible")).to_have_count(13)


@BOTH
def test_the_model_picker_chooses_the_next_turns_model_and_each_answer_names_its_model(
    browser: object, device: str, harness_home: Path, openai_server: OpenAIServer
) -> None:
    """GET /api/models lists --model, the configured models and the demo; the picker sends
    the next turn to the one chosen (a spec not offered is a 422), and each answer shows the
    model that wrote it."""
    expect = playwright_api.expect
    env = {
        "OPENAI_BASE_URL": openai_server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "HARNESS_MODELS": "openai:gpt-other",
    }
    openai_server.expect(reply("From the default.", model="gpt-test"))
    openai_server.expect(reply("From the other.", model="gpt-other"))
    with (
        serve(harness_home, "--model", "openai:gpt-test", env=env) as served,
        served.client() as client,
        device_page(browser, device) as page,
    ):
        offered = client.get("/api/models").json()
        assert offered == {
            "models": ["openai:gpt-test", "openai:gpt-other", "demo"],
            "default": "openai:gpt-test",
        }
        session = client.post("/api/sessions", json={}).json()["id"]
        refused = client.post(
            f"/api/sessions/{session}/turns", json={"prompt": "hi", "model": "openai:gpt-nope"}
        )
        assert refused.status_code == 422 and "not a model this server offers" in refused.text
        open_session(page, served, session)
        picker = page.locator("[data-testid=model-picker]")  # type: ignore[attr-defined]
        expect(picker).to_have_value("openai:gpt-test")
        answers = page.locator("[data-testid=message][data-role=assistant]")  # type: ignore[attr-defined]
        send(page, "Who are you?")
        expect(answers).to_have_text(["From the default."], timeout=15000)
        picker.select_option("openai:gpt-other")
        send(page, "And you?")
        expect(answers).to_have_text(["From the default.", "From the other."], timeout=15000)
        assert [r.body["model"] for r in openai_server.requests] == ["gpt-test", "gpt-other"]
        expect(answers.nth(0)).to_have_attribute("data-model", "gpt-test")
        expect(answers.nth(1)).to_have_attribute("data-model", "gpt-other")
        shown = answers.nth(1).evaluate("(m) => getComputedStyle(m, '::before').content")
        assert "gpt-other" in shown


def seeded(home: Path, *turns: tuple[str, ...]) -> str:
    """A session written straight to the store: each turn a prompt and its answers."""
    host = PluginHost()
    builtins.add_to(host)
    host.load_entry_points()
    with SessionStore(home, host.event_types).create() as log:
        for n, (prompt, *answers) in enumerate(turns, 1):
            log.append("turn/start", {}, turn=n)
            log.append("message/user", {"text": prompt}, turn=n)
            for answer in answers:
                log.append("message/assistant", {"text": answer}, turn=n)
            log.append("turn/end", {"status": "completed"}, turn=n)
        return log.session_id


FOCUSED = (
    "document.activeElement && (document.activeElement.dataset.testid || document.activeElement.id)"
)


@BOTH
def test_opening_with_enter_focuses_the_prompt_and_tabbing_past_load_earlier_loads_nothing(
    browser: object, device: str, harness_home: Path
) -> None:
    """A session opened from the list with Enter puts focus in the prompt (the link keeps its
    focus while the list is made again); Tab onto "Load earlier events" and past it loads
    nothing; Enter on it loads the older page."""
    expect = playwright_api.expect
    answers = [f"Answer {n}, a paragraph of its own." for n in range(300)]
    session = seeded(harness_home, ("Tell me a lot", *answers))
    with serve(harness_home) as served, device_page(browser, device) as page:
        page.goto(f"{served.url}?token={served.token}")  # type: ignore[attr-defined]
        if device == "phone":
            page.click("[data-testid=sessions-toggle]")  # type: ignore[attr-defined]
        link = page.locator(f"[data-testid=session-link][data-id='{session}']")  # type: ignore[attr-defined]
        expect(link).to_be_visible()  # on a phone, once the drawer is open
        link.focus()
        expect(link).to_be_focused()
        # The list made again (here: the tab coming back into view) keeps the link's focus.
        with page.expect_response(lambda response: response.url.endswith("/api/sessions")):  # type: ignore[attr-defined]
            page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")  # type: ignore[attr-defined]
        expect(link).to_be_focused()
        page.keyboard.press("Enter")  # type: ignore[attr-defined]
        page.wait_for_selector(f"body[data-session='{session}']")  # type: ignore[attr-defined]
        expect(page.locator("[data-testid=prompt]")).to_be_focused()  # type: ignore[attr-defined]
        shown = page.locator("[data-testid=message]")  # type: ignore[attr-defined]
        before = shown.count()
        assert before < 250  # the tail page only
        page.focus("#messages")  # type: ignore[attr-defined]
        page.keyboard.press("Tab")  # type: ignore[attr-defined]
        assert page.evaluate(FOCUSED) == "older"  # type: ignore[attr-defined]
        page.keyboard.press("Tab")  # type: ignore[attr-defined]
        page.wait_for_timeout(800)  # type: ignore[attr-defined]
        assert shown.count() == before
        page.focus("#older")  # type: ignore[attr-defined]
        page.keyboard.press("Enter")  # type: ignore[attr-defined]
        expect(shown).to_have_count(301)


TOUCH_TARGETS = """[...document.querySelectorAll('button, a[href], select, summary')]
  .filter((node) => node.getClientRects().length && !node.closest('.message'))
  .map((node) => [node.dataset.testid || node.id || node.className || node.textContent.slice(0, 20),
                  Math.round(node.getBoundingClientRect().width),
                  Math.round(node.getBoundingClientRect().height)])"""


@BOTH
def test_an_approval_shows_its_command_once_answers_to_y_and_touch_targets_are_44px(
    browser: object, device: str, tmp_path: Path, harness_home: Path
) -> None:
    """A short command waiting for approval shows once (its row's line, no second copy);
    the question answers to y; on the touch screen every button, link and row line is at
    least 44x44 CSS px."""
    expect = playwright_api.expect
    steps = [{"tool_calls": [bash_call("echo hi")]}, {"text": "Said hi."}]
    with (
        asking(harness_home, tmp_path / "hi.json", steps) as (served, _client, session),
        device_page(browser, device) as page,
    ):
        seeded(harness_home, ("Another session", "Yes."))
        open_session(page, served, session)
        send(page, "go")
        row = page.locator("[data-testid=tool-row][data-tool=bash]")  # type: ignore[attr-defined]
        expect(row).to_have_attribute("data-state", "waiting", timeout=15000)
        expect(row.locator("[data-testid=tool-summary]")).to_have_text("$ echo hi")
        expect(row.locator("[data-testid=approval-detail]")).to_have_count(0)
        assert row.inner_text().count("echo hi") == 1
        if device == "phone":
            small = [t for t in page.evaluate(TOUCH_TARGETS) if t[1] < 44 or t[2] < 44]  # type: ignore[attr-defined]
            assert small == []
            page.click("[data-testid=sessions-toggle]")  # type: ignore[attr-defined]
            small = [t for t in page.evaluate(TOUCH_TARGETS) if t[1] < 44 or t[2] < 44]  # type: ignore[attr-defined]
            assert small == []
            page.keyboard.press("Escape")  # type: ignore[attr-defined]
        row.locator("[data-testid=approval]").focus()
        page.keyboard.press("y")  # type: ignore[attr-defined]
        expect(row).to_have_attribute("data-state", "ok", timeout=15000)
        expect(row.locator("[data-testid=approval-note]")).to_have_text("allowed by the user")


@BOTH
def test_new_session_saves_nothing_until_a_prompt_and_search_reads_prompts(
    browser: object, device: str, tmp_path: Path, harness_home: Path
) -> None:
    """ "New session" shows a blank page and saves nothing; the first prompt makes the
    session. Search finds a session by a later prompt, and says when nothing matches."""
    expect = playwright_api.expect
    parser = seeded(harness_home, ("hello", "Hi."), ("the parser is broken", "Fixed."))
    docs = seeded(harness_home, ("write the docs", "Written."))
    model = write_script(tmp_path / "new.json", [{"text": "Started."}])
    with (
        serve(harness_home, "--model", model) as served,
        served.client() as client,
        device_page(browser, device) as page,
    ):
        open_session(page, served, docs)
        links = page.locator("[data-testid=session-link]")  # type: ignore[attr-defined]
        expect(links).to_have_count(2)
        toggle = page.locator("[data-testid=sessions-toggle]")  # type: ignore[attr-defined]
        if device == "phone":
            toggle.click()
        page.click("[data-testid=new-session]")  # type: ignore[attr-defined]
        expect(page.locator(".welcome")).to_be_visible()  # type: ignore[attr-defined]
        expect(page.locator("[data-testid=prompt]")).to_be_focused()  # type: ignore[attr-defined]
        page.wait_for_timeout(500)  # type: ignore[attr-defined]
        assert len(client.get("/api/sessions").json()["sessions"]) == 2
        expect(links).to_have_count(2)
        send(page, "Start something")
        answers = page.locator("[data-testid=message][data-role=assistant]")  # type: ignore[attr-defined]
        expect(answers).to_have_text(["Started."], timeout=15000)
        assert len(client.get("/api/sessions").json()["sessions"]) == 3
        if device == "phone":
            toggle.click()
        page.fill("#search", "parser")  # type: ignore[attr-defined]
        visible = page.locator("[data-testid=session-link]:visible")  # type: ignore[attr-defined]
        expect(visible).to_have_count(1)
        expect(visible).to_have_attribute("data-id", parser)
        page.fill("#search", "no such words")  # type: ignore[attr-defined]
        expect(visible).to_have_count(0)
        expect(page.locator("[data-testid=no-match]")).to_have_text(  # type: ignore[attr-defined]
            "No session matches “no such words”."
        )


@BOTH
def test_headings_in_a_message_follow_the_pages_outline(
    browser: object, device: str, tmp_path: Path, harness_home: Path
) -> None:
    """`##` and `###` in an answer are an h2 and an h3 under the page's h1 (a `##` was an h4):
    axe-core's heading-order rule finds nothing."""
    expect = playwright_api.expect
    model = write_script(tmp_path / "h.json", [{"text": "## Steps\n\nfirst\n\n### Detail\n\nok"}])
    with (
        serve(harness_home, "--model", model) as served,
        served.client() as client,
        device_page(browser, device, bypass_csp=True) as page,
    ):
        session = client.post("/api/sessions", json={}).json()["id"]
        open_session(page, served, session)
        send(page, "Outline it")
        answer = page.locator("[data-testid=message][data-role=assistant]")  # type: ignore[attr-defined]
        expect(answer).to_contain_text("Detail", timeout=15000)
        levels = answer.evaluate(
            "(m) => [...m.querySelectorAll('h1,h2,h3,h4,h5,h6')].map((h) => h.tagName)"
        )
        assert levels == ["H2", "H3"]
        page.add_script_tag(path=str(AXE))  # type: ignore[attr-defined]
        found = page.evaluate(  # type: ignore[attr-defined]
            "axe.run(document, {runOnly: ['heading-order']}).then((r) => r.violations.length)"
        )
        assert found == 0
