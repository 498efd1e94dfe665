"""The web host's hub in process: idle sessions evicted past the limit with their models
closed, and opening a long session off the event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

from harness_core.loop import Approval
from harness_core.models import ModelBase, ModelResponse
from harness_core.runtime import Runtime
from harness_core.web import Hub, WebRuntime


class Counted(ModelBase):
    """Answers every request with text; remembers every instance and whether it was closed."""

    made: ClassVar[list[Counted]] = []

    def __init__(self) -> None:
        self.name = "counted"
        self.closed = False
        Counted.made.append(self)

    async def respond(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(text="done")

    async def aclose(self) -> None:
        self.closed = True


def hub_for(home: Path, max_sessions: int) -> Hub:
    web = WebRuntime(
        runtime=Runtime(home),
        make_model=lambda spec: Counted(),
        default_model="counted",
        cwd=str(home),
        approval=lambda asker: Approval("auto"),
        max_sessions=max_sessions,
    )
    return Hub(web)


async def test_idle_sessions_past_the_limit_are_evicted_and_their_models_closed(
    harness_home: Path,
) -> None:
    """Three sessions with a limit of two: the least recently used idle one goes, its model
    closed; it opens again on demand, from its log."""
    Counted.made.clear()
    hub = hub_for(harness_home, max_sessions=2)
    first = await hub.create(None)
    await hub.submit(first, "hello", None)
    for _ in range(200):
        if not (await hub.live(first)).session.busy:
            break
        await asyncio.sleep(0.01)
    second, third = await hub.create(None), await hub.create(None)
    assert hub.held() == [second, third]
    await asyncio.sleep(0.05)  # the evicted session closes in the background
    assert Counted.made[0].closed and not any(m.closed for m in Counted.made[1:])
    page = await hub.page(first, limit=50, before=None)
    assert [e["type"] for e in page["events"]][-1] == "turn/end"
    await hub.aclose()
    assert all(m.closed for m in Counted.made)


async def test_a_session_with_a_listener_is_never_evicted(harness_home: Path) -> None:
    """Whoever watches a session keeps it held, whatever the limit."""
    hub = hub_for(harness_home, max_sessions=1)
    watched = await hub.create(None)
    queue, _ = await hub.subscribe(watched)
    others = [await hub.create(None) for _ in range(3)]
    assert watched in hub.held() and others[-1] in hub.held()
    hub.unsubscribe(watched, queue)
    await hub.aclose()


async def test_opening_a_long_session_leaves_the_event_loop_free(harness_home: Path) -> None:
    """While a 20,000-event session is read and folded, other requests' tasks still run."""
    runtime = Runtime(harness_home)
    with runtime.create() as log:
        for turn in range(1, 2001):
            log.append("turn/start", {}, turn=turn)
            log.append("message/user", {"text": f"prompt {turn} " + "x" * 200}, turn=turn)
            for n in range(7):
                log.append("message/assistant", {"text": f"answer {n}"}, turn=turn)
            log.append("turn/end", {"status": "completed"}, turn=turn)
    hub = hub_for(harness_home, max_sessions=4)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticking = asyncio.get_running_loop().create_task(ticker())
    await asyncio.sleep(0)
    before = ticks
    await hub.live(log.session_id)
    ticking.cancel()
    assert ticks - before > 10  # the loop went round while the session was folded
    await hub.aclose()
