"""The stored episodes of a LangGraph thread's line of runs, and forgetting a branch it left.

A thread forked (time travel) at an earlier checkpoint goes on from there: the runs after it
on the branch it left are no longer the thread's. The middleware records each run with its
thread id and root (`thread_root`) in the episode's metadata; these read them back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from episodex import ConversationEpisode
from episodex import EpisodicMemory as CoreMemory

__all__ = ["LineEpisode", "forget_left_branches", "line_episodes"]

#: Episodes read at a time while looking through a conversation for a left branch: the whole
#: conversation is looked at (a branch may be behind any number of newer episodes), never
#: held at once.
_PAGE = 256


@dataclass(frozen=True, slots=True)
class LineEpisode:
    """A stored episode recorded by a run of a LangGraph thread."""

    point_id: str
    thread_id: str
    thread_root: str
    start_index: int
    recorded: float | None
    """When the run was recorded (its `timestamp_end`, UTC epoch seconds)."""


def line_episodes(
    memory: CoreMemory, *, user_id: str, agent_id: str, conversation_id: str, from_index: int
) -> Iterator[LineEpisode]:
    """The stored episodes of the conversation recorded by a thread's run, a page at a time.

    Those starting at message position `from_index` or later (where a fork's run starts:
    the store leaves out the thread's earlier runs, so a run reads little more than itself
    when no branch was left). Blocking (run it in a worker thread from async code). The caller may forget an episode
    it was given before asking for the next: the next page starts after the last one given.
    """
    for hit in memory.store.iter_episodes(
        user_id=user_id,
        agent_id=agent_id,
        conversation_id=conversation_id,
        page=_PAGE,
        from_index=from_index,
    ):
        payload = hit.payload
        metadata = payload.get("metadata")
        start = payload.get("start_index")
        if not isinstance(metadata, dict) or isinstance(start, bool) or not isinstance(start, int):
            continue
        thread = metadata.get("thread_id")  # pyright: ignore[reportUnknownMemberType]
        root = metadata.get("thread_root")  # pyright: ignore[reportUnknownMemberType]
        if not isinstance(thread, str) or not isinstance(root, str):
            continue
        ended = payload.get("timestamp_end")
        recorded = (
            float(ended) if isinstance(ended, int | float) and not isinstance(ended, bool) else None
        )
        yield LineEpisode(hit.id, thread, root, start, recorded)


def forget_left_branches(memory: CoreMemory, written: Sequence[ConversationEpisode]) -> None:
    """Forget the branches runs stored later than recorded left, now that they are stored.

    A recorder's `on_written_later`, called in its writing thread once a write stored runs
    that waited (the store failing when the run ended, a deferred write, or a restart): a
    fork's run that waited kept the branch it left stored (the middleware never forgets
    before the run is stored), and nothing else would forget it. Every recorder that may
    write a middleware's runs (one on the same spill file: a classic memory's too) is given
    it. For each thread line of the write, its stored episodes from the first position the
    write holds on are of a branch left behind, if it was recorded before the run of this
    write at or before its position (the runs recorded after it are its thread's
    continuation: this write's, later ones', or stored already by another recorder, another
    worker of the service on the same thread, while this run waited here). Each conversation
    of the write is read once, a page at a time, however many of its threads the write holds.
    """
    conversations: dict[tuple[str, str, str], dict[tuple[str, str], list[tuple[int, float]]]] = {}
    for episode in written:
        thread = episode.metadata.get("thread_id")
        root = episode.metadata.get("thread_root")
        begun = episode.timestamp_begin  # the recorder sets it when the run is recorded
        if not isinstance(thread, str) or not isinstance(root, str) or begun is None:
            continue
        lines = conversations.setdefault(
            (episode.user_id, episode.agent_id, episode.conversation_id), {}
        )
        lines.setdefault((thread, root), []).append((episode.start_index, begun.timestamp()))
    kept = {episode.point_id for episode in written}
    for (user_id, agent_id, conversation_id), lines in conversations.items():
        first = min(start for runs in lines.values() for start, _ in runs)
        for stored in line_episodes(
            memory,
            user_id=user_id,
            agent_id=agent_id,
            conversation_id=conversation_id,
            from_index=first,
        ):
            runs = lines.get((stored.thread_id, stored.thread_root))
            if runs is None or stored.point_id in kept or stored.recorded is None:
                continue
            # Recorded (its time set by the recorder) before a run of the write it comes after
            # in the thread: the branch that run's fork left.
            recorded = stored.recorded
            if any(stored.start_index >= start and recorded < begun for start, begun in runs):
                memory.store.forget(point_id=stored.point_id, user_id=user_id, agent_id=agent_id)
