"""`EpisodicRetriever`: conversation episodes as LangChain `Document`s."""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any, Literal

from episodex import EpisodicMemory, MemoryScope, ValidationError
from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig
from pydantic import Field, field_validator, model_validator

from langchain_episodex._context import WHERE, run_scope
from langchain_episodex._documents import SECTIONS, episode_document
from langchain_episodex._options import RECALL_OPTIONS, check_recall_options, core_memory
from langchain_episodex._retriever_base import EpisodexRetriever
from langchain_episodex._settings import id_field

__all__ = ["SEARCH_TYPES", "EpisodicRetriever"]

SearchType = Literal["similarity", "similarity_score_threshold"]
SEARCH_TYPES: tuple[str, ...] = ("similarity", "similarity_score_threshold")
"""The `search_type`s that mean something here: ranking is always the hybrid fusion."""

_IDS = ("user_id", "agent_id", "conversation_id")
# What `search_kwargs` may hold: what langchain-qdrant users type, and the recall options.
_SEARCH_KWARGS = frozenset({"k", "score_threshold"}) | RECALL_OPTIONS

# A classic retrieval chain's `invoke(x, config=...)` hands its retriever callbacks only (no
# configurable, no run config made current), so "put it in the configurable" alone would point
# at the one place that does not work there.
_WHERE = (
    f"{WHERE} of the run that calls the retriever (an LCEL chain such as "
    "create_retrieval_chain hands its config on). A classic chain (RetrievalQA, "
    "ConversationalRetrievalChain) does not hand its own config (chain.invoke(x, config=...)) "
    "to its retriever: give the ids to the retriever, EpisodicRetriever(user_id=..., "
    "agent_id=...), use create_retrieval_chain, or call the chain from a runnable (a "
    "RunnableLambda, a LangGraph node) given that config"
)


