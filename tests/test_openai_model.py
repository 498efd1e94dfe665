"""The OpenAI-compatible model on the real `openai.AsyncOpenAI` client, against a real
scripted SSE server on loopback (the `openai_server` fixture): no key, no network."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import openai
import pytest
from harness_core import builtins
from harness_core.log import Event, SessionLog, SessionStore
from harness_core.loop import Agent
from harness_core.models import ModelError
from harness_core.models._presets import build_model
from harness_core.models.openai_compat import OpenAICompatModel, RetryPolicy
from harness_core.plugins import PluginHost
from harness_core.testing.openai_server import (
    OpenAIServer,
    Reply,
    error_reply,
    garbled,
    reply,
    tool_call,
)

FAST: RetryPolicy = RetryPolicy(attempts=3, initial_delay=0.005, max_delay=0.02)
USER: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
Deltas = list[tuple[Literal["text", "reasoning"], str]]


@asynccontextmanager
async def connect(
    server: OpenAIServer, provider: str = "openai", **options: Any
) -> AsyncIterator[OpenAICompatModel]:
    options.setdefault("retry", FAST)
    model = OpenAICompatModel(
        "test-model", api_key="sk-test", base_url=server.base_url, provider=provider, **options
    )
    async with model:
        yield model


def recorder() -> tuple[Deltas, Callable[[Literal["text", "reasoning"], str], None]]:
    deltas: Deltas = []
    return deltas, lambda kind, chunk: deltas.append((kind, chunk))


# -- the import stays lazy ----------------------------------------------------------------


def test_importing_models_does_not_import_openai() -> None:
    """`harness_core.models` and the presets load without the openai SDK; building loads it."""
    code = (
        "import sys, harness_core, harness_core.models, harness_core.models._presets\n"
        "import harness_core.builtins\n"
        "assert 'openai' not in sys.modules, 'openai imported too early'\n"
        "from harness_core.models._presets import build_model\n"
        "env = {'OPENAI_API_KEY': 'k'}\n"
        "build_model('openai:m', {'base_url': 'http://127.0.0.1:9/v1'}, env)\n"
        "assert 'openai' in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert done.returncode == 0, done.stderr


# -- streaming and assembly ---------------------------------------------------------------


async def test_tool_call_arguments_split_across_many_deltas(openai_server: OpenAIServer) -> None:
    """Argument fragments of one call, one character per delta, join into the exact string."""
    arguments = json.dumps({"todos": [{"content": "Read the code ✓", "status": "pending"}]})
    call = tool_call("todo_write", arguments, id="call_abc")
    openai_server.expect(reply(tool_calls=[call], pieces=len(arguments)))
    schema = {"type": "function", "function": {"name": "todo_write", "strict": True}}
    async with connect(openai_server) as model:
        response = await model.respond(USER, [schema])
    assert response.tool_calls[0].id == "call_abc"
    assert response.tool_calls[0].name == "todo_write"
    assert response.tool_calls[0].arguments == arguments
    assert response.text is None
    sent = openai_server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body["model"] == "test-model"
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["tools"] == [schema]


async def test_parallel_tool_calls_are_assembled_by_index(openai_server: OpenAIServer) -> None:
    """Three calls whose argument deltas interleave come back whole, in index order."""
    calls = [tool_call(f"tool_{n}", {"n": n, "pad": "x" * 10 * n}) for n in range(3)]
    openai_server.expect(reply(tool_calls=calls, pieces=6, interleave=True))
    async with connect(openai_server) as model:
        response = await model.respond(USER, [])
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        (c.id, c.name, c.arguments) for c in calls
    ]
    assert "tools" not in openai_server.requests[0].body  # an empty list is a 400 at OpenAI


async def test_text_deltas_reach_the_host_in_order(openai_server: OpenAIServer) -> None:
    """Every text delta goes to `on_delta` as it arrives; the response holds the whole text."""
    text = "The quick brown fox jumps over the lazy dog."
    openai_server.expect(reply(text, pieces=9))
    deltas, sink = recorder()
    async with connect(openai_server) as model:
        response = await model.respond(USER, [], sink)
    assert response.text == text
    assert len(deltas) == 9
    assert all(kind == "text" for kind, _ in deltas)
    assert "".join(chunk for _, chunk in deltas) == text


async def test_usage_comes_from_the_final_chunk(openai_server: OpenAIServer) -> None:
    """The choice-less usage chunk becomes the response's token counts; none sent, none kept."""
    openai_server.expect(reply("a", usage=(1200, 34)), reply("b", usage=None))
    async with connect(openai_server) as model:
        first = await model.respond(USER, [])
        second = await model.respond(USER, [])
    assert first.usage == {"prompt_tokens": 1200, "completion_tokens": 34, "total_tokens": 1234}
    assert second.usage is None
    assert first.model == "test-model"


