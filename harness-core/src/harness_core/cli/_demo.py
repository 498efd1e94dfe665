"""`harness demo`: the embedded scripted session, with no key and no network.

The script (`demo.json`, shipped in this package) plans with todo_write, runs a few harmless
bash commands, updates the plan as it goes and finishes. It runs through the same path as
`harness run --model scripted:PATH`: the real plugin host, tools, loop and session log. On a
terminal the steps are paced so a person can watch the plan strip move.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from argparse import Namespace
from importlib import resources
from pathlib import Path
from typing import Any, Final

import anyio

from ..loop import Approval
from ..models import DeltaSink, Model, ModelBase, ModelResponse, ScriptedModel
from ._app import App
from ._run import run_session, session_view, turn_status

__all__ = ["PacedModel", "demo", "demo_script"]

STEP_DELAY: Final = 0.8  # seconds before each model step on a terminal
WORD_DELAY: Final = 0.03  # seconds between streamed words on a terminal
# The script's commands are fixed and harmless, so the demo never asks before running them.
SANDBOXED: Final = "demo: tools run without asking; bash runs in the workspace sandbox"
UNSANDBOXED: Final = "demo: tools run without asking; bash runs unsandboxed (see above)"


def demo_script() -> dict[str, Any]:
    """The embedded script: `{"prompt": str, "steps": [...]}` (the scripted-model format)."""
    text = resources.files(__package__).joinpath("demo.json").read_text(encoding="utf-8")
    script: dict[str, Any] = json.loads(text)
    return script


class PacedModel(ModelBase):
    """A scripted model slowed down for a human: a pause before each step, words one by one."""

    def __init__(self, inner: ScriptedModel, step_delay: float, word_delay: float) -> None:
        self.inner = inner
        self.name = inner.name
        self.step_delay = step_delay
        self.word_delay = word_delay

    @property
    def remaining(self) -> int:  # type: ignore[override]  # a script always knows
        return self.inner.remaining

    async def respond(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_delta: DeltaSink | None = None,
    ) -> ModelResponse:
        await anyio.sleep(self.step_delay)
        if on_delta is None:
            return await self.inner.respond(messages, tools)
        chunks: list[tuple[Any, str]] = []
        response = await self.inner.respond(messages, tools, lambda k, c: chunks.append((k, c)))
        for kind, chunk in chunks:
            on_delta(kind, chunk)
            await anyio.sleep(self.word_delay)
        return response


def demo(args: Namespace) -> int:
    temporary = not os.environ.get("HARNESS_HOME")
    home = Path(tempfile.mkdtemp(prefix="harness-demo-")) if temporary else None
    app = App(home)
    mode = app.use_sandbox(None)
    script = demo_script()
    scripted = ScriptedModel(script["steps"], name="scripted:demo", record=False)
    paced = sys.stdout.isatty() and not args.fast
    model: Model = PacedModel(scripted, STEP_DELAY, WORD_DELAY) if paced else scripted
    # Hands-free: the script's commands are fixed and harmless, so no question is asked.
    session = app.open(None, model, approval=Approval("auto"))
    view = session_view(app, session, json_lines=False, echo_prompt=True, resumed=False)
    view.note(SANDBOXED if mode == "workspace" else UNSANDBOXED)
    outcomes = run_session(session, view, [script["prompt"]])
    status = turn_status(outcomes[-1], model)
    view.note(next_steps(session.id, app.home if temporary else None))
    return status


def _model_hint() -> str:
    # Never a hard-coded model name: providers retire them. Use the one configured, if any.
    return os.environ.get("DEEPSEEK_MODEL") or "MODEL"


def next_steps(sid: str, temporary_home: Path | None) -> str:
    """The exact commands that inspect and continue the demo session."""
    env = f"HARNESS_HOME={shlex.quote(str(temporary_home))} " if temporary_home else ""
    # Under `uv run` (scripts/demo) the console script is on uv's PATH, not the user's.
    harness = f"{env}{'uv run harness' if os.environ.get('UV') else 'harness'}"
    where = f" in {temporary_home}" if temporary_home else ""
    return "\n".join(
        [
            "",
            f"The demo session {sid} is saved{where}. Inspect it:",
            f"  {harness} show {sid}",
            f"  {harness} todos {sid} --history",
            f"  {harness} events {sid}",
            "Continue it with a real model (set DEEPSEEK_API_KEY and name a model):",
            f"  {harness} run --session {sid} --model deepseek:{_model_hint()} "
            f"{shlex.quote('What next?')}",
        ]
    )
