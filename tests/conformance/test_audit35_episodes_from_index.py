"""`EpisodeStore.iter_episodes(from_index=...)` keeps the episodes from a message position on.

The LangChain middleware looks through a conversation for the episodes of a branch a LangGraph
fork left, from the fork's run's position on; the engine leaves out the earlier ones, on
every backend, so a long conversation is not read whole after every run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import ConversationEpisode, EpisodicMemory, ValidationError
from episodex.testing import HashEmbedder

from .backends import BACKENDS, drop_server_collections, engine_options

U, A = "user-1", "agent-1"


@pytest.fixture(params=BACKENDS)
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodicMemory]:
    path, options = engine_options(request.param, tmp_path)
    memory = EpisodicMemory(path, embedder=HashEmbedder(), splade=False, **options)
    yield memory
    drop_server_collections(memory.engine)
    memory.close()


def test_iter_episodes_from_index_keeps_the_later_positions(memory: EpisodicMemory) -> None:
    memory.store.memorize_many(
        [
            ConversationEpisode.parse(
                {
                    "point_id": str(uuid.UUID(int=n + 1)),
                    "short_summary": f"episode {n}",
                    "long_summary": f"the text of episode {n}",
                    "user_id": U,
                    "agent_id": A,
                    "conversation_id": "c1" if n % 5 else "c2",
                    "start_index": 2 * n,
                    "end_index": 2 * n + 2,
                }
            )
            for n in range(40)
        ]
    )

    def starts(**options: object) -> list[int]:
        hits = memory.store.iter_episodes(user_id=U, agent_id=A, page=7, **options)  # pyright: ignore[reportArgumentType]
        return sorted(int(hit.payload["start_index"]) for hit in hits)

    assert starts(conversation_id="c1", from_index=61) == [2 * n for n in range(31, 40) if n % 5]
    assert starts(from_index=70) == [70, 72, 74, 76, 78]
    assert starts(from_index=0) == starts() == [2 * n for n in range(40)]
    assert starts(from_index=1000) == []
    for bad in (-1, True, 1.5, "3"):
        with pytest.raises(ValidationError, match="from_index"):
            starts(from_index=bad)
