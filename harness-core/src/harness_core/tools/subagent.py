"""The `subagent` tool: hand a self-contained task to a child agent with its own session.

The child's session names its parent session and call in `session/start`, so the tree of
sessions can be rebuilt from the logs alone. Its todo list and every other event stay in the
child's log; the parent sees only the child's final answer.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from ._tool import ExecContext, Tool, ToolResult

__all__ = ["SubagentArgs", "SubagentTool"]

DEFAULT_MAX_DEPTH: Final = 2


class SubagentArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str = Field(description="The complete task for the subagent, with all context it needs.")


class SubagentTool(Tool[SubagentArgs]):
    name = "subagent"
    description = (
        "Delegate a self-contained task to a subagent that has the same tools and its own "
        "session and plan. It does not see this conversation: put everything it needs in "
        "`task`. Returns the subagent's final answer."
    )
    arguments = SubagentArgs

    def __init__(self, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self.max_depth = max_depth

    def present_call(self, args: SubagentArgs) -> str:
        first = args.task.strip().splitlines()[0] if args.task.strip() else ""
        return f"subagent: {first[:80]}"

    async def execute(self, args: SubagentArgs, exec_ctx: ExecContext) -> ToolResult:
        parent = exec_ctx.agent
        if parent is None:
            return ToolResult("Error: subagent requires an owning agent session", is_error=True)
        if parent.depth >= self.max_depth:
            return ToolResult(
                f"Error: subagents may nest at most {self.max_depth} deep; do this task yourself",
                is_error=True,
            )
        outcome = await parent.run_child(args.task, call_id=exec_ctx.call_id)
        data = {"session": outcome.session_id, "status": outcome.status}
        if outcome.status != "completed":
            detail = outcome.error or outcome.status
            return ToolResult(
                f"Error: the subagent (session {outcome.session_id}) did not finish: {detail}",
                is_error=True,
                data=data,
            )
        return ToolResult(outcome.text or "(the subagent gave no answer)", data=data)
