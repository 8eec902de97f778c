"""Working memory for one agent run (Pangu-Agent style): tagged entries, retrieved by tags.

An agent stores what it sees and thinks under tags (`MemKey.OBSERVATION`, `MemKey.THOUGHT`,
...), then asks for the entry that best matches a set of tags, optionally weighted. Tags
are registered keys: the framework's, plus any an application registers, so a typo raises
`UnknownTagError` instead of silently never matching.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from episodex._common.errors import UnknownTagError, ValidationError

__all__ = ["MemKey", "MemoryEntry", "TagSpec", "WorkingMemory"]

_KEY = re.compile(r"[a-z][a-z0-9_]{0,63}")


class MemKey(str):
    """A registered working-memory tag: a string, so it prints, hashes and compares as one.

    `MemKey("thought")` returns the registered key and raises `UnknownTagError` for a name
    that was never registered; `MemKey.register("plan")` adds one (idempotent).

    ```python
    from episodex import MemKey

    PLAN = MemKey.register("plan")
    assert MemKey("plan") is PLAN and PLAN == "plan"
    ```
    """

    __slots__ = ()

    _registry: ClassVar[dict[str, MemKey]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    AVAILABLE_ACTIONS: ClassVar[MemKey]
    ACTION: ClassVar[MemKey]
    NEXT_PLANNED_ACTION: ClassVar[MemKey]
    OBSERVATION: ClassVar[MemKey]
    RAW_ACTION_OUTPUT: ClassVar[MemKey]
    REWARD: ClassVar[MemKey]
    TASK_CATEGORY: ClassVar[MemKey]
    THOUGHT: ClassVar[MemKey]
    REFLECTION: ClassVar[MemKey]
    SUBPROBLEM: ClassVar[MemKey]
    DIVERSE_NEXT_ACTIONS: ClassVar[MemKey]
    DB_QUERY: ClassVar[MemKey]
    RAG_RETRIEVAL: ClassVar[MemKey]
    SEARCH_QUERY: ClassVar[MemKey]
    SEARCH_LINK: ClassVar[MemKey]
    SEARCH_SNIPPET: ClassVar[MemKey]
    SEARCH_SUMMARY: ClassVar[MemKey]
    SEARCH_TEXT: ClassVar[MemKey]
    SEARCH_TITLE: ClassVar[MemKey]
    FULL_EPISODE_REWARDS: ClassVar[MemKey]
    FULL_EPISODE_TRAJECTORY: ClassVar[MemKey]
    TRAJECTORY: ClassVar[MemKey]

    def __new__(cls, name: str) -> MemKey:
        if isinstance(name, MemKey):
            return name
        try:
            return cls._registry[name]
        except (KeyError, TypeError):
            raise UnknownTagError(
                f"unknown working-memory tag {name!r}; use a MemKey or register it first with "
                f"MemKey.register({name!r})"
            ) from None

    def __repr__(self) -> str:
        return f"MemKey({str.__repr__(self)})"

    @classmethod
    def register(cls, name: str) -> MemKey:
        """Register a tag (lower-case letters, digits and `_`, starting with a letter).

        Registering a name again returns the same key.
        """
        if not isinstance(name, str) or not _KEY.fullmatch(name):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(
                f"a tag name must be 1-64 lower-case letters, digits or '_', starting with a "
                f"letter; got {name!r}"
            )
        with cls._lock:
            key = cls._registry.get(name)
            if key is None:
                key = str.__new__(cls, name)
                cls._registry[name] = key
            return key

    @classmethod
    def registered(cls) -> frozenset[MemKey]:
        """Every registered tag."""
        return frozenset(cls._registry.values())

    @classmethod
    def is_registered(cls, name: str) -> bool:
        """Whether `name` is a registered tag."""
        return name in cls._registry


for _attr in (
    "AVAILABLE_ACTIONS",
    "ACTION",
    "NEXT_PLANNED_ACTION",
    "OBSERVATION",
    "RAW_ACTION_OUTPUT",
    "REWARD",
    "TASK_CATEGORY",
    "THOUGHT",
    "REFLECTION",
    "SUBPROBLEM",
    "DIVERSE_NEXT_ACTIONS",
    "DB_QUERY",
    "RAG_RETRIEVAL",
    "SEARCH_QUERY",
    "SEARCH_LINK",
    "SEARCH_SNIPPET",
    "SEARCH_SUMMARY",
    "SEARCH_TEXT",
    "SEARCH_TITLE",
    "FULL_EPISODE_REWARDS",
    "FULL_EPISODE_TRAJECTORY",
    "TRAJECTORY",
):
    setattr(MemKey, _attr, MemKey.register(_attr.lower()))
del _attr

#: One tag, several (list, tuple, set: each weighs 1.0), or `{tag: weight}`.
TagSpec = MemKey | str | Iterable[MemKey | str] | Mapping[MemKey | str, float]


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True, kw_only=True)
class MemoryEntry:
    """One thing the agent put in working memory.

    Attributes:
        created_at: When it was stored (each entry its own time, UTC).
        content: What was stored, any object.
        tags: The tags it is found by.
    """

    created_at: datetime = field(default_factory=_now)
    content: Any
    tags: frozenset[MemKey]


def _tags(tags: object) -> frozenset[MemKey]:
    if isinstance(tags, str):
        return frozenset((MemKey(tags),))
    if isinstance(tags, Mapping):
        raise ValidationError("store takes tags, not weights: pass one tag, a list or a set")
    if not isinstance(tags, Iterable):
        raise ValidationError(
            f"tags must be a tag, a list or a set of tags, got {type(tags).__name__}"
        )
    keys = frozenset(MemKey(t) for t in tags)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    if not keys:
        raise ValidationError("give at least one tag")
    return keys


def _weights(tags: object) -> dict[MemKey, float]:
    if isinstance(tags, Mapping):
        weights: dict[MemKey, float] = {}
        for tag, weight in tags.items():  # pyright: ignore[reportUnknownVariableType]
            if (
                isinstance(weight, bool)
                or not isinstance(weight, int | float)
                or not math.isfinite(weight)
            ):
                raise ValidationError(
                    f"the weight of tag {tag!r} must be a finite number, got {weight!r}"
                )
            weights[MemKey(tag)] = float(weight)  # pyright: ignore[reportUnknownArgumentType]
        if not weights:
            raise ValidationError("give at least one tag")
        return weights
    return dict.fromkeys(_tags(tags), 1.0)


class WorkingMemory:
    """Tagged entries for one agent run, retrieved by summed tag weights.

    ```python
    from episodex import MemKey, WorkingMemory

    wm = WorkingMemory()
    wm.store("the door is locked", MemKey.OBSERVATION)
    wm.store("find the key first", {MemKey.THOUGHT, MemKey.NEXT_PLANNED_ACTION})
    wm.retrieve(MemKey.THOUGHT).content                       # 'find the key first'
    wm.retrieve({MemKey.OBSERVATION: 2.0, MemKey.THOUGHT: 1.0}).content
    ```

    An entry scores the sum of the weights of the asked tags it carries. `retrieve` returns
    the best entry (the newest among equals) or None when the best score is not above 0;
    `retrieve_all` returns every entry at the best score, newest first.
    """

    def __init__(self) -> None:
        self._entries: list[MemoryEntry] = []

    def store(self, content: Any, tags: MemKey | str | Iterable[MemKey | str]) -> MemoryEntry:
        """Add an entry under one tag, a list or a set of tags; returns it."""
        entry = MemoryEntry(content=content, tags=_tags(tags))
        self._entries.append(entry)
        return entry

    def _best(self, tags: TagSpec) -> tuple[float, list[MemoryEntry]]:
        weights = _weights(tags)
        best, winners = 0.0, list[MemoryEntry]()
        # Newest first, so among equal scores the newest is found first.
        for entry in reversed(self._entries):
            score = sum(weights.get(tag, 0.0) for tag in entry.tags)
            if score > best:
                best, winners = score, [entry]
            elif score == best and winners:
                winners.append(entry)
        return best, winners

    def retrieve(self, tags: TagSpec) -> MemoryEntry | None:
        """The best-scoring entry (the newest among equals); None if no score is above 0."""
        winners = self._best(tags)[1]
        return winners[0] if winners else None

    def retrieve_all(self, tags: TagSpec) -> list[MemoryEntry]:
        """Every entry at the best score (above 0), newest first."""
        return self._best(tags)[1]

    def __contains__(self, tags: object) -> bool:
        if isinstance(tags, MemoryEntry):
            return any(e is tags for e in self._entries)
        return bool(self._best(tags)[1])  # pyright: ignore[reportArgumentType]

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[MemoryEntry]:
        """The entries, oldest first."""
        return iter(list(self._entries))

    def _targets(self, target: MemoryEntry | TagSpec) -> list[MemoryEntry]:
        if isinstance(target, MemoryEntry):
            if not any(e is target for e in self._entries):
                raise ValidationError("that entry is not in this working memory")
            return [target]
        return self._best(target)[1]

    def add_tags(
        self, target: MemoryEntry | TagSpec, tags: MemKey | str | Iterable[MemKey | str]
    ) -> int:
        """Add tags to an entry, or to every entry `retrieve_all(target)` finds; returns how many."""
        new = _tags(tags)
        entries = self._targets(target)
        for entry in entries:
            entry.tags = entry.tags | new
        return len(entries)

    def delete(self, target: MemoryEntry | TagSpec) -> int:
        """Delete an entry, or every entry `retrieve_all(target)` finds; returns how many."""
        doomed = {id(e) for e in self._targets(target)}
        self._entries = [e for e in self._entries if id(e) not in doomed]
        return len(doomed)

    def rename(self, old: MemKey | str, new: MemKey | str) -> int:
        """Replace tag `old` with `new` on every entry; returns how many entries changed."""
        old_key, new_key = MemKey(old), MemKey(new)
        changed = 0
        for entry in self._entries:
            if old_key in entry.tags:
                entry.tags = (entry.tags - {old_key}) | {new_key}
                changed += 1
        return changed

    def reset(self) -> None:
        """Forget every entry."""
        self._entries.clear()
