"""Where task episodes live: the store base class, its protocol and what the two stores share.

Both stores append: every attempt at a task is its own episode, and only writing the same
episode id again replaces one. They return `read_recent` newest first, search with BM25 (the
JSONL store, in process) or with dense plus BM25 vectors fused in the engine (the Qdrant
store, embedded or on a server), and keep each `user_id`/`agent_id` apart when given.
"""

from __future__ import annotations

import json
import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

from episodex._common.errors import NotSupportedError, ValidationError
from episodex._common.text import clip
from episodex._common.validation import (
    INT64_MAX,
    INT64_MIN,
    id_problem,
    is_finite,
    is_integer,
    require_encodable,
    require_id,
    require_int,
    require_text,
)
from episodex._engines.plan import Filter
from episodex._engines.sparse import Bm25Encoder, require_bm25
from episodex._tasks.model import TIME_FORMAT, Episode

__all__ = [
    "EMBED_FIELDS",
    "BaseMemoryStore",
    "MetadataFilter",
    "SearchMode",
    "TaskSearchOptions",
    "TaskStore",
    "Tenant",
    "TornLine",
    "bm25_arg",
    "describe_store",
    "embedded_text_arg",
    "episode_arg",
    "episode_point_id",
    "id_arg",
    "known_options",
    "metadata_filter",
    "metadata_matches",
    "search_args",
    "tenant_arg",
    "tenant_key",
    "threshold_arg",
]

# The two stores live in `jsonl.py` and `qdrant.py` beside this module.

logger = logging.getLogger("episodex")

#: The fields embedded (and BM25-indexed) when `write` is given no `embedded_text`.
EMBED_FIELDS = ("instruction", "result", "additional_data", "error")

FilterValue = str | int | Sequence[str]
#: `{metadata key: value}`; a dotted key reaches into nested objects, a list value matches any.
MetadataFilter = Mapping[str, FilterValue]

#: How `QdrantTaskStore.search` finds candidates: both streams fused, or one alone.
SearchMode = Literal["hybrid", "dense", "bm25"]


class TaskSearchOptions(TypedDict, total=False):
    """The options of a task store's `search`; every key is optional.

    A store rejects, with `ValidationError`, an option it does not support: `JSONLTaskStore`
    takes `filter` and `score_threshold`; `QdrantTaskStore` takes all of them.
    """

    filter: MetadataFilter | Filter
    """Keep only episodes whose metadata matches.

    A `{metadata key: value}` mapping (a dotted key reaches into nested objects, a list of
    strings matches any of them; a key holding `"` or a backslash is refused, and brackets
    are part of a key's name); `QdrantTaskStore` also takes a plan `Filter` over the payload
    (`metadata.<key>`, `task_id`, `episode_id`, `completed_at`), passed through.
    """

    score_threshold: float | None
    """The least score kept: cosine similarity (`hybrid`, `dense`) or BM25 score (`bm25`,
    `JSONLTaskStore`). None keeps every hit."""

    mode: SearchMode
    """`hybrid` (default): dense and BM25 streams fused by weighted RRF; or one stream alone."""

    dense_weight: float
    """Fusion weight of the dense stream (default 1.0)."""

    bm25_weight: float
    """Fusion weight of the BM25 stream (default 1.0)."""

    rrf_k: int
    """The Reciprocal Rank Fusion constant (default 10)."""


#: Every option name of `TaskSearchOptions`, in definition order.
SEARCH_OPTION_NAMES: tuple[str, ...] = tuple(TaskSearchOptions.__annotations__)

# uuid5 namespace of episode ids. The first scheme derived point ids from task ids in another
# namespace, so no new point can land on a point stored under that scheme: such a point is
# replaced only through its `episode_id` payload (see `QdrantTaskStore._store`).
_EPISODE_NAMESPACE = uuid.UUID("0c6f3f0e-2b7d-4f41-8d55-6a1e9e4c2d17")

#: `(user_id, agent_id)` a store is scoped to; `(None, None)` for a store shared by everyone.
Tenant = tuple[str | None, str | None]


def tenant_arg(user_id: object, agent_id: object) -> Tenant:
    """Validate the optional `user_id`/`agent_id` of a task store."""
    checked: list[str | None] = []
    for name, value in (("user_id", user_id), ("agent_id", agent_id)):
        if value is None:
            checked.append(None)
            continue
        # The package's one id rule, as the other stores apply it: a lone surrogate passed
        # here failed the JSONL store's every write untyped, and a 600-character id was
        # stored by one store and refused by the others.
        problem = id_problem(value)
        if problem is not None:
            raise ValidationError(f"{name} must be None or a valid id: it {problem}")
        checked.append(str(value))
    return checked[0], checked[1]


def bm25_arg(value: object) -> Bm25Encoder:
    """The `bm25` option of a task store: None (the defaults) or a `Bm25Encoder`."""
    return require_bm25(value) or Bm25Encoder()


