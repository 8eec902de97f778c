"""`EpisodicRetriever`: conversation episodes as LangChain `Document`s."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from episodex import EpisodicMemory
from langchain_core.documents import Document
from pydantic import Field, field_validator

from langchain_episodex._options import RECALL_OPTIONS, check_recall_options, core_memory
from langchain_episodex._retriever_base import EpisodexRetriever

__all__ = ["EpisodicRetriever", "episode_document"]


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def episode_document(item: Mapping[str, Any]) -> Document:
    """One recalled episode as a `Document`: the short summary as content, the rest as metadata."""
    metadata = {
        "id": item["point_id"],
        "score": item.get("score"),
        "conversation_id": item.get("conversation_id"),
        "streams": item.get("streams", {}),
        "long_summary": item.get("long_summary_text", ""),
        "user_id": item.get("user_id"),
        "agent_id": item.get("agent_id"),
        "tools_invoked": list(item.get("tools_invoked") or []),
        "flows_activated": list(item.get("flows_activated") or []),
        "timestamp_begin": _plain(item.get("timestamp_begin")),
        "timestamp_end": _plain(item.get("timestamp_end")),
    }
    return Document(
        id=item["point_id"], page_content=str(item.get("short_summary_text", "")), metadata=metadata
    )


class EpisodicRetriever(EpisodexRetriever):
    """Retrieve a user's conversation episodes from episodex, best first.

    Each `Document` holds an episode's short summary as `page_content`; its metadata holds
    `id`, `score` (fused RRF score), `conversation_id`, `streams` (rank and score from each of
    the short, long and BM25 searches that found it), `long_summary`, `tools_invoked`,
    `flows_activated` and the timestamps. Retrieval is the core's hybrid recall, confined to
    one user and one agent.

    Setup:
        `pip install langchain-episodex`

    Instantiate:
        ```python
        from episodex import EpisodicMemory
        from langchain_episodex import EpisodicRetriever

        memory = EpisodicMemory(path="./memory")
        retriever = EpisodicRetriever(memory=memory, user_id="u1", agent_id="support", k=4)
        ```

    Use:
        ```python
        docs = retriever.invoke("refund for my order")
        docs = retriever.invoke("refund for my order", k=2)   # k per call
        ```

    Async (natively async, no thread hop of its own):
        ```python
        docs = await retriever.ainvoke("refund for my order")
        ```
    """

    call_options = RECALL_OPTIONS

    memory: EpisodicMemory
    """The core memory to read (a `SyncEpisodicMemory` is unwrapped to it)."""
    user_id: str = Field(min_length=1)
    """Whose episodes: retrieval never crosses users."""
    agent_id: str = Field(min_length=1)
    """Which agent's episodes."""
    conversation_id: str | None = Field(default=None, min_length=1)
    """The current conversation, if any: its episodes and the previous ones are merged by score."""
    k: int = Field(default=4, ge=1)
    """How many documents to return (overridden per call by `invoke(..., k=)`)."""
    recall_options: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Extra `EpisodicMemory.recall` options: stream weights, `stage1_limit`, `rrf_k`."""

    @field_validator("memory", mode="before")
    @classmethod
    def _unwrap(cls, value: object) -> object:
        return core_memory(value)

    @field_validator("recall_options")
    @classmethod
    def _known(cls, value: dict[str, Any]) -> dict[str, Any]:
        return check_recall_options(value)

    def _defaults(self) -> dict[str, Any]:
        return dict(self.recall_options)

    def _call_options(
        self, k: int | None, overrides: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        k, options = super()._call_options(k, overrides)
        options.setdefault("previous_conversation_limit", k)
        if self.conversation_id is not None:
            options.setdefault("same_conversation_limit", k)
        return k, options

    async def _documents(self, query: str, k: int, options: dict[str, Any]) -> list[Document]:
        result = await self.memory.recall(
            user_id=self.user_id,
            agent_id=self.agent_id,
            conversation_id=self.conversation_id,
            query=query,
            **options,
        )
        items = [*result["same_conversation"], *result["previous_conversations"]]
        items.sort(key=lambda item: -float(item.get("score", 0.0)))
        return [episode_document(item) for item in items[:k]]
