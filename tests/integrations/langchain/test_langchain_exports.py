from __future__ import annotations

import langchain_episodex

DOCUMENTED = {
    "EpisodicContext",
    "EpisodicMemory",
    "EpisodicMemoryMiddleware",
    "EpisodicRetriever",
    "LessonSource",
    "TaskEpisodeRetriever",
    "__version__",
    "arecord_exchange",
    "from_langchain",
    "recall_episodes",
    "record_exchange",
}


def test_exports_are_exactly_the_documented_ones() -> None:
    assert set(langchain_episodex.__all__) == DOCUMENTED
    for name in DOCUMENTED:
        assert getattr(langchain_episodex, name) is not None