def tenant_key(tenant: Tenant) -> str:
    """One exact string for a tenant (JSON keeps case, spaces and accents apart)."""
    return json.dumps(list(tenant), ensure_ascii=True)


def episode_point_id(episode_id: str, tenant: Tenant = (None, None)) -> str:
    """The Qdrant point id of an episode: a UUID derived from its id and its tenant."""
    name = episode_id if tenant == (None, None) else f"{tenant_key(tenant)}\n{episode_id}"
    return str(uuid.uuid5(_EPISODE_NAMESPACE, name))


class BaseMemoryStore(ABC):
    """Base class of task-episode stores: the five calls every strategy relies on.

    Subclass it and implement `write`, `read_recent`, `count`, `search` and `summary` (a
    subclass missing one fails at construction). `delete` and `update` are optional: unless
    overridden they raise `NotSupportedError`. Strategies also accept any object with the
    five methods (duck typing), without subclassing.

    ```python
    from episodex import BaseMemoryStore, Episode, RecencyMemory

    class ListStore(BaseMemoryStore):
        def __init__(self) -> None:
            self.episodes: list[Episode] = []

        async def write(self, episode: Episode, embedded_text: str | None = None) -> None:
            self.episodes.append(episode)

        async def read_recent(self, n: int) -> list[Episode]:
            return sorted(self.episodes, key=lambda e: e.completed_at, reverse=True)[:n]

        async def count(self) -> int:
            return len(self.episodes)

        async def search(self, query: str, k: int = 3, **kwargs: object) -> list[Episode]:
            return [e for e in self.episodes if query.lower() in str(e.task).lower()][:k]

        async def summary(self) -> str:
            return f"ListStore: {len(self.episodes)} episodes"

    memory = RecencyMemory(ListStore(), n=2)
    ```
    """

    @abstractmethod
    async def write(self, episode: Episode, embedded_text: str | None = None) -> None:
        """Store an episode; `embedded_text` is what to index instead of its default text."""

    @abstractmethod
    async def read_recent(self, n: int) -> list[Episode]:
        """The `n` episodes completed last, newest first."""

    @abstractmethod
    async def count(self) -> int:
        """How many episodes are stored."""

    @abstractmethod
    async def search(self, query: str, k: int = 3, **kwargs: Any) -> list[Episode]:
        """Up to `k` episodes relevant to `query`, best first."""

    @abstractmethod
    async def summary(self) -> str:
        """What is held: count, date range, newest and oldest."""

    async def delete(self, id_: str) -> None:
        """Delete an episode by its id (optional: `NotSupportedError` unless overridden)."""
        raise NotSupportedError(
            f"{type(self).__name__} does not support delete; override delete() to offer it"
        )

    async def update(self, episode: Episode) -> None:
        """Replace a stored episode (optional: `NotSupportedError` unless overridden)."""
        raise NotSupportedError(
            f"{type(self).__name__} does not support update; override update() to offer it"
        )


@runtime_checkable
class TaskStore(Protocol):
    """What strategies need of a task-episode store (duck typed). Every method is async.

    `BaseMemoryStore` subclasses provide it; so does any object with these five methods.
    `delete` and `update` are optional extras a store may offer.
    """

    async def write(self, episode: Episode, embedded_text: str | None = None) -> None:
        """Store an episode; `embedded_text` is what to index instead of its default text."""
        ...

    async def read_recent(self, n: int) -> list[Episode]:
        """The `n` episodes completed last, newest first."""
        ...

    async def count(self) -> int:
        """How many episodes are stored."""
        ...

    async def search(self, query: str, k: int = 3, **kwargs: Any) -> list[Episode]:
        """Up to `k` episodes relevant to `query`, best first."""
        ...

    async def summary(self) -> str:
        """What is held: count, date range, newest and oldest."""
        ...


@dataclass(frozen=True, slots=True)
class TornLine:
    """A last line cut short by a crash mid-write, found when the store was opened.

    Attributes:
        line_number: Its line number in the file, starting at 1.
        offset: The byte offset where it began; the file was cut back to here.
        text: What was there (undecodable bytes replaced).
        saved_to: The side file the fragment was appended to, so nothing is lost.
    """

    line_number: int
    offset: int
    text: str
    saved_to: Path


# -- shared checks -----------------------------------------------------------------------


def episode_arg(value: object) -> Episode:
    """The episode a store writes, validated now.

    An `Episode` is frozen, but its `metadata` and `additional_data` dicts can still be changed
    in place after it was made, so it is checked again: a value no store can read back would
    otherwise be written (the JSONL file then fails to open) or fail half way through a write.
    """
    if isinstance(value, Episode):
        # Python mode, no serializer warnings: a changed value reaches the checks as it is.
        return Episode.parse(value.model_dump(warnings=False))
    if isinstance(value, Mapping):
        return Episode.parse(value)  # pyright: ignore[reportUnknownArgumentType]
    raise ValidationError(f"expected an Episode, got {type(value).__name__}")


