"""Where an agent run's messages are: in the history as it is now, and in the whole thread.

A checkpointed thread's history is not the thread: a middleware that summarises or trims it
(LangChain's `SummarizationMiddleware`) replaces its early messages with a summary, or drops
them. The episodes of the thread are stored with positions counted over every message it
ever had, so two episodes never claim the same messages and the recall can tell the
episodes whose messages the model still sees (left out: they are in the prompt) from those
a summary took away (recalled: only memory can bring them back). The count is carried from
run to run in the middleware's private run state, anchored on message ids.

A long run (a tool loop of many model calls) can lose its own first messages the same way
before it ends: the run state keeps its input's lines, so the run is recorded from them and
its messages still in the history.

A run LangGraph runs again from one of its checkpoints (time travel: a replay, or a fork with
an edited input) is recorded again at its end: its episodes are stored under ids of the run's
place in the thread, so that record replaces the one of the branch the thread left.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage


def run_start(messages: Sequence[AnyMessage]) -> int:
    """Where the run that received `messages` begins in them: after the previous run's end."""
    # A run's input is what follows the end of the previous run (all of it without a
    # checkpointer): that is where this run begins. A run ends with the model's last message,
    # or with the results of the tools that message called when they end the run (a
    # `return_direct` tool, a structured response given through a tool): those results are
    # the previous run's, and counted in this one they would be recorded a second time.
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage):
            calls = {call["id"] for call in message.tool_calls if call.get("id")}
            start = index + 1
            while start < len(messages):
                result = messages[start]
                if not isinstance(result, ToolMessage) or result.tool_call_id not in calls:
                    break
                start += 1
            return start
    return 0


def run_position(messages: Sequence[AnyMessage], run: Mapping[str, Any]) -> int | None:
    """Where the run's messages start in the history at its end; None if they left it.

    Found by message id: a middleware that summarises or trims the history (LangChain's
    `SummarizationMiddleware`) shortens it during the run, so the position the run started
    at may name other messages, or none, by the end.
    """
    first, before = run.get("first_id"), run.get("before_id")
    if first is None and before is None:
        # Messages without ids (or a run begun by an older version): positions are all we have.
        return min(int(run["start"]), len(messages))
    found = _index(messages, first)
    if found is not None:
        return found
    found = _index(messages, before)
    return None if found is None else found + 1


def _index(messages: Sequence[AnyMessage], message_id: Any) -> int | None:
    if message_id is None:
        return None
    for index, message in enumerate(messages):
        if message.id == message_id:
            return index
    return None


