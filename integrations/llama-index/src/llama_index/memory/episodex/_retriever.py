"""`EpisodicRetriever`: episodex recall as a LlamaIndex retriever of scored nodes."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from hashlib import sha256
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.memory.episodex._checks import check_recall_options, require_id
from llama_index.memory.episodex._messages import readable

from episodex import (
    ConfigurationError,
    EpisodicMemory,
    StoreClosedError,
    SyncEpisodicMemory,
    ValidationError,
    run_sync,
)

logger = logging.getLogger(__name__)

__all__ = ["EpisodicRetriever"]

_SECTIONS = ("same_conversation", "previous_conversations")
# Metadata the LLM and the embedder need not see when a node is rendered.
_HIDDEN = (
    "point_id",
    "user_id",
    "agent_id",
    "section",
    "score",
    "score_ceiling",
    "streams",
    "short_summary",
    "start_index",
    "end_index",
    "overlap",
    "timestamp_begin",
)


# Metadata a query gives a node, not the episode: left out of the node's hash.
_PER_QUERY = frozenset(("section", "score", "score_ceiling", "streams"))


class _EpisodeNode(TextNode):
    """A `TextNode` whose hash is its episode's, the same for every query that recalls it.

    LlamaIndex tells nodes apart by `hash` (`QueryFusionRetriever` sums an episode's ranks
    over its queries and retrievers by it): with the query's score and ranks in it, one
    episode recalled twice counted as two nodes, and its ranks were never summed.
    """

    def __init__(self, **fields: Any) -> None:
        # TextNode's own constructor, as pyright sees it (else it reads the fields' aliases).
        super().__init__(**fields)

    @property
    def hash(self) -> str:
        kept = {k: v for k, v in self.metadata.items() if k not in _PER_QUERY}
        identity = str(self.text) + str(kept)
        return sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()


def _plain(value: Any) -> Any:
    """A JSON value for node metadata: datetimes as ISO strings, containers copied."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _empty(value: Any) -> bool:
    """A field with nothing to say: None, or an empty text, list or mapping."""
    return value is None or (isinstance(value, str | list | tuple | Mapping) and not value)


def _node(item: Mapping[str, Any], section: str, ceiling: float | None) -> NodeWithScore:
    metadata: dict[str, Any] = {
        "point_id": item["point_id"],
        "section": section,
        "short_summary": item.get("short_summary_text", ""),
    }
    for key, value in item.items():
        # Empty fields are left out: rendered for the LLM they would be noise lines such as
        # `flows_activated: []` or `average_user_sentiment: None`.
        if key in ("point_id", "short_summary_text", "long_summary_text", "metadata"):
            continue
        if not _empty(value):
            metadata[key] = _plain(value)
    if item.get("metadata"):
        metadata["episode_metadata"] = _plain(item["metadata"])
    score = float(item.get("score", 0.0))
    if ceiling is not None:
        metadata["score_ceiling"] = ceiling
        # At most 1: a float sum may land a hair above its ceiling.
        score = min(score / ceiling, 1.0) if ceiling > 0 else 0.0
    short = str(item.get("short_summary_text", ""))
    long = str(item.get("long_summary_text", ""))
    node = _EpisodeNode(
        id_=str(item["point_id"]),
        text=f"{short}\n\n{long}" if long else short,
        metadata=metadata,
        excluded_llm_metadata_keys=[*_HIDDEN, "episode_metadata"],
        excluded_embed_metadata_keys=list(metadata),
    )
    return NodeWithScore(node=node, score=score)


