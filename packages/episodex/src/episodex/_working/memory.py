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
from numbers import Real
from typing import Any, ClassVar

from episodex._common.errors import UnknownTagError, ValidationError
from episodex._common.validation import is_finite

__all__ = ["MemKey", "MemoryEntry", "TagSpec", "WorkingMemory"]

_KEY = re.compile(r"[a-z_][a-z0-9_]{0,63}")

# The original framework keys (Pangu-Agent's `MemKey` enum): name and value, in its order.
_ORIGINAL_KEYS: tuple[tuple[str, str], ...] = (
    ("AVAILABLE_ACTIONS", "_available_actions"),
    ("EXTERNAL_ACTION", "_action"),
    ("NEXT_PLANNED_ACTION", "_next_planned_action"),
    ("OBSERVATION", "_text_obs"),
    ("RAW_ACTION_OUTPUT", "_raw_action_output"),
    ("REWARD", "_reward"),
    ("TASK_CATEGORY", "_task_category"),
    ("THOUGHT", "_thought"),
    ("REFLECTION", "_reflection"),
    ("SUBPROBLEM", "_subproblem"),
    ("NEXT_PLANNED_ACTION_DIVERSE", "_next_possible_action_diverse"),
    ("DB_QUERY", "_db_query"),
    ("RAG_RETRIEVAL", "_rag_retrieval"),
    ("GOOGLE_QUERY", "_google_query"),
    ("LINK_RETRIEVED", "_link_retrieved"),
    ("NUM_CHUNKS", "_num_chunks"),
    ("SNIPPET_RETRIEVED", "_snippet_retrieved"),
    ("SUMMARIZED_TEXT", "_summarized_text"),
    ("TEXT_RETRIEVED", "_text_retrieved"),
    ("TITLE_RETRIEVED", "_title_retrieved"),
    ("FULL_EPS_REWARDS", "_full_eps_rewards"),
    ("FULL_EPS_TRAJECTORY", "_full_eps_trajectory"),
    ("TRAJECTORY", "_trajectory"),
)

# The names episodex gave some of those keys first; they stay attributes of `MemKey` and, in
# lower case, strings `MemKey(...)` accepts, all naming the original key.
_EXTENSION_NAMES: dict[str, str] = {
    "ACTION": "EXTERNAL_ACTION",
    "DIVERSE_NEXT_ACTIONS": "NEXT_PLANNED_ACTION_DIVERSE",
    "SEARCH_QUERY": "GOOGLE_QUERY",
    "SEARCH_LINK": "LINK_RETRIEVED",
    "SEARCH_SNIPPET": "SNIPPET_RETRIEVED",
    "SEARCH_SUMMARY": "SUMMARIZED_TEXT",
    "SEARCH_TEXT": "TEXT_RETRIEVED",
    "SEARCH_TITLE": "TITLE_RETRIEVED",
    "FULL_EPISODE_REWARDS": "FULL_EPS_REWARDS",
    "FULL_EPISODE_TRAJECTORY": "FULL_EPS_TRAJECTORY",
}


class _MemKeyType(type):
    """Makes the `MemKey` class behave like the original enum: iterable, sized, indexable."""

    def __iter__(cls) -> Iterator[MemKey]:
        """Every registered key once, the original ones first, in their order."""
        return iter(list(MemKey._keys))  # pyright: ignore[reportPrivateUsage]

    def __len__(cls) -> int:
        return len(MemKey._keys)  # pyright: ignore[reportPrivateUsage]

    def __getitem__(cls, name: str) -> MemKey:
        """The key of a member name (`MemKey["OBSERVATION"]`), as an enum does."""
        try:
            return MemKey._by_name[name]  # pyright: ignore[reportPrivateUsage]
        except (KeyError, TypeError):
            raise UnknownTagError(f"MemKey has no member named {name!r}") from None

    def __contains__(cls, value: object) -> bool:
        """Whether `value` is a key, or the value or an accepted name of one."""
        return isinstance(value, str) and value in MemKey._registry  # pyright: ignore[reportPrivateUsage]


