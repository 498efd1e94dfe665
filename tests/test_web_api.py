"""The web host's API over real HTTP: `harness serve` in a subprocess, httpx as the client.

Security (token, Host, Origin), the session list, turns and their queue, cancel, the tail page
with its host-computed `todos`, older pages, SSE with resume, 409 and 422.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import httpx
import pytest
from harness_core.log import SessionStore
from harness_core.plugins import PluginHost
from harness_core.testing.openai_server import OpenAIServer, reply, tool_call
from test_cli_support import bash_call, todo_call, write_script
from web_support import Served, serve, sse_events

PLAN_AND_ANSWER = [
    {"text": "Planning.", "tool_calls": [todo_call(("Look", "in_progress"), ("Tell", "pending"))]},
    {"tool_calls": [bash_call("echo hello")]},
    {"tool_calls": [todo_call(("Look", "completed"), ("Tell", "in_progress"))]},
    {"text": "It says hello."},
    {"text": "Second answer."},
]


@pytest.fixture
def served(tmp_path: Path, harness_home: Path) -> Served:
    model = write_script(tmp_path / "script.json", PLAN_AND_ANSWER)
    with serve(harness_home, "--model", model) as server:
        yield server  # type: ignore[misc]


def test_every_api_request_needs_the_token_and_the_page_sets_a_cookie(served: Served) -> None:
    """401 without the token; /?token= sets an HttpOnly cookie that then authorizes."""
    with served.client(token=False) as client:
        assert client.get("/api/sessions").status_code == 401
        assert (
            client.get("/api/sessions", headers={"Authorization": "Bearer nope"}).status_code == 401
        )
        entry = client.get(f"/?token={served.token}", follow_redirects=False)
        assert entry.status_code == 303 and "httponly" in entry.headers["set-cookie"].lower()
        assert client.get("/api/sessions").json() == {"sessions": []}
        page = client.get("/")
        assert "script-src 'self'" in page.headers["content-security-policy"]


def test_a_foreign_host_or_origin_is_refused(served: Served) -> None:
    """DNS rebinding (another Host) and cross-site POSTs (another Origin) get 403."""
    with served.client() as client:
        assert client.get("/api/sessions", headers={"Host": "evil.example:80"}).status_code == 403
        post = client.post("/api/sessions", json={}, headers={"Origin": "http://evil.example"})
        assert post.status_code == 403
        own = client.post("/api/sessions", json={}, headers={"Origin": served.url.rstrip("/")})
        assert own.status_code == 201


def test_malformed_requests_get_422_with_one_line(served: Served) -> None:
    """Bad JSON, a wrong field type, an unbuildable model: 422 and a one-line reason."""
    with served.client() as client:
        bad = client.post("/api/sessions", content=b"{not json")
        assert bad.status_code == 422 and "not valid JSON" in bad.json()["error"]
        assert client.post("/api/sessions", json={"model": 3}).status_code == 422
        missing = client.post("/api/sessions", json={"model": "scripted:/no/such/file.json"})
        assert missing.status_code == 422 and "\n" not in missing.json()["error"]
        created = client.post("/api/sessions", json={}).json()["id"]
        empty = client.post(f"/api/sessions/{created}/turns", json={"prompt": "  "})
        assert empty.status_code == 422
        assert client.get("/api/sessions/nonesuch/history").status_code == 404
        limit = client.get(f"/api/sessions/{created}/history", params={"limit": "x"})
        assert limit.status_code == 422


def test_a_turn_runs_and_the_tail_page_carries_the_standing_plan(served: Served) -> None:
    """POST turns starts turn 1; the tail page has the events and snapshot.todos."""
    with served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        started = client.post(f"/api/sessions/{session}/turns", json={"prompt": "Look around"})
        assert (started.status_code, started.json()) == (202, {"turn": 1})
    page = served.wait_idle(session)
    types = [e["type"] for e in page["events"]]
    assert types[0] == "session/start" and types[-1] == "turn/end"
    assert page["before"] is None
    assert page["snapshot"]["todos"] == [
        {"content": "Look", "status": "completed"},
        {"content": "Tell", "status": "in_progress"},
    ]
    assert page["snapshot"]["seq"] == page["events"][-1]["seq"]
    rows = {row["name"]: row for row in page["rows"].values()}
    assert rows["bash"]["label"] == "$ echo hello" and rows["bash"]["summary"] == "exit 0"
    assert rows["todo_write"]["state"] == "ok"
    with served.client() as client:
        older = client.get(
            f"/api/sessions/{session}/history", params={"before": 5, "limit": 2}
        ).json()
    assert [e["seq"] for e in older["events"]] == [3, 4] and older["snapshot"] is None
    assert older["before"] == 3


def test_a_plan_written_far_back_shows_on_a_short_tail_page(
    served: Served, harness_home: Path
) -> None:
    """5,000 events after the plan, a 50-event tail page still carries it."""
    host = PluginHost()
    from harness_core import builtins

    builtins.add_to(host)
    host.load_entry_points()
    store = SessionStore(harness_home, host.event_types)
    with store.create() as log:
        log.append("turn/start", {}, turn=1)
        log.append("todo/write", {"todos": [{"content": "Far back", "status": "pending"}]}, turn=1)
        for n in range(5000):
            log.append("message/user", {"text": f"note {n}"}, turn=1)
        log.append("turn/end", {"status": "completed"}, turn=1)
        session = log.session_id
    with served.client() as client:
        page = client.get(f"/api/sessions/{session}/history", params={"limit": 50}).json()
    assert len(page["events"]) == 50 and page["before"] is not None
    assert page["snapshot"]["todos"] == [{"content": "Far back", "status": "pending"}]


def test_prompts_sent_while_a_turn_runs_queue_in_order_and_cancel_stops_one(
    tmp_path: Path, harness_home: Path
) -> None:
    """A second and third prompt queue (positions 1, 2); cancel ends the running turn."""
    model = write_script(
        tmp_path / "slow.json",
        [{"tool_calls": [bash_call("sleep 30")]}, {"text": "second"}, {"text": "third"}],
    )
    with serve(harness_home, "--model", model) as server, server.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        assert client.post(f"/api/sessions/{session}/turns", json={"prompt": "one"}).json() == {
            "turn": 1
        }
        queued = [
            client.post(f"/api/sessions/{session}/turns", json={"prompt": p}).json()
            for p in ("two", "three")
        ]
        assert queued == [{"queued": 1}, {"queued": 2}]
        snapshot = client.get(f"/api/sessions/{session}/history").json()["snapshot"]
        assert snapshot["running"] and snapshot["queued"] == ["two", "three"]
        assert client.post(f"/api/sessions/{session}/cancel").json() == {"cancelled": True}
        page = server.wait_idle(session)
    ends = [e["data"]["status"] for e in page["events"] if e["type"] == "turn/end"]
    prompts = [e["data"]["text"] for e in page["events"] if e["type"] == "message/user"]
    assert ends == ["cancelled", "completed", "completed"]
    assert prompts == ["one", "two", "three"]


def test_sse_resumes_after_last_event_id_without_duplicates(served: Served) -> None:
    """A reconnect with Last-Event-ID: S gets every envelope after S once, then live ones."""
    with served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        client.post(f"/api/sessions/{session}/turns", json={"prompt": "Look around"})
    page = served.wait_idle(session)
    last = page["events"][-1]["seq"]
    with (
        httpx.Client(base_url=served.url, timeout=20) as client,
        client.stream(
            "GET",
            f"/api/sessions/{session}/events",
            headers={"Authorization": f"Bearer {served.token}", "Last-Event-ID": "5"},
        ) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        received = sse_events(response, until=last)
    envelopes = [r for r in received if r["event"] == "message"]
    assert [e["data"]["seq"] for e in envelopes] == list(range(6, last + 1))
    assert all(e["id"] == str(e["data"]["seq"]) for e in envelopes)


def test_a_session_another_process_writes_is_409_naming_the_holder(served: Served) -> None:
    """A turn on a session whose writer lock another process holds: 409, holder named."""
    with served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        path = served.home / "sessions" / f"{session}.jsonl"
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            answer = client.post(f"/api/sessions/{session}/turns", json={"prompt": "hi"})
        finally:
            os.close(fd)
    assert answer.status_code == 409
    assert f"process {os.getpid()}" in answer.json()["error"]


def test_a_wildcard_bind_warns_and_still_needs_the_token(harness_home: Path) -> None:
    """--host 0.0.0.0: one warning line on stderr; the API still answers 401 without the token."""
    with serve(harness_home, "--host", "0.0.0.0") as served:
        port = served.url.rsplit(":", 1)[1].rstrip("/")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            assert client.get("/api/sessions").status_code == 401
            authorized = {"Authorization": f"Bearer {served.token}"}
            assert client.get("/api/sessions", headers=authorized).status_code == 200
    assert "harness: warning: serving on 0.0.0.0" in served.stderr


def test_a_web_turn_compacts_past_the_configured_share_of_the_window(
    harness_home: Path, openai_server: OpenAIServer
) -> None:
    """The web host's turns use the settings' context_window and compact like the CLI's."""
    openai_server.expect(
        reply(tool_calls=[tool_call("bash", {"command": "echo 1"})]),
        reply(tool_calls=[tool_call("bash", {"command": "echo 2"})], usage=(900, 1)),
        reply("Echoed twice."),
        reply("Done."),
    )
    env = {
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": openai_server.base_url,
        "HARNESS_CONTEXT_WINDOW": "1000",
    }
    with (
        serve(harness_home, "--model", "openai:test-model", env=env) as server,
        server.client() as client,
    ):
        session = client.post("/api/sessions", json={}).json()["id"]
        client.post(f"/api/sessions/{session}/turns", json={"prompt": "Echo."})
        page = server.wait_idle(session)
    (compaction,) = [e for e in page["events"] if e["type"] == "context/compact"]
    assert compaction["data"]["summary"] == "Echoed twice."
    assert openai_server.requests[3].messages[1]["content"].endswith("Echoed twice.")
