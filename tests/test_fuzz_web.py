"""Fuzzing the web API: bodies, headers, paths and query strings against a real `harness serve`.

For every case: never a 500, every answer 2xx or 4xx, a 4xx is a JSON `{"error": one line}`, a
rejected turn appends nothing to the session, and the server keeps answering. At the end its
stderr holds no traceback. CI runs a bounded number of cases (`HARNESS_FUZZ_EXAMPLES`);
`scripts/fuzz` runs many more.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any, Final
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli_support import write_script
from web_support import Served, serve

pytestmark = pytest.mark.slow  # real processes for seconds each: run first

EXAMPLES: Final = int(os.environ.get("HARNESS_FUZZ_EXAMPLES", "100"))
FUZZ_SETTINGS: Final = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

JSON: Final = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELDS: Final = st.sampled_from(["prompt", "model", "call_id", "answer"])
BODIES: Final = st.one_of(
    st.binary(max_size=200),
    JSON.map(lambda value: json.dumps(value).encode()),
    st.dictionaries(
        FIELDS, JSON | st.sampled_from(["demo", "once", "\ud800", "scripted:/dev/zero"])
    ).map(lambda value: json.dumps(value).encode()),
    st.integers(1, 5000).map(lambda depth: b"[" * depth + b"]" * depth),
)
SEGMENT: Final = st.binary(max_size=12).map(lambda raw: quote(raw, safe=""))  # any bytes
# printable ASCII; h11 (both ends) refuses a value with whitespace around it before it is sent
HEADER: Final = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30).map(
    str.strip
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module: a script of many one-line answers, so accepted turns end."""
    home = tmp_path_factory.mktemp("fuzz-web") / "home"
    steps = [{"text": "ok"}] * (4 * EXAMPLES + 10)
    model = write_script(home.parent / "script.json", steps)
    with serve(home, "--model", model, "--approval", "deny") as server:
        yield server
    assert "Traceback" not in server.stderr, server.stderr[-2000:]
    assert all(line.startswith("harness: ") for line in server.stderr.splitlines())


@pytest.fixture(scope="module")
def session(served: Served) -> str:
    with served.client() as client:
        created: str = client.post("/api/sessions", json={}).json()["id"]
        return created


def check(answer: httpx.Response) -> None:
    """2xx, or 4xx with a one-line JSON error."""
    assert answer.status_code < 500 and answer.status_code >= 200, answer.text[:300]
    if answer.status_code >= 400:
        error = answer.json()["error"]
        assert isinstance(error, str) and "\n" not in error


def events(served: Served, session: str) -> list[dict[str, Any]]:
    page: list[dict[str, Any]] = served.wait_idle(session)["events"]
    return page


@FUZZ_SETTINGS
@given(endpoint=st.sampled_from(["turns", "approvals", "cancel", "new"]), body=BODIES)
def test_fuzzed_bodies_never_500_and_a_rejected_one_appends_nothing(
    served: Served, session: str, endpoint: str, body: bytes
) -> None:
    path = "/api/sessions" if endpoint == "new" else f"/api/sessions/{session}/{endpoint}"
    # An earlier case may have started a turn (the paced demo takes seconds): it runs to its
    # end first, so what a rejected request appends is all that can differ.
    served.wait_idle(session, timeout=60)
    before = events(served, session)
    with served.client() as client:
        answer = client.post(path, content=body, headers={"content-type": "application/json"})
    check(answer)
    if answer.status_code >= 400:
        assert events(served, session) == before


@FUZZ_SETTINGS
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE"]),
    segments=st.lists(SEGMENT, max_size=4),
    tail=st.sampled_from(["", "history", "events", "turns", "cancel", "approvals"]),
    query=st.dictionaries(
        st.sampled_from(["limit", "before", "after", "token"]), HEADER, max_size=3
    ),
    headers=st.dictionaries(
        st.sampled_from(["last-event-id", "authorization", "origin", "content-type", "cookie"]),
        HEADER,
        max_size=3,
    ),
)
def test_fuzzed_paths_headers_and_queries_never_500(
    served: Served,
    method: str,
    segments: list[str],
    tail: str,
    query: dict[str, str],
    headers: dict[str, str],
) -> None:
    path = "/".join(["/api/sessions", *segments, tail]).rstrip("/")
    auth = {"authorization": f"Bearer {served.token}"}
    with httpx.Client(base_url=served.url, timeout=20) as client:
        request = client.build_request(method, path, params=query, headers={**auth, **headers})
        answer = client.send(request, stream=True)  # an event stream is checked, not read
        try:
            if answer.headers.get("content-type", "").startswith("text/event-stream"):
                assert answer.status_code == 200
            else:
                answer.read()
                check(answer)
        finally:
            answer.close()
        assert client.get("/api/config", headers=auth).status_code == 200  # still answers