def embedded_text_arg(episode: Episode, text: object) -> str:
    if text is None:
        return episode.format(mode="concat", include=EMBED_FIELDS)
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(f"embedded_text must be None or a non-empty string, got {text!r}")
    # Half a character failed the JSONL line's UTF-8 encoding or the embedder with a raw
    # UnicodeEncodeError on every store; it is the caller's input, refused by name.
    return require_encodable("embedded_text", text)


def id_arg(value: object) -> str:
    return require_id("id_", value)


def threshold_arg(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real) or not is_finite(value):
        raise ValidationError(f"score_threshold must be a finite number or None, got {value!r}")
    return float(value)


def search_args(
    query: object, k: object, options: Mapping[str, Any], allowed: Sequence[str], store: str
) -> tuple[str, int]:
    """The checked query and `k` of a `search`; `ValidationError` for an option `store` lacks."""
    known_options(options, allowed, store)
    return require_text("query", query), require_int("k", k)


def known_options(options: Mapping[str, Any], allowed: Sequence[str], store: str) -> None:
    """`ValidationError` unless every option of a `search` is one `store` takes."""
    unknown = sorted(set(options) - set(allowed), key=str)
    if unknown:
        raise ValidationError(
            f"{store}.search got unknown option(s) {unknown}; it accepts {sorted(allowed)}"
        )


def metadata_filter(value: object) -> dict[str, str | int | tuple[str, ...]]:
    """Validate a `{metadata key: value}` filter."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(
            f"filter must be a mapping of metadata keys to values, got {type(value).__name__}"
        )
    checked: dict[str, str | int | tuple[str, ...]] = {}
    for key, wanted in value.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
            raise ValidationError(
                f"filter key {key!r} must be a metadata key like 'user' or 'run.id'"
            )
        if '"' in key or "\\" in key:
            # No engine path can name such a key (Qdrant Edge refuses it, qdrant-client reads
            # it): refused by every store, so a filter means the same on each.
            raise ValidationError(
                f"filter key {key!r} holds a quote or a backslash, which the Qdrant engine "
                "cannot match; filter on a metadata key without them"
            )
        if isinstance(wanted, bool):
            # The embedded engine's binding reads True as the integer 1 and never matches a
            # JSON boolean, so a boolean filter would silently find nothing there.
            raise ValidationError(
                f"filter value for {key!r} is a boolean, which the embedded engine cannot match; "
                "store flags as strings (e.g. 'yes'/'no') and filter on those"
            )
        if is_integer(wanted):
            wanted = int(wanted)  # a numpy int64 is matched as the int it is
        if isinstance(wanted, int) and not INT64_MIN <= wanted <= INT64_MAX:
            # No episode holds one (metadata keeps 64-bit integers) and the engine cannot ask.
            raise ValidationError(
                f"filter value for {key!r} is {wanted}, outside the 64-bit range the store "
                "keeps integers in"
            )
        if isinstance(wanted, str | int):
            checked[key] = wanted
        elif (
            isinstance(wanted, Sequence) and wanted and all(isinstance(v, str) for v in wanted)  # pyright: ignore[reportUnknownVariableType]
        ):
            checked[key] = tuple(wanted)  # pyright: ignore[reportUnknownArgumentType]
        else:
            raise ValidationError(
                f"filter value for {key!r} must be a string, an integer or a non-empty "
                f"list of strings, got {wanted!r}"
            )
    return checked


def _lookup(metadata: Mapping[str, Any], key: str) -> Any:
    value: Any = metadata
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]  # pyright: ignore[reportUnknownVariableType]
    return value


def metadata_matches(
    metadata: Mapping[str, Any], flt: Mapping[str, str | int | tuple[str, ...]]
) -> bool:
    """In-process twin of the Qdrant filter: a list field matches if any element matches."""
    for key, wanted in flt.items():
        value = _lookup(metadata, key)
        values: list[Any] = list(value) if isinstance(value, list) else [value]  # pyright: ignore[reportUnknownArgumentType]
        options = wanted if isinstance(wanted, tuple) else (wanted,)
        # bool is an int in Python, not in JSON: compare types as well as values.
        if not any(type(v) is type(o) and v == o for v in values for o in options):
            return False
    return True


def describe_store(kind: str, count: int, newest: Episode | None, oldest: Episode | None) -> str:
    plural = "" if count == 1 else "s"
    if newest is None or oldest is None:
        return f"{kind}: {count} episode{plural}"
    newest_task = clip(newest.task.instruction, 60, ellipsis="...")
    oldest_task = clip(oldest.task.instruction, 60, ellipsis="...")
    lines = [
        f"{kind}: {count} episode{plural}, from {oldest.completed_at.strftime(TIME_FORMAT)} "
        f"to {newest.completed_at.strftime(TIME_FORMAT)} UTC",
        f"  newest: {newest.completed_at.strftime(TIME_FORMAT)} | {newest_task}",
        f"  oldest: {oldest.completed_at.strftime(TIME_FORMAT)} | {oldest_task}",
    ]
    return "\n".join(lines)