async def test_reasoning_streams_separately_and_is_stored(openai_server: OpenAIServer) -> None:
    """DeepSeek's reasoning_content deltas go to the host as "reasoning", apart from text."""
    openai_server.expect(reply("42.", reasoning="Six times seven.", pieces=4))
    deltas, sink = recorder()
    async with connect(openai_server, "deepseek") as model:
        response = await model.respond(USER, [], sink)
    assert response.reasoning_content == "Six times seven."
    assert response.text == "42."
    kinds = [kind for kind, _ in deltas]
    assert kinds == sorted(kinds, key=["reasoning", "text"].index)  # all thinking, then text
    assert "".join(c for k, c in deltas if k == "reasoning") == "Six times seven."


# -- outgoing messages per provider --------------------------------------------------------

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "plan"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
        ],
        "reasoning_content": "I should plan.",
    },
    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "t", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c2", "content": "ok"},
]


async def test_openai_never_receives_reasoning_content(openai_server: OpenAIServer) -> None:
    """For OpenAI the field is stripped, and call-only messages carry null content."""
    openai_server.expect(reply("done"))
    async with connect(openai_server, "openai") as model:
        await model.respond(HISTORY, [])
    sent = openai_server.requests[0].messages
    assert all("reasoning_content" not in message for message in sent)
    assert [m["content"] for m in sent if m["role"] == "assistant"] == [None, None]
    assert HISTORY[1]["reasoning_content"] == "I should plan."  # the caller's dicts untouched
    assert HISTORY[1]["content"] == ""


async def test_deepseek_gets_reasoning_content_on_every_call(openai_server: OpenAIServer) -> None:
    """DeepSeek gets reasoning back, and "" on a tool-calling message that had none."""
    openai_server.expect(reply("done"))
    async with connect(openai_server, "deepseek") as model:
        await model.respond(HISTORY, [])
    assistants = [m for m in openai_server.requests[0].messages if m["role"] == "assistant"]
    assert [m["reasoning_content"] for m in assistants] == ["I should plan.", ""]
    assert "reasoning_content" not in HISTORY[3]


# -- retries and failures ------------------------------------------------------------------


async def test_rate_limit_then_success(openai_server: OpenAIServer) -> None:
    """A 429 is retried with backoff; the second attempt's answer is returned."""
    openai_server.expect(error_reply(429, "Rate limit reached"), reply("after the wait"))
    async with connect(openai_server) as model:
        response = await model.respond(USER, [])
    assert response.text == "after the wait"
    assert len(openai_server.requests) == 2
    assert openai_server.requests[0].body == openai_server.requests[1].body


async def test_server_errors_past_the_retry_budget(openai_server: OpenAIServer) -> None:
    """Three 500s with a budget of three attempts: a one-line ModelError, three requests."""
    openai_server.expect(*[error_reply(500, "The server had an error\nwhile processing")] * 3)
    async with connect(openai_server) as model:
        with pytest.raises(ModelError) as caught:
            await model.respond(USER, [])
    message = str(caught.value)
    assert len(openai_server.requests) == 3
    assert "openai:test-model returned HTTP 500 after 3 attempts" in message
    assert "The server had an error while processing" in message
    assert "try again later" in message
    assert "\n" not in message


async def test_bad_key_is_not_retried(openai_server: OpenAIServer) -> None:
    """A 401 fails at once and names the env var that holds the key."""
    openai_server.expect(error_reply(401, "Incorrect API key provided"))
    async with connect(openai_server, "deepseek", key_env="DEEPSEEK_API_KEY") as model:
        with pytest.raises(ModelError, match=r"HTTP 401.*Incorrect API key.*DEEPSEEK_API_KEY"):
            await model.respond(USER, [])
    assert len(openai_server.requests) == 1


