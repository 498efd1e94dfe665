"""The web host's API over real HTTP: `harness serve` in a subprocess, httpx as the client.

Security (token, Host, Origin), the session list, turns and their queue, cancel, the tail page
with its host-computed `todos`, older pages, SSE with resume, 409 and 422, and approval
questions (answered, refused, granted for the session across a restart, cancelled, a
subagent's, the demo's none).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from harness_core.log import INTERRUPTED_TEXT, SessionStore
from harness_core.plugins import PluginHost
from harness_core.testing.openai_server import OpenAIServer, reply, tool_call
from test_cli_support import bash_call, run_cli, session_ids, todo_call, write_script
from web_support import (
    ONCE_DENY_SESSION,
    SUBAGENT_ASKS,
    Served,
    asking,
    decisions,
    serve,
    sse_events,
)

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


def test_every_api_request_needs_the_token_and_the_page_sets_no_cookie(served: Served) -> None:
    """401 without the bearer token; /?token= serves the page and sets no cookie."""
    with served.client(token=False) as client:
        assert client.get("/api/sessions").status_code == 401
        assert (
            client.get("/api/sessions", headers={"Authorization": "Bearer nope"}).status_code == 401
        )
        assert client.get("/?token=nope").status_code == 401
        entry = client.get(f"/?token={served.token}", follow_redirects=False)
        assert entry.status_code == 200 and "set-cookie" not in entry.headers
        assert entry.headers["cache-control"] == "no-store"
        assert "script-src 'self'" in entry.headers["content-security-policy"]
        assert client.get("/api/sessions").status_code == 401
        bearer = {"Authorization": f"Bearer {served.token}"}
        assert client.get("/api/sessions", headers=bearer).json() == {"sessions": []}


def test_token_cookie_not_accepted_from_another_port(served: Served) -> None:
    """Cookies are not separated by port: whatever cookie a browser holds for 127.0.0.1 it
    also sends to every other loopback service, which can replay it. So no cookie, not even
    one holding the token itself (what the page used to set), authorizes anything."""
    cookies = f"harness_token={served.token}; harness_session={served.token}"
    with served.client(token=False) as client:
        for method, path in (("GET", "/api/sessions"), ("POST", "/api/sessions")):
            answer = client.request(method, path, headers={"Cookie": cookies}, json={})
            assert answer.status_code == 401, (method, path)
    assert list((served.home / "sessions").glob("*.jsonl")) == []


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


def test_a_client_cannot_choose_a_scripted_model_file(tmp_path: Path, harness_home: Path) -> None:
    """`scripted:PATH` names a file the server reads: a client naming one other than the
    server's own gets 422 at once, on a new session or a turn (nothing appended), whatever the
    approval policy; /dev/zero used to be read without end on the event loop, a FIFO for good."""
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    model = write_script(tmp_path / "own.json", [{"text": "Mine."}])
    with (
        serve(harness_home, "--model", model, "--approval", "deny") as served,
        served.client(timeout=5) as client,
    ):
        session = client.post("/api/sessions", json={"model": model}).json()["id"]
        for spec in ("scripted:/dev/zero", f"scripted:{fifo}", "scripted:/etc/hostname"):
            created = client.post("/api/sessions", json={"model": spec})
            assert created.status_code == 422, spec
            assert created.json()["error"].startswith("a client may not choose a scripted: model")
            turn = client.post(
                f"/api/sessions/{session}/turns", json={"prompt": "hi", "model": spec}
            )
            assert turn.status_code == 422, spec
        assert len(client.get("/api/sessions").json()["sessions"]) == 1
        assert len(client.get(f"/api/sessions/{session}/history").json()["events"]) == 1
        assert (
            client.post(f"/api/sessions/{session}/turns", json={"prompt": "hi"}).status_code == 202
        )
        assert served.wait_idle(session)["events"][-2]["data"]["text"] == "Mine."


def test_the_servers_own_script_must_be_a_regular_file(tmp_path: Path, harness_home: Path) -> None:
    """--model scripted:FIFO: the turn is 422 with one line and the server keeps answering."""
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with serve(harness_home, "--model", f"scripted:{fifo}") as served, served.client() as client:
        refused = client.post("/api/sessions", json={})
        assert refused.status_code == 422
        assert refused.json()["error"] == f"script {fifo} is not a regular file"
        assert client.get("/api/sessions").status_code == 200


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


def damage_past_the_lock(home: Path, session: str) -> list[Path]:
    """Make the session's writer fail after it took the lock: a torn last line whose every
    place aside is taken (the writer moves a torn tail aside before it writes). The files
    that block it are returned, to be removed."""
    path = home / "sessions" / f"{session}.jsonl"
    with path.open("ab") as handle:
        handle.write(b'{"seq": 1, "type": "message/us')
    offset = path.stat().st_size - len(b'{"seq": 1, "type": "message/us')
    blocking = [path.with_name(f"{path.name}.torn-{offset}")]
    blocking += [path.with_name(f"{path.name}.torn-{offset}-{n}") for n in range(1, 1000)]
    for aside in blocking:
        aside.touch()
    return blocking


def test_a_turn_whose_writer_fails_after_the_answer_shows_as_its_error(served: Served) -> None:
    """The POST is answered once the writer lock is held; the writer then fails (the log is
    damaged past where the lock was taken): the tail page's snapshot carries the turn's
    one-line error and prompt, nothing runs or waits, and once the cause is gone the same
    prompt runs."""
    with served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        blocking = damage_past_the_lock(served.home, session)
        answer = client.post(f"/api/sessions/{session}/turns", json={"prompt": "hi"})
        assert (answer.status_code, answer.json()) == (202, {"turn": 1})
        snapshot = served.wait_idle(session)["snapshot"]
        assert snapshot["failed"]["prompt"] == "hi"
        assert "too many torn-tail files beside" in snapshot["failed"]["error"]
        assert snapshot["queued"] == [] and not snapshot["running"]
        for aside in blocking:
            aside.unlink()
        again = client.post(f"/api/sessions/{session}/turns", json={"prompt": "hi"})
        assert again.json() == {"turn": 1}
        page = served.wait_idle(session)
    assert page["snapshot"]["failed"] is None
    assert [e["type"] for e in page["events"]][-2:] == ["message/assistant", "turn/end"]


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


ASKED = [
    {"tool_calls": [bash_call("echo once")]},
    {"tool_calls": [bash_call("echo refused")]},
    {"tool_calls": [bash_call("echo session")]},
    {"tool_calls": [bash_call("echo granted")]},
    {"text": "Done."},
]
DENIED = "Error: bash was denied: the user refused it"


def test_under_ask_each_call_waits_for_an_answer_that_lands_on_the_log(
    tmp_path: Path, harness_home: Path
) -> None:
    """--approval ask: the snapshot and `event: approval` carry the question; once, deny and
    session answers run, refuse (the model reads why) and grant; bad answers get 422/404/409."""
    with asking(harness_home, tmp_path / "asked.json", ASKED) as (served, client, session):
        with client.stream("GET", f"/api/sessions/{session}/events") as stream:
            client.post(f"/api/sessions/{session}/turns", json={"prompt": "go"})
            announced = next_named(stream, "approval")
        question = served.wait_question(session)
        assert question == announced
        assert (question["tool"], question["summary"]) == ("bash", "$ echo once")
        assert question["session_id"] == session
        approvals = f"/api/sessions/{session}/approvals"
        malformed = client.post(approvals, json={"call_id": question["call_id"], "answer": "yes"})
        assert malformed.status_code == 422
        assert client.post(approvals, json={"call_id": "nope", "answer": "once"}).status_code == 404
        for answer in ("once", "deny", "session"):
            question = served.wait_question(session)
            reply = client.post(approvals, json={"call_id": question["call_id"], "answer": answer})
            assert reply.status_code == 200
            again = client.post(approvals, json={"call_id": question["call_id"], "answer": "once"})
            assert again.status_code == 409
        page = served.wait_idle(session)
    assert decisions(page) == ONCE_DENY_SESSION  # the fourth call ran on the grant
    results = [e["data"]["text"] for e in page["events"] if e["type"] == "tool/result"]
    assert results[0].startswith("once") and results[1] == DENIED
    assert page["snapshot"]["approvals"] == []
    notes = sorted(str(row["approval"]) for row in page["rows"].values())
    assert notes == [
        "None",
        "allowed by the user",
        "allowed by the user for this session",
        "allowed by the user for this session",
    ]


def test_allow_for_the_session_survives_a_server_restart(
    tmp_path: Path, harness_home: Path
) -> None:
    """A session grant answered on the page lets the next server run bash without asking."""
    first = write_script(
        tmp_path / "one.json", [{"tool_calls": [bash_call("true")]}, {"text": "1"}]
    )
    with serve(harness_home, "--model", first, "--approval", "ask") as served:
        with served.client() as client:
            session = client.post("/api/sessions", json={}).json()["id"]
            client.post(f"/api/sessions/{session}/turns", json={"prompt": "one"})
            question = served.wait_question(session)
            body = {"call_id": question["call_id"], "answer": "session"}
            client.post(f"/api/sessions/{session}/approvals", json=body)
        served.wait_idle(session)
    second = write_script(
        tmp_path / "two.json", [{"tool_calls": [bash_call("true")]}, {"text": "2"}]
    )
    with serve(harness_home, "--model", second, "--approval", "ask") as served:
        with served.client() as client:
            client.post(f"/api/sessions/{session}/turns", json={"prompt": "two"})
        page = served.wait_idle(session)
    last = [e["data"] for e in page["events"] if e["type"] == "tool/approval"][-1]
    assert (last["decision"], last["by"], last["scope"]) == ("allow", "user", "session")
    assert [e["data"]["status"] for e in page["events"] if e["type"] == "turn/end"] == [
        "completed",
        "completed",
    ]


def test_cancel_while_a_question_is_open_interrupts_the_call_and_closes_it(
    tmp_path: Path, harness_home: Path
) -> None:
    """Cancel at an open question: no decision on the log, the call answered "interrupted",
    the turn cancelled, the question gone from the snapshot."""
    with asking(
        harness_home, tmp_path / "cancel.json", [{"tool_calls": [bash_call("echo no")]}]
    ) as (served, client, session):
        client.post(f"/api/sessions/{session}/turns", json={"prompt": "go"})
        question = served.wait_question(session)
        assert client.post(f"/api/sessions/{session}/cancel").json() == {"cancelled": True}
        page = served.wait_idle(session)
        late = {"call_id": question["call_id"], "answer": "once"}
        assert client.post(f"/api/sessions/{session}/approvals", json=late).status_code == 409
    types = [e["type"] for e in page["events"]]
    assert "tool/approval" not in types
    (result,) = [e["data"] for e in page["events"] if e["type"] == "tool/result"]
    assert result["is_error"] and result["text"] == INTERRUPTED_TEXT
    assert page["events"][-1]["data"]["status"] == "cancelled"
    assert page["snapshot"]["approvals"] == []


def test_a_subagents_question_reaches_the_parent_session(
    tmp_path: Path, harness_home: Path
) -> None:
    """The subagent's bash asks on the page of the session that started it, naming its own
    session; answered there, both turns finish."""
    with asking(harness_home, tmp_path / "sub.json", SUBAGENT_ASKS) as (served, client, session):
        client.post(f"/api/sessions/{session}/turns", json={"prompt": "Delegate."})
        for tool in ("subagent", "bash"):
            question = served.wait_question(session)
            assert question["tool"] == tool
            assert (question["session_id"] == session) == (tool == "subagent")
            if tool == "bash":  # named in the subagent's session, never as a parent's call
                assert question["call_id"].startswith(f"{question['session_id']}/")
            body = {"call_id": question["call_id"], "answer": "once"}
            assert client.post(f"/api/sessions/{session}/approvals", json=body).status_code == 200
        page = served.wait_idle(session)
    assert page["events"][-2]["data"]["text"] == "Parent done."


def test_the_embedded_demo_runs_hands_free_under_ask(harness_home: Path) -> None:
    """--approval ask: the demo's fixed commands still run without a question."""
    with serve(harness_home, "--approval", "ask") as served, served.client() as client:
        prompt = client.get("/api/config").json()["demo"]
        session = client.post("/api/sessions", json={"model": "demo"}).json()["id"]
        client.post(f"/api/sessions/{session}/turns", json={"prompt": prompt})
        page = served.wait_idle(session, timeout=60)
    bys = {e["data"]["by"] for e in page["events"] if e["type"] == "tool/approval"}
    assert bys == {"policy"}
    assert page["events"][-1]["data"]["status"] == "completed"


