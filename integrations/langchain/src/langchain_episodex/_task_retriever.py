"""`TaskEpisodeRetriever`: task episodes (attempts at a task) as LangChain `Document`s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from episodex import EPISODE_FIELDS, Episode, TaskSearchOptions, TaskStore, ValidationError
from episodex.plan import Filter
from langchain_core.documents import Document
from pydantic import Field, field_validator, model_validator

from langchain_episodex._retriever_base import EpisodexRetriever

__all__ = ["TaskEpisodeRetriever", "task_document"]

#: The `search` options of the task stores an adapter may set: the core's type's keys.
SEARCH_OPTIONS: frozenset[str] = TaskSearchOptions.__optional_keys__


def task_document(episode: Episode, rank: int, include: list[str] | None = None) -> Document:
    """One task episode as a `Document`: its XML rendering as content, its fields as metadata."""
    metadata = {
        "id": episode.id_,
        "rank": rank,
        "task_id": episode.task.id_,
        "instruction": episode.task.instruction,
        "result": episode.result.content if episode.result is not None else None,
        "error": episode.error,
        "completed_at": episode.completed_at.isoformat(),
        "metadata": dict(episode.metadata),
    }
    return Document(id=episode.id_, page_content=episode.format(include=include), metadata=metadata)


class TaskEpisodeRetriever(EpisodexRetriever):
    """Retrieve task episodes (earlier attempts at similar tasks) from an episodex task store.

    Works with any task store (`QdrantTaskStore`, `JSONLTaskStore`, or your own
    `TaskStore`). Each `Document` holds the episode rendered as an `<episode>` XML
    element (the fields in `include`); its metadata holds `id`, `rank` (1 = best),
    `task_id`, `instruction`, `result`, `error`, `completed_at` and the episode's `metadata`.
    A task store made with `user_id`/`agent_id` holds one tenant's episodes; an unscoped
    store is confined per retriever with `search_options={"filter": {"user": "u1"}}` over
    the episodes' metadata. A `filter` given to `invoke` narrows that filter, never replaces
    it: a call's condition on a key the retriever's filter already fixes to another value is
    refused with `ValidationError`.

    Instantiate:
        ```python
        from episodex import EpisodicMemory, QdrantTaskStore
        from langchain_episodex import TaskEpisodeRetriever

        store = QdrantTaskStore(memory=EpisodicMemory(path="./memory"))
        retriever = TaskEpisodeRetriever(store=store, k=3)
        ```

    Use:
        ```python
        docs = retriever.invoke("convert miles to km")
        docs = await retriever.ainvoke("convert miles to km", k=1)
        ```
    """

    call_options = SEARCH_OPTIONS

    store: TaskStore
    """The task-episode store to search."""
    k: int = Field(default=3, ge=1)
    """How many documents to return (overridden per call by `invoke(..., k=)`)."""
    search_options: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Extra options of the store's `search`: `filter`, `score_threshold`, `mode`, weights."""
    include: list[str] | None = None
    """The episode fields rendered in `page_content`; None for the store's default fields."""

    @field_validator("search_options")
    @classmethod
    def _known(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - SEARCH_OPTIONS)
        if unknown:
            raise ValueError(
                f"unknown search option(s) {', '.join(unknown)}; known: {', '.join(sorted(SEARCH_OPTIONS))}"
            )
        return value

    @model_validator(mode="after")
    def _options_the_store_takes(self) -> TaskEpisodeRetriever:
        # Values the store refuses (a mode it lacks, a NaN threshold, both weights 0, a bad
        # filter) would make every call raise, so every chain fed by this retriever would
        # fail: checked now by the store's own check, as the core's strategies check theirs.
        check = getattr(self.store, "check_search_options", None)
        if callable(check):  # the bundled stores; a duck-typed store is checked at each call
            try:
                check(self.search_options)
            except ValidationError as exc:
                raise ValueError(f"search_options: {exc}") from None
        return self

    @field_validator("include")
    @classmethod
    def _fields(cls, value: list[str] | None) -> list[str] | None:
        unknown = sorted(set(value or ()) - set(EPISODE_FIELDS))
        if unknown:
            raise ValueError(
                f"unknown episode field(s) {', '.join(unknown)}; known: {', '.join(EPISODE_FIELDS)}"
            )
        return value

    def _defaults(self) -> dict[str, Any]:
        return dict(self.search_options)

    def _call_options(
        self, k: int | None, overrides: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        k, options = super()._call_options(k, overrides)
        if "filter" in overrides and "filter" in self.search_options:
            # Replacing the retriever's filter with the call's would drop the condition that
            # confines it (to one user, say) and return everyone's episodes.
            options["filter"] = _narrowed(self.search_options["filter"], overrides["filter"])
        return k, options

    async def _documents(self, query: str, k: int, options: dict[str, Any]) -> list[Document]:
        episodes = await self.store.search(query, k, **options)
        return [
            task_document(ep, rank, self.include) for rank, ep in enumerate(episodes[:k], start=1)
        ]


def _narrowed(base: object, call: object) -> object:
    """The retriever's filter `base` AND a call's filter `call` (of the same kind)."""
    if call is None:
        return base
    if isinstance(base, Filter) and isinstance(call, Filter):
        return Filter(base.must + call.must, base.must_not + call.must_not)
    if isinstance(base, Mapping) and isinstance(call, Mapping):
        merged: dict[object, Any] = dict(base)  # pyright: ignore[reportUnknownArgumentType]
        for key, value in call.items():  # pyright: ignore[reportUnknownVariableType]
            if key in merged and merged[key] != value:
                raise ValidationError(
                    f"the call's filter sets {key!r} to {value!r} but the retriever's filter "
                    f"fixes it to {merged[key]!r}: a call's filter can only narrow the "
                    "retriever's"
                )
            # The key as given: the store refuses one it cannot take (a number, say), as it
            # would without a retriever's filter; str() would turn it into another key.
            merged[key] = value
        return merged
    raise ValidationError(
        "a call's filter must be of the same kind as the retriever's (both {key: value} "
        f"mappings or both plan Filters), got {type(call).__name__} and {type(base).__name__}"
    )