async def test_bad_key_of_a_preset_names_its_variable(openai_server: OpenAIServer) -> None:
    """A `deepseek:` spec rejected with 401 tells the user to check DEEPSEEK_API_KEY."""
    openai_server.expect(error_reply(401, "Incorrect API key provided"))
    env = {"DEEPSEEK_API_KEY": "sk-wrong"}
    model = build_model("deepseek:test-model", {"base_url": openai_server.base_url}, env)
    assert isinstance(model, OpenAICompatModel)
    async with model:
        with pytest.raises(ModelError, match=r"HTTP 401.*\(check DEEPSEEK_API_KEY\)"):
            await model.respond(USER, [])


async def test_stream_cut_after_output_fails_without_retry(openai_server: OpenAIServer) -> None:
    """A connection closed mid-stream after text reached the host is an error, not a retry."""
    openai_server.expect(reply("Half of this answer is lost", pieces=6, cut_after=4))
    deltas, sink = recorder()
    async with connect(openai_server) as model:
        with pytest.raises(ModelError, match="stream broke after output had started") as caught:
            await model.respond(USER, [], sink)
    assert len(openai_server.requests) == 1
    assert deltas  # the host did see the start
    assert "incomplete chunked read" in str(caught.value)


async def test_stream_cut_before_output_is_retried(openai_server: OpenAIServer) -> None:
    """A cut before anything reached the host is retried; the host sees only the retry."""
    arguments = json.dumps({"command": "ls"})
    openai_server.expect(
        reply(tool_calls=[tool_call("bash", arguments)], pieces=5, cut_after=3),
        reply("clean", pieces=2),
    )
    deltas, sink = recorder()
    async with connect(openai_server) as model:
        response = await model.respond(USER, [], sink)
    assert response.text == "clean"
    assert response.tool_calls == ()  # nothing of the broken attempt leaks into the answer
    assert deltas == [("text", "cle"), ("text", "an")]
    assert len(openai_server.requests) == 2


async def test_stream_that_ends_early_is_incomplete(openai_server: OpenAIServer) -> None:
    """A body that ends cleanly but without a finish reason counts as broken, not as done."""
    complete = reply("never finished")
    truncated = Reply(chunks=complete.chunks[:2])  # role chunk + text, no finish, no usage
    openai_server.expect(*[truncated] * 3)
    async with connect(openai_server) as model:
        with pytest.raises(ModelError, match="ended before the response was complete"):
            await model.respond(USER, [])
    assert len(openai_server.requests) == 3


BROKEN_JSON = b'{"choices": [{"index": 0, "delta": {"content": "unterminated'


async def test_a_garbled_chunk_before_output_is_retried(openai_server: OpenAIServer) -> None:
    """Broken JSON before anything reached the host is retried like a broken stream."""
    openai_server.expect(garbled(reply("lost"), at=0, data=BROKEN_JSON), reply("clean"))
    deltas, sink = recorder()
    async with connect(openai_server) as model:
        response = await model.respond(USER, [], sink)
    assert response.text == "clean" and deltas == [("text", "clean")]
    assert len(openai_server.requests) == 2


async def test_a_garbled_chunk_after_output_says_what_and_where(
    openai_server: OpenAIServer,
) -> None:
    """After output started: not retried, and the error names the malformed chunk."""
    openai_server.expect(garbled(reply("Half of this answer", pieces=4), at=3, data=BROKEN_JSON))
    async with connect(openai_server) as model:
        with pytest.raises(ModelError) as caught:
            await model.respond(USER, [], recorder()[1])
    assert str(caught.value).startswith(
        "openai:test-model stream broke after output had started (a malformed chunk from the "
        "provider (chunk 4: JSONDecodeError: Unterminated string starting at:"
    )
    assert str(caught.value).endswith("run the turn again")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (BROKEN_JSON, "JSONDecodeError: Unterminated string"),
        (
            b'{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "x"}]}}]}',
            "TypeError: a tool call delta has index 'x'",
        ),
        (b'{"choices": 7}', "TypeError"),
    ],
    ids=["broken-json", "wrong-index", "wrong-shape"],
)
async def test_a_provider_garbling_every_attempt_gets_one_line(
    openai_server: OpenAIServer, data: bytes, problem: str
) -> None:
    """Every attempt garbled: what failed, at which chunk, after how many tries, what to do."""
    openai_server.expect(*[garbled(reply("x"), at=1, data=data)] * 3)
    async with connect(openai_server) as model:
        with pytest.raises(ModelError) as caught:
            await model.respond(USER, [])
    message = str(caught.value)
    assert message.startswith(
        f"openai:test-model sent a malformed chunk from the provider (chunk 2: {problem}"
    )
    assert message.endswith(
        "(3 attempts): the provider (or a proxy in between) garbled its stream; "
        "try again later, or check the base URL"
    )
    assert "\n" not in message


