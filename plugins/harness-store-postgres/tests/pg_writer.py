"""A writer in a process of its own, for the tests that kill it: `pg_writer.py URL MODE`.

MODE `hold`: open a new session, commit a turn, print its id and wait to be killed.
MODE `crash`: as hold, but then commit a turn left open (a call with no result) and append
a note to it that is never committed.
MODE `append ID`: open session ID, commit a turn, print its last seq and exit.
"""

from __future__ import annotations

import sys
import time

from harness_core.log import Event, SessionLog
from harness_core.testing.store_conformance import NOTE, conformance_registry
from harness_store_postgres._store import PostgresStore


def turn(log: SessionLog, text: str) -> Event:
    """A whole turn holding one note, committed; its note."""
    number = log.next_turn
    log.append("turn/start", {}, turn=number)
    note = log.append(NOTE, {"text": text}, turn=number)
    log.append("turn/end", {"status": "completed"}, turn=number)
    log.commit()
    return note


def main() -> None:
    url, mode = sys.argv[1], sys.argv[2]
    store = PostgresStore(url, conformance_registry())
    if mode == "append":
        with store.open(sys.argv[3]) as log:
            event = turn(log, "from another process")
        print(event.seq, flush=True)
        return
    log = store.create(cwd="/work")
    turn(log, "committed")
    if mode == "crash":
        log.append("turn/start", {}, turn=2)
        log.append("message/user", {"text": "go"}, turn=2)
        calls = [{"id": "c1", "name": "bash", "arguments": "{}"}]
        log.append("message/assistant", {"text": None, "tool_calls": calls}, turn=2)
        log.commit()
        log.append(NOTE, {"text": "appended, never committed"}, turn=2)
    print(log.session_id, flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