class MemKey(str, metaclass=_MemKeyType):
    """A registered working-memory tag: a string, so it prints, hashes and compares as one.

    The original framework keys are members with their original names and values
    (`MemKey.OBSERVATION == "_text_obs"`, `MemKey.OBSERVATION.name == "OBSERVATION"`,
    `MemKey.NUM_CHUNKS`...), and `MemKey` iterates over them like the original enum
    (`set(MemKey)`, `MemKey["THOUGHT"]`). `MemKey("_thought")` returns the registered key and
    raises `UnknownTagError` for a name never registered; `MemKey.register("plan")` adds one
    (idempotent). The first names episodex used (`MemKey.ACTION`, `MemKey("observation")`,
    `MemKey.SEARCH_QUERY`...) still name the same keys.

    ```python
    from episodex import MemKey

    PLAN = MemKey.register("plan")
    assert MemKey("plan") is PLAN and PLAN == "plan" and PLAN.name == "PLAN"
    assert MemKey.EXTERNAL_ACTION is MemKey.ACTION and MemKey.ACTION.value == "_action"
    assert MemKey.NUM_CHUNKS in set(MemKey)
    ```
    """

    __slots__ = ()

    _registry: ClassVar[dict[str, MemKey]] = {}
    _keys: ClassVar[list[MemKey]] = []
    _names: ClassVar[dict[str, str]] = {}
    _by_name: ClassVar[dict[str, MemKey]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    AVAILABLE_ACTIONS: ClassVar[MemKey]
    EXTERNAL_ACTION: ClassVar[MemKey]
    NEXT_PLANNED_ACTION: ClassVar[MemKey]
    OBSERVATION: ClassVar[MemKey]
    RAW_ACTION_OUTPUT: ClassVar[MemKey]
    REWARD: ClassVar[MemKey]
    TASK_CATEGORY: ClassVar[MemKey]
    THOUGHT: ClassVar[MemKey]
    REFLECTION: ClassVar[MemKey]
    SUBPROBLEM: ClassVar[MemKey]
    NEXT_PLANNED_ACTION_DIVERSE: ClassVar[MemKey]
    DB_QUERY: ClassVar[MemKey]
    RAG_RETRIEVAL: ClassVar[MemKey]
    GOOGLE_QUERY: ClassVar[MemKey]
    LINK_RETRIEVED: ClassVar[MemKey]
    NUM_CHUNKS: ClassVar[MemKey]
    SNIPPET_RETRIEVED: ClassVar[MemKey]
    SUMMARIZED_TEXT: ClassVar[MemKey]
    TEXT_RETRIEVED: ClassVar[MemKey]
    TITLE_RETRIEVED: ClassVar[MemKey]
    FULL_EPS_REWARDS: ClassVar[MemKey]
    FULL_EPS_TRAJECTORY: ClassVar[MemKey]
    TRAJECTORY: ClassVar[MemKey]
    # The names episodex gave some of the keys above first.
    ACTION: ClassVar[MemKey]
    DIVERSE_NEXT_ACTIONS: ClassVar[MemKey]
    SEARCH_QUERY: ClassVar[MemKey]
    SEARCH_LINK: ClassVar[MemKey]
    SEARCH_SNIPPET: ClassVar[MemKey]
    SEARCH_SUMMARY: ClassVar[MemKey]
    SEARCH_TEXT: ClassVar[MemKey]
    SEARCH_TITLE: ClassVar[MemKey]
    FULL_EPISODE_REWARDS: ClassVar[MemKey]
    FULL_EPISODE_TRAJECTORY: ClassVar[MemKey]

    def __new__(cls, name: str) -> MemKey:
        if isinstance(name, MemKey):
            return name
        if not isinstance(name, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            # Looked up, bytes or None would be "never registered", and registering is no cure.
            raise ValidationError(
                f"a working-memory tag must be a MemKey or a str, got {type(name).__name__} "
                f"({name!r:.60})"
            )
        try:
            return cls._registry[name]
        except (KeyError, TypeError):
            raise UnknownTagError(
                f"unknown working-memory tag {name!r}; use a MemKey or register it first with "
                f"MemKey.register({name!r})"
            ) from None

    def __repr__(self) -> str:
        return f"<MemKey.{self.name}: {str.__repr__(self)}>"

    @property
    def name(self) -> str:
        """The member name: the original one for framework keys, else the value upper-cased."""
        return MemKey._names[str(self)]

    @property
    def value(self) -> str:
        """The key's string, as the original enum's `.value`."""
        return str.__str__(self)

    @classmethod
    def register(cls, name: str) -> MemKey:
        """Register a tag (lower-case letters, digits and `_`, starting with a letter or `_`).

        Registering a name again (or a name that already names a key) returns that key.
        """
        if not isinstance(name, str) or not _KEY.fullmatch(name):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValidationError(
                f"a tag name must be 1-64 lower-case letters, digits or '_', starting with a "
                f"letter or '_'; got {name!r}"
            )
        with cls._lock:
            return cls._register(name, name.upper())

    @classmethod
    def _register(cls, value: str, member: str) -> MemKey:
        key = cls._registry.get(value)
        if key is None:
            key = str.__new__(cls, value)
            cls._registry[value] = key
            cls._keys.append(key)
            cls._names[value] = member
            cls._by_name.setdefault(member, key)
        return key

    @classmethod
    def registered(cls) -> frozenset[MemKey]:
        """Every registered tag."""
        return frozenset(cls._keys)

    @classmethod
    def is_registered(cls, name: str) -> bool:
        """Whether `name` is a registered tag (or a name accepted for one)."""
        return name in cls._registry


def _install_framework_keys() -> None:
    for member, value in _ORIGINAL_KEYS:
        key = MemKey._register(value, member)  # pyright: ignore[reportPrivateUsage]
        setattr(MemKey, member, key)
    for alias, member in _EXTENSION_NAMES.items():
        setattr(MemKey, alias, getattr(MemKey, member))
        MemKey._by_name[alias] = getattr(MemKey, member)  # pyright: ignore[reportPrivateUsage]
    # The lower-case names episodex accepted first (`MemKey("observation")`) stay accepted.
    for member, _ in _ORIGINAL_KEYS:
        MemKey._registry.setdefault(member.lower(), getattr(MemKey, member))  # pyright: ignore[reportPrivateUsage]
    for alias, member in _EXTENSION_NAMES.items():
        MemKey._registry.setdefault(alias.lower(), getattr(MemKey, member))  # pyright: ignore[reportPrivateUsage]


_install_framework_keys()


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
    if isinstance(tags, bytes | bytearray | memoryview):
        # Iterable, but of numbers: each would be looked up as a tag (`unknown tag 95`).
        raise ValidationError(
            f"tags must be a tag (a MemKey or a str), a list or a set of tags, got "
            f"{type(tags).__name__} ({tags!r:.60}); decode it to a str first"
        )
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
        spelled: dict[MemKey, object] = {}
        for tag, weight in tags.items():  # pyright: ignore[reportUnknownVariableType]
            if isinstance(weight, bool) or not isinstance(weight, Real) or not is_finite(weight):
                raise ValidationError(
                    f"the weight of tag {tag!r} must be a finite number, got {weight!r}"
                )
            key = MemKey(tag)  # pyright: ignore[reportUnknownArgumentType]
            if key in spelled:
                # Two spellings of one tag ("observation", "_text_obs"): the later weight
                # would silently replace the earlier, by the order the mapping was written in.
                raise ValidationError(
                    f"tags {spelled[key]!r} and {tag!r} are the same tag (MemKey.{key.name}); "
                    "give its weight once"
                )
            spelled[key] = tag
            weights[key] = float(weight)  # pyright: ignore[reportUnknownArgumentType]
        if not weights:
            raise ValidationError("give at least one tag")
        return weights
    return dict.fromkeys(_tags(tags), 1.0)


def _scaled(weights: dict[MemKey, float]) -> dict[MemKey, float]:
    """The weights times one power of two (exact), the largest below 1 in magnitude.

    Ranking is the same at any positive scale, and at this one no sum of weights overflows
    (1.5e308 + 1.5e308 would be inf, tying a larger sum) or loses a weight.
    """
    top = max(abs(w) for w in weights.values())
    if top == 0.0:
        return weights
    shift = math.frexp(top)[1]
    scaled = {tag: math.ldexp(w, -shift) for tag, w in weights.items()}
    for tag, w in weights.items():
        if math.ldexp(scaled[tag], shift) != w:
            # Only a weight over 2**1000 times smaller than the largest loses bits here.
            raise ValidationError(
                f"the weight of tag {tag!r} ({w!r}) and the largest weight ({top!r}) are "
                "too far apart to compare their sums; give weights within 2**1000 of each other"
            )
    return scaled


def _score(weights: dict[MemKey, float], tags: frozenset[MemKey]) -> tuple[float, float]:
    """An entry's score (its tags' weights, summed exactly) and the size of what was summed."""
    matched = [weights[tag] for tag in tags if tag in weights]
    return math.fsum(matched), math.fsum(abs(w) for w in matched)


def _same_score(a: tuple[float, float], b: tuple[float, float]) -> bool:
    # Weights written in decimal are off in their last bits (0.1 + 0.2 != 0.3): scores within
    # a relative 1e-9, or within 1e-12 of the weights summed into them, are a tie, and the
    # newest entry wins it. The slack follows the weights, so a weight of 1e-13 is not 0.
    return math.isclose(a[0], b[0], rel_tol=1e-9, abs_tol=1e-12 * (a[1] + b[1]))


class WorkingMemory:
    """Tagged entries for one agent run, retrieved by summed tag weights.

    ```python
    from episodex import MemKey, WorkingMemory

    wm = WorkingMemory()
    wm.store("the door is locked", MemKey.OBSERVATION)
    wm.store("find the key first", {MemKey.THOUGHT, MemKey.NEXT_PLANNED_ACTION})
    wm.retrieve(MemKey.THOUGHT)                                 # 'find the key first'
    wm.retrieve({MemKey.OBSERVATION: 2.0, MemKey.THOUGHT: 1.0}) # 'the door is locked'
    wm.retrieve_entry(MemKey.THOUGHT).created_at                # the entry, with its time
    ```

    An entry scores the sum of the weights of the asked tags it carries; scores within a
    relative 1e-9 of each other are equal (and within 1e-12 of the weights summed, so a tiny
    weight still counts). Weights of any size are summed exactly, without overflow. As in the
    original design, `retrieve` returns the content of the best entry (the newest among
    equals) or None when the best score is not above 0, and `retrieve_all` the contents of
    every entry at the best score, newest first.
    `retrieve_entry` and `retrieve_all_entries` return the `MemoryEntry` objects instead.

    It is thread-safe: every call holds the memory's lock, so threads of one agent run can
    store, retrieve, tag and delete at once without losing an entry or a tag.
    """

    def __init__(self) -> None:
        self._entries: list[MemoryEntry] = []
        # Re-entrant: `delete` and `add_tags` find their targets with `_best`, which locks too.
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        # A lock cannot be copied or pickled; a copy gets a lock of its own.
        with self._lock:
            return {"entries": list(self._entries)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._entries = state["entries"]
        self._lock = threading.RLock()

    def __copy__(self) -> WorkingMemory:
        # `add_tags` and `rename` change an entry in place: a copy sharing the entries would
        # change the original's answers. Each entry is copied (its content shared, shallowly).
        clone = WorkingMemory()
        with self._lock:
            clone._entries = [
                MemoryEntry(created_at=e.created_at, content=e.content, tags=e.tags)
                for e in self._entries
            ]
        return clone

    def store(self, content: Any, tags: MemKey | str | Iterable[MemKey | str]) -> MemoryEntry:
        """Add an entry under one tag, a list or a set of tags; returns it."""
        keys = _tags(tags)
        with self._lock:
            # Timed under the lock, so the order entries are ranked in (their position) is
            # also the order of their times.
            entry = MemoryEntry(content=content, tags=keys)
            self._entries.append(entry)
        return entry

    def _best(self, tags: TagSpec) -> list[MemoryEntry]:
        weights = _scaled(_weights(tags))
        with self._lock:
            # Newest first, so among equal scores the newest comes first.
            scored = [(entry, _score(weights, entry.tags)) for entry in reversed(self._entries)]
        if not scored:
            return []
        # The ties are the entries within the tolerance of the highest score itself, so which
        # entries win depends on the scores alone, never on the order they were stored in
        # (the tolerance is not transitive: a ties b and b ties c does not make a tie c).
        top = max((score for _, score in scored), key=lambda score: score[0])
        if top[0] <= 0.0 or _same_score(top, (0.0, 0.0)):
            return []
        return [entry for entry, score in scored if _same_score(score, top)]

    def retrieve(self, tags: TagSpec) -> Any:
        """The content of the best entry (the newest among equals); None if no score is > 0."""
        winners = self._best(tags)
        return winners[0].content if winners else None

    def retrieve_all(self, tags: TagSpec) -> list[Any]:
        """The contents of every entry at the best score (above 0), newest first."""
        return [entry.content for entry in self._best(tags)]

    def retrieve_entry(self, tags: TagSpec) -> MemoryEntry | None:
        """The best-scoring entry itself (the newest among equals); None if no score is above 0."""
        winners = self._best(tags)
        return winners[0] if winners else None

    def retrieve_all_entries(self, tags: TagSpec) -> list[MemoryEntry]:
        """Every entry at the best score (above 0), newest first."""
        return self._best(tags)

    def __contains__(self, tags: object) -> bool:
        if isinstance(tags, MemoryEntry):
            with self._lock:
                return any(e is tags for e in self._entries)
        return bool(self._best(tags))  # pyright: ignore[reportArgumentType]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __iter__(self) -> Iterator[MemoryEntry]:
        """The entries, oldest first (as they were when iteration began)."""
        with self._lock:
            return iter(list(self._entries))

    def _targets(self, target: MemoryEntry | TagSpec) -> list[MemoryEntry]:
        """The entries a change applies to; the caller holds the lock."""
        if isinstance(target, MemoryEntry):
            if not any(e is target for e in self._entries):
                raise ValidationError("that entry is not in this working memory")
            return [target]
        return self._best(target)

    def add_tags(
        self, target: MemoryEntry | TagSpec, tags: MemKey | str | Iterable[MemKey | str]
    ) -> int:
        """Add tags to an entry, or to every entry `retrieve_all_entries(target)` finds.

        Returns how many entries were tagged.
        """
        new = _tags(tags)
        with self._lock:
            entries = self._targets(target)
            for entry in entries:
                entry.tags = entry.tags | new
        return len(entries)

    def delete(self, target: MemoryEntry | TagSpec) -> int:
        """Delete an entry, or every entry `retrieve_all_entries(target)` finds; returns how many."""
        with self._lock:
            doomed = {id(e) for e in self._targets(target)}
            self._entries = [e for e in self._entries if id(e) not in doomed]
        return len(doomed)

    def rename(self, old: MemKey | str, new: MemKey | str) -> int:
        """Replace tag `old` with `new` on every entry; returns how many entries changed."""
        old_key, new_key = MemKey(old), MemKey(new)
        changed = 0
        with self._lock:
            for entry in self._entries:
                if old_key in entry.tags:
                    entry.tags = (entry.tags - {old_key}) | {new_key}
                    changed += 1
        return changed

    def reset(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
