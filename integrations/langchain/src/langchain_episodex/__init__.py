"""langchain-episodex: episodex episodic memory for LangChain.

- `EpisodicRetriever`, `TaskEpisodeRetriever`: episodes as `Document`s.
- `EpisodicConversationMemory`: memory for classic chains (extra `classic`); `EpisodicMemory`
  is its old name, still importable.
- `EpisodicMemoryMiddleware`: memory for `create_agent` agents (extra `agents`).
- `create_memory_search_tool`: a tool the agent calls to search its own episodes.
- `recall_episodes`, `record_exchange`, `arecord_exchange`: memory for LCEL chains.
- `EpisodexStore`: LangGraph's long-term memory store on episodex (extra `langgraph`).
- `from_langchain`: a LangChain model as the core's `prompt -> text` callable.

Every piece picks the user, agent and conversation ids by one rule (`EpisodicContext`
documents it): explicit argument > runtime context > `config["configurable"]` > thread id.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from langchain_episodex._context import EpisodicContext
from langchain_episodex._lcel import arecord_exchange, recall_episodes, record_exchange
from langchain_episodex._llm import from_langchain
from langchain_episodex._retrievers import EpisodicRetriever
from langchain_episodex._task_retriever import TaskEpisodeRetriever
from langchain_episodex._tool import create_memory_search_tool

if TYPE_CHECKING:
    from langchain_episodex._classic import EpisodicConversationMemory, EpisodicMemory
    from langchain_episodex._middleware import EpisodicMemoryMiddleware, LessonSource
    from langchain_episodex._store import EpisodexStore

__version__ = "0.1.0"

__all__ = [
    "EpisodexStore",
    "EpisodicContext",
    "EpisodicConversationMemory",
    "EpisodicMemory",
    "EpisodicMemoryMiddleware",
    "EpisodicRetriever",
    "LessonSource",
    "TaskEpisodeRetriever",
    "__version__",
    "arecord_exchange",
    "create_memory_search_tool",
    "from_langchain",
    "recall_episodes",
    "record_exchange",
]

# Each needs an optional extra, so it is imported on first use: the package itself
# imports with langchain-core alone, and a missing extra is named in the ImportError.
_EXTRAS = {
    "EpisodexStore": "langchain_episodex._store",
    "EpisodicConversationMemory": "langchain_episodex._classic",
    "EpisodicMemory": "langchain_episodex._classic",
    "EpisodicMemoryMiddleware": "langchain_episodex._middleware",
    "LessonSource": "langchain_episodex._middleware",
}


def __getattr__(name: str) -> Any:
    module = _EXTRAS.get(name)
    if module is None:
        raise AttributeError(f"module 'langchain_episodex' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