def thread_positions(
    messages: Sequence[AnyMessage], start: int, previous: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The thread positions of a run beginning at `start` of `messages`, for its run state.

    `thread_start` is where the run's first message is in the whole thread; `window` (with
    the id of its message, `window_id`) where the thread's messages still in the history
    begin: episodes ending in `[window, thread_start)` are in the model's context already.

    Args:
        messages: The history at the start of the run.
        start: Where the run begins in it.
        previous: The run state of the thread's previous run (None for its first run).
    """
    if previous is None or "thread_start" not in previous:
        # The thread's first run, or one begun by an older version, which counted positions
        # in the history: the count goes on from there.
        return {
            "thread_start": start,
            "window": 0,
            "window_id": messages[0].id if messages else None,
        }
    begun = int(previous["thread_start"])
    end = previous.get("thread_end")
    # The previous run's last message anchors the count; an open run (stopped before its
    # end) has none, but its first message, where it is still in the history, does too.
    last = _index(messages, previous.get("last_id"))
    found = run_position(messages, previous)
    if last is not None and end is not None:
        offset = int(end) - (last + 1)
    elif found is not None:
        offset = begun - found
    else:
        offset = None
    # Never back: if what the previous runs knew of was removed, this run follows it all.
    floor = (begun if end is None else int(end)) - start
    offset = floor if offset is None else max(offset, floor)
    kept = _index(messages, previous.get("window_id"))
    if kept is not None:
        return {
            "thread_start": offset + start,
            "window": min(int(previous["window"]), offset + start),
            "window_id": previous["window_id"],
        }
    # The history lost its early messages: what the thread still shows of itself begins
    # with the earliest message of the previous run that is left (a message kept from
    # before it is then recalled though the model sees it: shown twice, never lost).
    local = min([start, *(i for i in (found, last) if i is not None)])
    return {
        "thread_start": offset + start,
        "window": offset + local,
        "window_id": messages[local].id if local < len(messages) else None,
    }


def _own_start(messages: Sequence[AnyMessage], run: Mapping[str, Any], inputs: set[Any]) -> int:
    """Where the run's messages left in the history begin, once its first messages left it.

    A run adds the model's messages and its tools' results after its input. A message before
    them is not the run's: one it knew from its start (the history's first, which a trim may
    keep), or a user or system message its input did not bring (a summary of what was taken
    out); the run's messages are those after the last of them.
    """
    earlier = {run.get("head_id"), run.get("before_id"), run.get("window_id")} - {None}
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.id in earlier or (
            isinstance(message, HumanMessage | SystemMessage) and message.id not in inputs
        ):
            return index + 1
    return 0


def run_messages(
    messages: Sequence[AnyMessage], run: Mapping[str, Any]
) -> tuple[list[list[str]], list[AnyMessage]] | None:
    """The run's messages at its end, for its record; None if they left the history.

    The lines of its input that left the history (kept in the run state at its start), and
    its messages still in the history. A run begun by an older version kept no input: it is
    found in the history or not at all.
    """
    position = run_position(messages, run)
    kept: list[Mapping[str, Any]] | None = run.get("input")
    if kept is None:
        return None if position is None else ([], list(messages[position:]))
    inputs = {item.get("id") for item in kept}
    if position is None:
        position = _own_start(messages, run, inputs)
    ran = list(messages[position:])
    if inputs <= {message.id for message in ran}:
        return [], ran  # the whole run is in the history
    return [list(item["line"]) for item in kept], [m for m in ran if m.id not in inputs]


def thread_end(messages: Sequence[AnyMessage], run: Mapping[str, Any]) -> dict[str, Any]:
    """What the run state keeps at the run's end so the next run can count on from it.

    The thread position just past the run's last message (`thread_end`) and that message's
    id (`last_id`, None when the history's last message is not the run's); nothing when the
    run's messages left the history or it began with an older version.
    """
    if "thread_start" not in run or not messages:
        return {}
    found = run_messages(messages, run)
    if found is None:
        return {}
    kept, ran = found
    last = messages[-1].id if not kept or (ran and ran[-1] is messages[-1]) else None
    return {"thread_end": int(run["thread_start"]) + len(kept) + len(ran), "last_id": last}


_EPISODE_IDS = uuid.UUID("5d0c7a3e-8f41-4b62-9e17-2a6b3c9d0e84")


def run_episode_id(run: Mapping[str, Any], start_index: int, part: int | None) -> str | None:
    """The point id of the run's episode at thread position `start_index` (and `part`).

    The same for every recording of the run: LangGraph replays it from a checkpoint (its run
    state is in the checkpoint), or forks the thread where it began with another input (the
    same message before it). Either recording replaces the other instead of storing the
    exchange twice at the same positions. The anchor is a message id within the LangGraph
    thread, so runs of other threads sharing a conversation id never share an id. None (a
    new id each time, as before) without a thread: a run without a checkpointer begins at
    position 0 every time and may be given the same message object again.
    """
    thread = run.get("thread_id")
    anchor = run.get("before_id") or run.get("first_id")
    if thread is None or anchor is None:
        return None
    place = [
        str(thread),
        run["user_id"],
        run["agent_id"],
        run["conversation_id"],
        str(anchor),
        start_index,
        part,
    ]
    return str(uuid.uuid5(_EPISODE_IDS, json.dumps(place)))
