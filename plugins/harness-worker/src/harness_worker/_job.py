"""What a queued turn is: a `Job`, the one argument of the workflow `harness_turn`.

`harness submit`, `harness batch` and `serve --queue` write it, and so can anyone who can call
DBOS's `enqueue_workflow` in the store's database: a worker checks every row it takes against
this model before anything runs, and a row that is not a job is one line and an error, never
a traceback.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

__all__ = ["Job", "parse"]

Text = Annotated[str, StringConstraints(pattern=r"^[^\x00]*$")]  # PostgreSQL stores no NUL


class Job(BaseModel):
    """One turn to run: the session, the prompt, the model spec (None: the worker's default),
    the plugins whose tools it goes without, and for a batch task its check, directory and
    row (`batch`, `position`); a sample with a `workspace` (its template, and the `commit`
    of a git one) runs in a copy the worker makes at `cwd` and removes unless `keep`."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    session: Annotated[Text, Field(min_length=1)]
    prompt: Text
    model: Text | None = None
    disable: list[Text] = Field(default_factory=list)  # a JSON list: strict takes no tuple
    check: Text | None = None
    cwd: Text | None = None
    workspace: Text | None = None
    commit: Text | None = None
    keep: bool = False
    variant: Text | None = None
    batch: Text | None = None
    position: int | None = None


def parse(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Job | str:
    """The job a workflow was queued with, or why the row is not one (a line)."""
    if kwargs or len(args) != 1:
        return f"a turn takes one argument, a job, and it was given {len(args) + len(kwargs)}"
    try:
        return Job.model_validate(args[0])
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"{where}: {error['msg']}" if where else str(error["msg"])