def next_named(response: httpx.Response, name: str) -> dict[str, Any]:
    """The data of the next SSE event called `name` on a streaming response."""
    event = None
    for line in response.iter_lines():
        if line.startswith("event:"):
            event = line.partition(":")[2].strip()
        elif line.startswith("data:") and event == name:
            data: dict[str, Any] = json.loads(line.partition(":")[2])
            return data
        elif not line:
            event = None
    raise AssertionError(f"the stream ended before an {name} event")


def test_a_lone_surrogate_in_a_prompt_is_422_and_nothing_is_appended(served: Served) -> None:
    """`"\\ud800 hi"` is valid JSON but not text the UTF-8 log can hold: 422 naming it, and
    the session is as it was (it used to get a turn/start with no message and no turn/end)."""
    with served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        before = client.get(f"/api/sessions/{session}/history").json()["events"]
        for field in ("prompt", "model"):
            body = json.dumps({"prompt": "hi", field: "\ud800 hi"})  # escaped: valid JSON
            answer = client.post(f"/api/sessions/{session}/turns", content=body)
            assert answer.status_code == 422
            assert (
                answer.json()["error"] == "the body is not valid Unicode (a lone surrogate U+D800)"
            )
        page = client.get(f"/api/sessions/{session}/history").json()
    assert page["events"] == before and not page["snapshot"]["running"]