class EpisodicRetriever(BaseRetriever):
    """Episodes of one user with one agent, found by episodex's hybrid recall, as nodes.

    Each result is a `NodeWithScore`: the node text is the short summary then the long one,
    its id is the episode's point id, its score the fused recall score, and its metadata
    holds every stored field (`conversation_id`, `timestamp_end` as ISO text,
    `tools_invoked`, ...) plus `section`: `same_conversation` or `previous_conversations`,
    `score` (the fused score) and `streams` (each stream's rank of the episode).

    Scores: the fused score is a weighted Reciprocal Rank Fusion sum, small by nature (about
    0.03 for the best episode with the default weights), so a cutoff meant for a 0-1
    similarity, such as LlamaIndex's `SimilarityPostprocessor(similarity_cutoff=0.5)`, drops
    every node. With `relative_scores=True` a node's score is its fused score divided by the
    highest one this query's recall can give (`EpisodicMemory.score_ceiling`, kept in the
    metadata as `score_ceiling`): 1.0 means "ranked first by every stream", 0.5 half of that,
    and the order is unchanged.
    Results are ordered best first; an empty or blank query returns no nodes. Fields with no
    value (None, empty lists) are left out of the metadata, so what an LLM is shown carries no
    `flows_activated: []` noise lines. A node's `hash`, by which LlamaIndex tells nodes apart
    (`QueryFusionRetriever` sums an episode's ranks by it), leaves out what the query gave
    it (`section`, `score`, `score_ceiling`, `streams`): one episode is one node, whichever
    query or retriever recalled it.

    Ids: `user_id` and `agent_id` are fixed when the retriever is made, never taken from a
    query, so results never come from another user (one rule for every LlamaIndex part of
    this package: the explicit argument wins, then the context `Memory` gives, its session
    id, for the conversation, and there is no other default).

    Setup:
        `pip install llama-index-memory-episodex`.

    Instantiate:
        ```python
        from episodex import EpisodicMemory
        from llama_index.memory.episodex import EpisodicRetriever

        memory = EpisodicMemory(path="./memory")
        await memory.memorize(short_summary="Refund issued for order 4471",
                              long_summary="The blender arrived broken; the agent refunded it.",
                              user_id="u1", agent_id="support", conversation_id="c1")
        retriever = EpisodicRetriever(memory, user_id="u1", agent_id="support")
        ```

    Use:
        ```python
        nodes = retriever.retrieve("did I get my refund?")
        print(nodes[0].node.metadata["conversation_id"])  # -> c1
        ```

    Async:
        ```python
        nodes = await retriever.aretrieve("did I get my refund?")
        ```

    Args:
        memory: The episodic memory to search (a `SyncEpisodicMemory` works too).
        user_id: The end user; no result ever comes from another user.
        agent_id: The agent the user talks to.
        conversation_id: The current conversation: its episodes are returned apart (section
            `same_conversation`) and do not count against `previous_conversation_limit`.
        previous_conversation_limit: Most episodes from other conversations (default 10, or
            `similarity_top_k` when that is given).
        same_conversation_limit: Most episodes from the current conversation (default 5, or
            `similarity_top_k`).
        similarity_top_k: Most nodes returned in all, as with LlamaIndex's own retrievers;
            the best of both sections are kept.
        recall_options: More `EpisodicMemory.recall` options (stream weights, `rrf_k`).
        relative_scores: Give each node its fused score divided by the highest fused score
            this query's recall can give, within 0 and 1, for a similarity cutoff; the fused
            score stays in the metadata as `score`. If computing that highest score fails
            the nodes keep their fused scores (logged as a warning).
        raise_on_failure: Raise when the memory itself fails (its engine cannot be reached,
            a model fails, a stored episode cannot be read back: `EngineError`,
            `EmbeddingError` or any other error). By default the failure is logged to the
            `llama_index.memory.episodex` logger and no nodes come back, so a query engine or
            agent fed by this retriever still answers. Bad input (`ValidationError`,
            `ConfigurationError`), and a memory already closed, always raise.
        callback_manager: LlamaIndex callbacks.
        verbose: Print retrieval progress.
    """

    def __init__(
        self,
        memory: EpisodicMemory | SyncEpisodicMemory,
        *,
        user_id: str,
        agent_id: str,
        conversation_id: str | None = None,
        previous_conversation_limit: int | None = None,
        same_conversation_limit: int | None = None,
        similarity_top_k: int | None = None,
        recall_options: Mapping[str, Any] | None = None,
        relative_scores: bool = False,
        raise_on_failure: bool = False,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if isinstance(memory, SyncEpisodicMemory):
            memory = memory.memory  # the retriever is async inside; its core memory serves both
        if not isinstance(memory, EpisodicMemory):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(
                "memory must be an episodex.EpisodicMemory or SyncEpisodicMemory, got "
                f"{type(memory).__name__}"
            )
        self.memory = memory
        self.raise_on_failure = raise_on_failure
        if not isinstance(relative_scores, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(
                f"relative_scores must be True or False, got {relative_scores!r}"
            )
        self.relative_scores = relative_scores
        if similarity_top_k is not None:
            if (
                isinstance(similarity_top_k, bool)
                or not isinstance(similarity_top_k, int)  # pyright: ignore[reportUnnecessaryIsInstance]
                or similarity_top_k < 1
            ):
                raise ConfigurationError(
                    f"similarity_top_k must be an integer >= 1, got {similarity_top_k!r}"
                )
        self.similarity_top_k = similarity_top_k
        self.user_id = require_id("user_id", user_id)
        self.agent_id = require_id("agent_id", agent_id)
        if conversation_id is not None:
            require_id("conversation_id", conversation_id)
        self.conversation_id = conversation_id
        self._options: dict[str, Any] = {
            "previous_conversation_limit": _limit(
                "previous_conversation_limit", previous_conversation_limit, similarity_top_k, 10
            ),
            "same_conversation_limit": _limit(
                "same_conversation_limit", same_conversation_limit, similarity_top_k, 5
            ),
            # The same RecallOptions as every adapter; a limit given there wins.
            **check_recall_options(recall_options or {}, memory=memory),
        }
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _kwargs(self, query_bundle: QueryBundle) -> dict[str, Any]:
        query = query_bundle.query_str
        if not isinstance(query, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            # A dataclass, not checked: `QueryBundle(message.content)` holds the None of a
            # message without text.
            raise ValidationError(
                f"the QueryBundle's query_str must be a str, got {type(query).__name__} "
                f"({query!r:.60})"
            )
        return {
            **self._options,
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "conversation_id": self.conversation_id,
            "query": readable(query),
        }

    def _nodes(
        self, result: Mapping[str, list[dict[str, Any]]], ceiling: float | None
    ) -> list[NodeWithScore]:
        nodes = [
            _node(item, section, ceiling)
            for section in _SECTIONS
            for item in result.get(section, [])
        ]
        # Stable sort: equal scores keep the current conversation first.
        nodes.sort(key=lambda n: -(n.score or 0.0))
        return nodes if self.similarity_top_k is None else nodes[: self.similarity_top_k]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return run_sync(self._aretrieve(query_bundle))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        kwargs = self._kwargs(query_bundle)
        if not kwargs["query"].strip():
            # A user's blank message (an attachment sent alone) has nothing to search for:
            # recall would refuse it, and the chat or query engine fed by this would fail.
            return []
        try:
            result = await self.memory.recall(**kwargs)
            ceiling = None
            if self.relative_scores and any(result.values()):
                ceiling = await self._ceiling(kwargs["query"])
            return self._nodes(result, ceiling)
        except (StoreClosedError, ValidationError, ConfigurationError):
            raise  # the caller's own mistake, not an outage
        except Exception:
            # Not only the engine's and the embedder's typed errors: a custom embedder's own
            # exception, or an episode stored by another program that cannot be read back,
            # would otherwise fail the query engine or agent this retriever feeds.
            if self.raise_on_failure:
                raise
            logger.warning(
                "episodic recall failed; returning no nodes so the caller goes on without memory",
                exc_info=True,
            )
            return []

    async def _ceiling(self, query: str) -> float | None:
        """The query's score ceiling, or None (fused scores) when computing it fails.

        The recall has worked by then: failing to scale its scores must not cost the caller
        the episodes it found.
        """
        try:
            return await self.memory.score_ceiling(query, **self._options)
        except (StoreClosedError, ValidationError, ConfigurationError):
            raise
        except Exception:
            if self.raise_on_failure:
                raise
            logger.warning(
                "episodic score ceiling failed; the nodes keep their fused scores",
                exc_info=True,
            )
            return None


def _limit(name: str, given: int | None, top_k: int | None, default: int) -> int:
    """A section's limit: as given, else `similarity_top_k`, else the default."""
    if given is not None:
        # Checked now: a limit recall refuses would fail every retrieval, which goes on
        # without memory, so the mistake would only ever show as an outage in the log.
        if isinstance(given, bool) or not isinstance(given, int) or given < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"{name} must be an integer >= 0, got {given!r}")
        return given
    return top_k if top_k is not None else default