async def test_unreachable_server_names_the_url() -> None:
    """Connection refused on every attempt: the error names the provider, URL and attempts."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    model = OpenAICompatModel("m", api_key="k", base_url=base_url, retry=FAST)
    async with model:
        with pytest.raises(ModelError) as caught:
            await model.respond(USER, [])
    message = str(caught.value)
    assert f"cannot reach openai:m at {base_url} (3 attempts)" in message
    assert "check the network and the base URL" in message


async def test_a_stalled_stream_times_out(openai_server: OpenAIServer) -> None:
    """No bytes for longer than the read timeout: retried, then a timeout ModelError."""
    openai_server.expect(*[reply("late", delay=1.0)] * 2)
    policy = RetryPolicy(attempts=2, initial_delay=0.005)
    timeout = openai.Timeout(connect=2.0, read=0.2, write=2.0, pool=2.0)
    async with connect(openai_server, retry=policy, timeout=timeout) as model:
        with pytest.raises(ModelError, match=r"timed out \(2 attempts, no data for 0.2s\)"):
            await model.respond(USER, [])
    assert len(openai_server.requests) == 2


async def test_timeout_and_retries_are_settings(openai_server: OpenAIServer) -> None:
    """The preset takes `model_timeout` and `model_retries` from the hook's options."""
    env = {"OPENAI_API_KEY": "sk-test"}
    options = {"base_url": openai_server.base_url, "timeout": 0.2, "retries": 1}
    model = build_model("openai:test-model", options, env)
    assert isinstance(model, OpenAICompatModel)
    assert model.retry.attempts == 2
    openai_server.expect(*[reply("late", delay=1.0)] * 2)
    async with model:
        with pytest.raises(ModelError, match=r"timed out \(2 attempts, no data for 0.2s\)") as err:
            await model.respond(USER, [])
    assert str(err.value).endswith("raise model_timeout (HARNESS_MODEL_TIMEOUT)")
    defaults = build_model("openai:m", {"timeout": None, "retries": None}, env)
    assert isinstance(defaults, OpenAICompatModel) and defaults.retry.attempts == 4