def test_a_deeply_nested_body_is_422_without_a_traceback(served: Served) -> None:
    """100,000 levels of `[`: one line, 422, and nothing on stderr (it was a 500 with one)."""
    with served.client() as client:
        for body in ("[" * 100_000, '{"prompt": ' + "[" * 100_000 + "]" * 100_000 + "}"):
            answer = client.post("/api/sessions", content=body)
            assert answer.status_code == 422
            assert answer.json()["error"] == "the body is not valid JSON (nested too deeply)"
        assert client.get("/api/sessions").json() == {"sessions": []}
    served.process.send_signal(signal.SIGINT)
    assert "Traceback" not in served.process.communicate(timeout=10)[1]


def test_a_last_event_id_past_the_newest_seq_still_gets_later_events(served: Served) -> None:
    """A client ahead of the log (Last-Event-ID 10,000 on a one-event session) goes on from
    the newest seq: the first snapshot says where the log ends, and the next turn's events
    arrive (they were all dropped as already sent)."""
    with served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        headers = {"Last-Event-ID": "10000"}
        with client.stream("GET", f"/api/sessions/{session}/events", headers=headers) as stream:
            lines = stream.iter_lines()
            while next(lines) != "event: snapshot":
                pass
            assert json.loads(next(lines).removeprefix("data: "))["seq"] == 0
            client.post(f"/api/sessions/{session}/turns", json={"prompt": "Look around"})
            while not next(lines).startswith("id: "):  # envelopes have ids, nothing else does
                pass
            envelope = json.loads(next(lines).removeprefix("data: "))
    assert (envelope["seq"], envelope["type"]) == (1, "turn/start")