class EpisodicRetriever(EpisodexRetriever):
    """Retrieve a user's conversation episodes from episodex, best first.

    Each `Document` holds an episode's short summary as `page_content`; its metadata holds
    `id`, `score` (fused RRF score), `section` (`same_conversation` or
    `previous_conversations`), `conversation_id`, `long_summary`, `streams` (rank and score
    from each of the short, long and BM25 searches that found it), `tools_invoked` and the
    timestamps; empty fields are left out. Retrieval is the core's hybrid recall, confined to
    one user and one agent. An empty query returns no documents.

    Ids follow the package's one rule (see `EpisodicContext`): `user_id=`, `agent_id=`,
    `conversation_id=` given here or to `invoke` win, then the run's runtime context, then
    the config's `configurable`, then (conversation only) its `thread_id`. An LCEL chain
    (`create_retrieval_chain`) hands its config to the retriever; a classic chain
    (`RetrievalQA`, `ConversationalRetrievalChain`) does not: the ids in its
    `chain.invoke(x, config=...)` never reach the retriever, which reads those of the runnable
    the chain is called from (a `RunnableLambda`, a LangGraph node), or raises
    `ConfigurationError` when there is none. Give the ids here, use `create_retrieval_chain`,
    or call the classic chain from such a runnable invoked with that config.

    Setup:
        `pip install langchain-episodex`

    Instantiate:
        ```python
        from episodex import EpisodicMemory
        from langchain_episodex import EpisodicRetriever

        memory = EpisodicMemory(path="./memory")
        retriever = EpisodicRetriever(memory=memory, user_id="u1", agent_id="support", k=4)
        ```

    Use (the same keywords langchain-qdrant's `as_retriever` takes work here):
        ```python
        docs = retriever.invoke("refund for my order")
        docs = retriever.invoke("refund for my order", k=2)   # k per call
        strict = EpisodicRetriever(memory=memory, user_id="u1", agent_id="support",
                                   search_type="similarity_score_threshold",
                                   search_kwargs={"k": 3, "score_threshold": 0.05})
        anyone = EpisodicRetriever(memory=memory, agent_id="support")   # user per run:
        docs = anyone.invoke("refund", config={"configurable": {"user_id": "u1"}})
        ```

    Async (natively async, no thread hop of its own):
        ```python
        docs = await retriever.ainvoke("refund for my order")
        ```
    """

    call_options = RECALL_OPTIONS | {"score_threshold", "scope"}

    memory: EpisodicMemory
    """The core memory to read (a `SyncEpisodicMemory` is unwrapped to it)."""
    user_id: str | None = Field(default=None, min_length=1)
    """Whose episodes (None: from the run); retrieval never crosses users."""
    agent_id: str | None = Field(default=None, min_length=1)
    """Which agent's episodes (None: from the run)."""
    conversation_id: str | None = Field(default=None, min_length=1)
    """The current conversation, if any: its episodes and the previous ones are merged by score."""
    k: int = Field(default=4, ge=1)
    """How many documents to return (`search_kwargs["k"]` or `invoke(..., k=)` override it)."""
    search_type: SearchType = "similarity"
    """`similarity` (the hybrid ranking) or `similarity_score_threshold` (the same, cut at
    `score_threshold`); other LangChain search types (`mmr`) have no meaning here."""
    score_threshold: float | None = None
    """Leave out documents whose fused score is below this."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict[str, Any])
    """`k`, `score_threshold` and any `RecallOptions`, as langchain-qdrant users pass them."""
    recall_options: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Extra `EpisodicMemory.recall` options (`episodex.RecallOptions`)."""

    _unwrap = field_validator("memory", mode="before")(core_memory)
    _known = field_validator("recall_options")(check_recall_options)
    # Checked when made: refused at every call, the id would fail every chain it feeds.
    _ids = field_validator(*_IDS)(id_field)

    @field_validator("search_type", mode="before")
    @classmethod
    def _search_type(cls, value: object) -> object:
        if value not in SEARCH_TYPES:
            raise ValueError(
                f"search_type must be one of {', '.join(SEARCH_TYPES)} (episodes are ranked by "
                "hybrid fusion; mmr and other types are not offered)"
            )
        return value

    @field_validator("score_threshold", mode="before")
    @classmethod
    def _no_bool_threshold(cls, value: object) -> object:
        # Read as a number, True was a threshold of 1.0, above every fused score: a retriever
        # that never returned a document. A call's threshold and search_kwargs refuse it too.
        if isinstance(value, bool):
            raise ValueError(f"score_threshold must be a number, got {value!r}")
        return value

    @field_validator("search_kwargs")
    @classmethod
    def _search_kwargs(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - _SEARCH_KWARGS)
        if unknown:
            raise ValueError(
                f"unknown search_kwargs {', '.join(unknown)}; known: {', '.join(sorted(_SEARCH_KWARGS))}"
            )
        k = value.get("k", 1)
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
            raise ValueError(f"search_kwargs k must be an integer >= 1, got {k!r}")
        # The recall options among them get recall's own checks now, not at the first call.
        check_recall_options({n: v for n, v in value.items() if n in RECALL_OPTIONS})
        return value

    @model_validator(mode="after")
    def _weights_the_store_runs(self) -> EpisodicRetriever:
        # What each call recalls with (search_kwargs win), against this memory's store:
        # weights it cannot run would fail every call.
        merged = {**self.recall_options, **self.search_kwargs}
        check_recall_options(
            {n: v for n, v in merged.items() if n in RECALL_OPTIONS}, memory=self.memory
        )
        return self

    @model_validator(mode="after")
    def _threshold_given(self) -> EpisodicRetriever:
        threshold = self.search_kwargs.get("score_threshold", self.score_threshold)
        if self.search_type == "similarity_score_threshold" and threshold is None:
            raise ValueError(
                "search_type 'similarity_score_threshold' needs score_threshold= "
                "(or search_kwargs={'score_threshold': ...})"
            )
        # What every call refuses is refused here: made, such a retriever would fail each
        # chain it feeds, at every call. NaN would drop every document.
        if threshold is not None and (
            isinstance(threshold, bool)
            or not isinstance(threshold, Real)
            or threshold != threshold  # NaN: the one value unequal to itself
        ):
            raise ValueError(f"score_threshold must be a number, got {threshold!r}")
        return self

    # -- ids per call --------------------------------------------------------------------

    def _scope(self, config: RunnableConfig | None, kwargs: dict[str, Any]) -> MemoryScope:
        if "scope" in kwargs:
            # The ids' carrier to the retrieval, set here from the ids only: never the caller's.
            raise ValidationError(
                "EpisodicRetriever takes no scope= argument: give user_id=, agent_id= or "
                "conversation_id= (or put them in the config)"
            )
        explicit = {name: getattr(self, name) for name in _IDS}
        for name in _IDS:  # an id given to invoke is explicit too, and wins
            value = kwargs.pop(name, None)
            if value is not None:
                explicit[name] = value
        return run_scope(explicit, config, where=_WHERE)

    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Retrieve documents for `input` (ids and options may be given per call)."""
        return super().invoke(input, config, scope=self._scope(config, kwargs), **kwargs)

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Retrieve documents for `input` (ids and options may be given per call)."""
        return await super().ainvoke(input, config, scope=self._scope(config, kwargs), **kwargs)

    # -- retrieval -----------------------------------------------------------------------

    def _defaults(self) -> dict[str, Any]:
        defaults = {**self.recall_options, **self.search_kwargs}
        defaults.pop("k", None)
        if self.score_threshold is not None:
            defaults.setdefault("score_threshold", self.score_threshold)
        return defaults

    def _call_options(
        self, k: int | None, overrides: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        if k is None:
            k = self.search_kwargs.get("k", self.k)
        k, options = super()._call_options(k, overrides)
        options.setdefault("previous_conversation_limit", k)
        options.setdefault("same_conversation_limit", k)
        return k, options

    async def _documents(self, query: str, k: int, options: dict[str, Any]) -> list[Document]:
        scope = options.pop("scope", None)
        if not isinstance(scope, MemoryScope):
            raise ValidationError("EpisodicRetriever: call it through invoke or ainvoke")
        threshold = options.pop("score_threshold", None)
        if threshold is not None and (
            isinstance(threshold, bool)
            or not isinstance(threshold, Real)
            or threshold != threshold  # NaN would silently drop every document
        ):
            raise ValidationError(f"score_threshold must be a number, got {threshold!r}")
        if not query.strip():
            return []
        if scope.conversation_id is None:
            options.pop("same_conversation_limit", None)
        result = await self.memory.recall(
            user_id=scope.user_id,
            agent_id=scope.agent_id,
            conversation_id=scope.conversation_id,
            query=query,
            **options,
        )
        docs = [episode_document(item, s) for s in SECTIONS for item in result.get(s, [])]
        # Stable sort: equal scores keep the current conversation first.
        docs.sort(key=lambda doc: -float(doc.metadata.get("score", 0.0)))
        if threshold is not None:
            docs = [doc for doc in docs if float(doc.metadata.get("score", 0.0)) >= threshold]
        return docs[:k]