def test_backoff_grows_exponentially_and_honours_retry_after() -> None:
    """Delays double up to the cap, jitter only shortens them, Retry-After wins when sane."""
    policy = RetryPolicy(initial_delay=1.0, max_delay=5.0, jitter=0.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    jittered = RetryPolicy(initial_delay=1.0, jitter=0.25)
    assert all(0.75 <= jittered.delay(1) <= 1.0 for _ in range(50))
    assert policy.delay(1, retry_after=3.5) == 3.5
    assert policy.delay(1, retry_after=3600) == 1.0  # an hour: use our own backoff


# -- the preset and the server fixture ------------------------------------------------------


async def test_deepseek_preset_builds_a_working_model(openai_server: OpenAIServer) -> None:
    """`deepseek:MODEL` with a key in the env and a base URL option talks to that URL."""
    openai_server.expect(reply("hello"))
    env = {"DEEPSEEK_API_KEY": "sk-ds"}
    model = build_model("deepseek:ds-model", {"base_url": openai_server.base_url}, env)
    assert isinstance(model, OpenAICompatModel)
    assert model.name == "deepseek:ds-model" and model.send_reasoning
    async with model:
        response = await model.respond(USER, [])
    assert response.text == "hello"
    assert openai_server.requests[0].headers["authorization"] == "Bearer sk-ds"
    assert openai_server.requests[0].body["model"] == "ds-model"


async def test_server_is_strict_about_its_script() -> None:
    """A request past the script gets a 400 that says so, and `check` reports both faults."""
    with OpenAIServer() as server:
        async with connect(server) as model:
            with pytest.raises(ModelError, match="no scripted reply for request 1"):
                await model.respond(USER, [])
        server.expect(reply("unused"))
        with pytest.raises(AssertionError, match=r"request\(s\) 1 arrived.*1 scripted reply"):
            server.check()


# -- the real loop with the real SDK --------------------------------------------------------


def open_session(home: Path) -> tuple[PluginHost, SessionStore, SessionLog]:
    host = PluginHost()
    builtins.add_to(host)
    host.load_entry_points()
    assert "todo_write" in host.tools.names(), "harness-tool-todo is not installed"
    store = SessionStore(home, host.event_types)
    return host, store, store.create(system_prompt="You are a test agent.", cwd=str(home))


async def test_full_turn_with_todo_write(openai_server: OpenAIServer, harness_home: Path) -> None:
    """A streamed todo_write call runs through the loop; the next request carries its result."""
    todos = {"todos": [{"content": "Read the code", "status": "in_progress"}]}
    call = tool_call("todo_write", todos, id="call_todo_1")
    openai_server.expect(
        reply(tool_calls=[call], reasoning="A plan first.", pieces=7, usage=(50, 9)),
        reply("Planned.", reasoning="Now answer.", usage=(80, 3)),
    )
    host, store, log = open_session(harness_home)
    seen: list[Event] = []
    async with connect(openai_server, "deepseek") as model:
        agent = Agent(log, model, host.tools, store=store, on_event=lambda _, e: seen.append(e))
        outcome = await agent.run_turn("Plan the work.")
    assert (outcome.status, outcome.text) == ("completed", "Planned.")
    types = [event.type for event in log.events]
    assert types == [
        "session/start",
        "turn/start",
        "message/user",
        "message/assistant",
        "todo/write",
        "tool/result",
        "message/assistant",
        "turn/end",
    ]
    assert [e.type for e in seen] == types[1:]  # the host observed every appended event
    assistant = log.events[3].data
    assert assistant["reasoning_content"] == "A plan first."
    assert assistant["tool_calls"][0]["arguments"] == call.arguments
    assert assistant["usage"] == {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59}
    assert log.events[4].data == todos
    second = openai_server.requests[1].messages
    assert second[-2]["role"] == "assistant"
    assert second[-2]["tool_calls"][0]["id"] == "call_todo_1"
    assert second[-2]["reasoning_content"] == "A plan first."  # sent back to DeepSeek
    assert second[-2]["content"] is None
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": "call_todo_1",
        "content": "Updated todo list: 0 pending, 1 in progress, 0 completed.",
    }
    first_tools = {t["function"]["name"] for t in openai_server.requests[0].body["tools"]}
    assert "todo_write" in first_tools
    log.close()


async def test_model_failure_ends_the_turn_as_error(
    openai_server: OpenAIServer, harness_home: Path
) -> None:
    """Retries exhausted inside a turn: turn/end says error, with the model's one-line message."""
    openai_server.expect(*[error_reply(503, "overloaded")] * 3)
    host, store, log = open_session(harness_home)
    async with connect(openai_server) as model:
        outcome = await Agent(log, model, host.tools, store=store).run_turn("hi")
    assert outcome.status == "error"
    assert outcome.error is not None and "HTTP 503 after 3 attempts" in outcome.error
    assert log.events[-1].type == "turn/end"
    assert log.events[-1].data["status"] == "error"
    assert "overloaded" in log.events[-1].data["error"]
    log.close()


async def test_host_cancel_closes_a_slow_stream(
    openai_server: OpenAIServer, harness_home: Path
) -> None:
    """Cancelling the task mid-stream drops the connection and ends the turn cancelled, long
    before the stream would have ended (it would answer for a minute: the turn would then
    end completed, with an assistant message)."""
    openai_server.expect(reply("word " * 60, pieces=60, delay=1.0))  # a minute in full
    host, store, log = open_session(harness_home)
    first_text = anyio.Event()

    def on_delta(kind: str, chunk: str) -> None:
        first_text.set()

    async with connect(openai_server) as model:
        agent = Agent(log, model, host.tools, store=store, on_delta=on_delta)
        async with anyio.create_task_group() as group:
            group.start_soon(agent.run_turn, "talk slowly")
            with anyio.fail_after(5):
                await first_text.wait()
            group.cancel_scope.cancel()
    assert openai_server.wait_for_disconnect(timeout=2.0)
    assert openai_server.disconnects == [0]
    assert log.events[-1].type == "turn/end"
    assert log.events[-1].data["status"] == "cancelled"
    assert [e.type for e in log.events].count("message/assistant") == 0
    log.close()