def test_serve_on_the_ipv6_loopback(harness_home: Path) -> None:
    """--host ::1 listens there and prints the URL with the address in brackets; the Host
    allow-list reads `[::1]:PORT`, and another name is still 403. A machine without IPv6
    gets one line saying so instead. (No bash runs: the sandbox is off, on every machine.)"""
    if not ipv6_loopback():
        refused = run_cli("serve", "--host", "::1", "--port", "0", "--sandbox", "off", input="")
        assert refused.returncode == 1, refused.stderr
        assert refused.stderr.startswith("harness: error: cannot listen on ::1")
        assert len(refused.stderr.splitlines()) == 1
        return
    with (
        serve(harness_home, "--host", "::1", "--sandbox", "off") as served,
        served.client() as client,
    ):
        assert served.url.startswith("http://[::1]:")
        assert client.get("/api/sessions").json() == {"sessions": []}
        post = client.post("/api/sessions", json={"model": "demo"})
        assert post.status_code == 201
        assert client.get("/api/sessions", headers={"Host": "::1"}).status_code == 403
    assert "warning" not in served.stderr


def ipv6_loopback() -> bool:
    """Whether this machine can listen on ::1 (IPv6 may be off, in the kernel or on lo)."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def test_with_no_model_a_session_is_created_and_its_turn_says_how_to_choose_one(
    harness_home: Path,
) -> None:
    """No --model, no HARNESS_MODEL, no config: POST /api/sessions is still 201; a turn is 422
    whose one line names --model and the demo, and nothing is appended."""
    with serve(harness_home, env={"HARNESS_MODEL": None}) as served, served.client() as client:
        created = client.post("/api/sessions", json={})
        assert created.status_code == 201
        session = created.json()["id"]
        turn = client.post(f"/api/sessions/{session}/turns", json={"prompt": "hi"})
        assert turn.status_code == 422
        error = turn.json()["error"]
        assert "\n" not in error and "--model" in error and "demo" in error
        page = client.get(f"/api/sessions/{session}/history").json()
        assert [e["type"] for e in page["events"] if e["type"] != "session/start"] == []


def test_a_queued_prompt_can_be_removed_before_it_starts(
    tmp_path: Path, harness_home: Path
) -> None:
    """DELETE .../queue drops a waiting prompt by its position and text, so it never runs;
    a position that no longer holds that prompt is a 409 and drops nothing."""
    model = write_script(
        tmp_path / "slow.json",
        [{"tool_calls": [bash_call("sleep 2")]}, {"text": "first"}, {"text": "third"}],
    )
    with serve(harness_home, "--model", model) as server, server.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        turns = f"/api/sessions/{session}/turns"
        client.post(turns, json={"prompt": "one"})
        for prompt in ("two", "three"):
            client.post(turns, json={"prompt": prompt})
        queue = f"/api/sessions/{session}/queue"
        stale = client.request("DELETE", queue, json={"position": 2, "prompt": "two"})
        assert stale.status_code == 409 and "no longer queued" in stale.json()["error"]
        bad = client.request("DELETE", queue, json={"position": "1"})
        assert bad.status_code == 422
        removed = client.request("DELETE", queue, json={"position": 1, "prompt": "two"})
        assert removed.json() == {"removed": "two"}
        snapshot = client.get(f"/api/sessions/{session}/history").json()["snapshot"]
        assert snapshot["queued"] == ["three"]
        page = server.wait_idle(session)
    prompts = [e["data"]["text"] for e in page["events"] if e["type"] == "message/user"]
    assert prompts == ["one", "three"]


def test_a_session_is_deleted_only_when_no_turn_runs_on_it(
    tmp_path: Path, harness_home: Path
) -> None:
    """DELETE /api/sessions/ID removes an idle session for good (404 after); while a turn runs
    it is a 409 and the session stays."""
    model = write_script(
        tmp_path / "slow.json", [{"tool_calls": [bash_call("sleep 2")]}, {"text": "ok"}]
    )
    with serve(harness_home, "--model", model) as server, server.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        client.post(f"/api/sessions/{session}/turns", json={"prompt": "go"})
        busy = client.delete(f"/api/sessions/{session}")
        assert busy.status_code == 409 and "cancel it first" in busy.json()["error"]
        server.wait_idle(session)  # its writer may still be closing: the delete waits for it
        assert client.delete(f"/api/sessions/{session}").json() == {"deleted": session}
        assert client.get(f"/api/sessions/{session}/history").status_code == 404
        assert session not in [s["id"] for s in client.get("/api/sessions").json()["sessions"]]
    assert session_ids(harness_home) == []


def test_a_session_is_renamed_with_a_title_of_its_own(served: Served) -> None:
    """PATCH /api/sessions/ID {"title"} names the session in the list (also while a turn
    runs: the title is not an event, the log is unchanged); a bad title is a 422 in one
    line, an unknown id 404; the token and the page's own Origin are needed as for a POST."""
    with served.client() as client:
        session = client.post("/api/sessions", json={}).json()["id"]
        client.post(f"/api/sessions/{session}/turns", json={"prompt": "plan the work"})
        served.wait_idle(session)
        events = (served.home / "sessions" / f"{session}.jsonl").read_bytes()
        renamed = client.patch(f"/api/sessions/{session}", json={"title": "  Release notes "})
        assert renamed.status_code == 200
        assert renamed.json() == {"id": session, "title": "Release notes"}
        listed = client.get("/api/sessions").json()["sessions"]
        assert [(s["id"], s["title"]) for s in listed] == [(session, "Release notes")]
        assert (served.home / "sessions" / f"{session}.jsonl").read_bytes() == events
        for body, reason in (
            ({"title": ""}, "must not be empty"),
            ({"title": " \t "}, "must not be empty"),
            ({"title": "x" * 201}, "at most 200 characters"),
            ({"title": "two\nlines"}, "control characters (U+000A)"),
            ({"title": "bell\x07"}, "control characters (U+0007)"),
            ({"title": 3}, '{"title": str}'),
            ({}, '{"title": str}'),
        ):
            refused = client.patch(f"/api/sessions/{session}", json=body)
            assert refused.status_code == 422 and reason in refused.json()["error"], body
            assert "\n" not in refused.json()["error"]
        unknown = client.patch("/api/sessions/20200101-000000-abcdef", json={"title": "x"})
        assert unknown.status_code == 404
        assert client.patch("/api/sessions/..%2Fx", json={"title": "x"}).status_code == 404
        foreign = {"Origin": "http://evil.example"}
        cross = client.patch(f"/api/sessions/{session}", json={"title": "x"}, headers=foreign)
        assert cross.status_code == 403
    with served.client(token=False) as client:
        assert client.patch(f"/api/sessions/{session}", json={"title": "x"}).status_code == 401
    with served.client() as client:
        listed = client.get("/api/sessions").json()["sessions"]
        assert [s["title"] for s in listed] == ["Release notes"]
