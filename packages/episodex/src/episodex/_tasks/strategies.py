"""Memory strategies over a task-episode store.

A strategy decides which episodes a new task should see: the latest (`RecencyMemory`), the
most similar (`SimilarityMemory`), both fused (`HybridMemory`), or the latest with a lesson
the LLM drew from each at record time (`ReflectiveMemory`). Every strategy renders the same
`<recalled_episodes>` block (`block.py`), within a token budget when given one, and several
strategies render one block together with `render_memories`.
"""

from __future__ import annotations

import asyncio
import html
import inspect
import logging
import string
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from numbers import Real
from typing import Any

from episodex._common.budget import require_budget
from episodex._common.errors import ConfigurationError, NotSupportedError, ValidationError
from episodex._common.llm import AnyLLM, ask, require_llm
from episodex._common.text import clip
from episodex._common.tokens import DEFAULT_ENCODING, TokenCounter, token_counter
from episodex._common.validation import require_int, require_weight
from episodex._tasks.block import Fields, fit_block, render_episodes
from episodex._tasks.model import Episode, Task, resolve_fields
from episodex._tasks.store import TaskStore

__all__ = [
    "REFLECTION_TEMPLATE",
    "BaseMemory",
    "HybridMemory",
    "RecencyMemory",
    "ReflectiveMemory",
    "SimilarityMemory",
    "TaskMemory",
    "render_episodes",
    "render_memories",
]

logger = logging.getLogger("episodex")


async def render_memories(
    memories: Iterable[TaskMemory],
    task: Task | str,
    *,
    max_tokens: int | None = None,
    include: Iterable[str] | None = None,
    encoding: str | TokenCounter = DEFAULT_ENCODING,
) -> str:
    """Recall from several memories into ONE `<recalled_episodes>` block.

    The memories' rankings are interleaved (each one's best, then each one's second...), an
    episode recalled twice is shown once, and a memory with nothing to say adds nothing:
    when none has anything, the result is `""`, not an empty block.

    Args:
        memories: The memories, the most trusted first.
        task: The task about to run (or its instruction).
        max_tokens: The budget for the whole block.
        include: The fields shown for every episode (default: each memory's own `include`).
        encoding: A tiktoken encoding name or a token-counting callable.
    """
    budget = require_budget(max_tokens)
    count = token_counter(encoding)  # before any memory is read, as the budget is
    # Read once into a list: a generator checked with all() and then recalled from is empty.
    listed = (
        list(memories)
        if isinstance(memories, Iterable) and not isinstance(memories, TaskMemory)  # pyright: ignore[reportUnnecessaryIsInstance]
        else None
    )
    if listed is None or not all(isinstance(m, TaskMemory) for m in listed):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValidationError("render_memories takes a list of memories (TaskMemory objects)")
    memories = listed
    for memory in memories:
        if not memory.ranks_episodes:
            raise ValidationError(
                f"{type(memory).__name__} implements recall() only, so its episodes cannot be "
                "interleaved with others; call its recall() on its own, or implement retrieve()"
            )
    if include is not None:
        resolve_fields(include)
    the_task = as_task(task)
    rankings = await asyncio.gather(*(m.retrieve(the_task) for m in memories))
    items: list[Fields] = []
    seen: set[str] = set()
    for rank in range(max((len(r) for r in rankings), default=0)):
        for memory, ranking in zip(memories, rankings, strict=True):
            if rank < len(ranking) and ranking[rank].id_ not in seen:
                seen.add(ranking[rank].id_)
                items.append(
                    ranking[rank].fields(include if include is not None else memory.include)
                )
    return fit_block(items, budget, count)


def as_task(task: object) -> Task:
    """A `Task`, or a new one for an instruction string."""
    if isinstance(task, Task):
        return task
    if isinstance(task, str):
        return Task(instruction=task)
    raise ValidationError(
        f"task must be a Task or an instruction string, got {type(task).__name__}"
    )


def _episode(value: object) -> Episode:
    if not isinstance(value, Episode):
        raise ValidationError(f"record takes an Episode, got {type(value).__name__}")
    return value


def _store_arg(store: object) -> TaskStore:
    if not isinstance(store, TaskStore) or not all(
        callable(getattr(store, name, None)) for name in _STORE_METHODS
    ):
        missing = [n for n in _STORE_METHODS if not callable(getattr(store, n, None))]
        raise ConfigurationError(
            "store must provide the async methods write, read_recent, count, search and summary "
            f"(a BaseMemoryStore or any object with them); {type(store).__name__} lacks {missing}"
        )
    return store


_STORE_METHODS = ("write", "read_recent", "count", "search", "summary")


def _check_search_kwargs(store: TaskStore, search_kwargs: Mapping[str, Any]) -> None:
    # Checked once here: a bad option would make every recall raise, and the adapters, which
    # survive a memory failure, would then run every task with no memories at all.
    taken = sorted({"query", "k"} & set(search_kwargs))
    if taken:
        raise ConfigurationError(
            f"search_kwargs must not hold {taken}: the memory passes the task and its own k"
        )
    check = getattr(store, "check_search_options", None)
    if callable(check):  # the bundled stores; a duck-typed store is checked at each search
        try:
            check(search_kwargs)
        except ValidationError as exc:
            raise ConfigurationError(f"search_kwargs: {exc}") from None


# -- strategies --------------------------------------------------------------------------


class TaskMemory(ABC):
    """A memory strategy: what to record, and which episodes a new task recalls.

    Subclasses implement `record`, `summary`, and either `retrieve` (ranked episodes, which
    `recall` renders as a block and `render_memories` interleaves with other memories) or,
    as in the original design, `recall(task) -> str` directly. A subclass that implements
    neither fails at construction.

    ```python
    from episodex import BaseMemory, Episode, Task

    class LastOnly(BaseMemory):  # the original shape: recall, record, summary
        def __init__(self) -> None:
            self.last: Episode | None = None

        async def recall(self, task: Task) -> str:
            return self.last.format() if self.last else ""

        async def record(self, episode: Episode) -> None:
            self.last = episode

        async def summary(self) -> str:
            return "one episode" if self.last else "empty"
    ```

    Args:
        include: The episode fields shown when recalling (None: the defaults).
        encoding: The tiktoken encoding (or a counting callable) for `max_tokens`.
    """

    # Class-level defaults, so a subclass that never calls `super().__init__()` still works.
    include: tuple[str, ...] | None = None
    encoding: str | TokenCounter = DEFAULT_ENCODING
    ranks_episodes: bool = True
    """False for a memory that implements `recall` only (it has no `retrieve` ranking)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        retrieve = cls.__dict__.get("retrieve", getattr(cls, "retrieve", None))
        ranks = retrieve is not TaskMemory.retrieve and retrieve is not _retrieve_or_recall
        if ranks or cls.recall is not TaskMemory.recall:
            if not ranks:
                # A memory written the original way renders its own block: no ranking needed.
                cls.retrieve = TaskMemory.retrieve  # type: ignore[method-assign]
        else:
            # Neither implemented: an abstract `retrieve` makes construction fail, as ABCs
            # do (ABCMeta reads the class after this hook).
            cls.retrieve = _retrieve_or_recall  # type: ignore[method-assign]
        cls.ranks_episodes = ranks

    def __init__(
        self,
        *,
        include: Iterable[str] | None = None,
        encoding: str | TokenCounter = DEFAULT_ENCODING,
    ) -> None:
        self.include = None
        if include is not None:
            resolve_fields(include)
            self.include = tuple(include)
        token_counter(encoding)  # an unknown encoding fails here, not at the first recall
        self.encoding = encoding

    async def retrieve(self, task: Task | str) -> list[Episode]:
        """The episodes this task should see, best first.

        Implement it (the strategies do), or implement `recall` instead as in the original
        design; a memory with only `recall` raises `NotSupportedError` here.
        """
        raise NotSupportedError(
            f"{type(self).__name__} implements recall() only and has no ranked episodes; "
            "implement retrieve() to use it with render_memories or recall_with"
        )

    @abstractmethod
    async def record(self, episode: Episode) -> Episode | None:
        """Store a finished episode; returns what was stored (None is allowed)."""

    @abstractmethod
    async def summary(self) -> str:
        """What the memory holds and how it recalls."""

    async def recall(self, task: Task | str, *, max_tokens: int | None = None) -> str:
        """The `<recalled_episodes>` block for this task (`""` when there is nothing to show).

        Args:
            task: The task about to run (or its instruction).
            max_tokens: The budget for the whole block.
        """
        budget = require_budget(max_tokens)
        episodes = await self.retrieve(as_task(task))
        return render_episodes(
            episodes, max_tokens=budget, include=self.include, encoding=self.encoding
        )


@abstractmethod
async def _retrieve_or_recall(self: TaskMemory, task: Task | str) -> list[Episode]:
    """Implement `retrieve` (ranked episodes) or `recall` (the rendered block)."""
    raise NotImplementedError


#: The name the original task-episode design gave the strategy base class.
BaseMemory = TaskMemory


class _StoreMemory(TaskMemory):
    """A strategy over one store: `record` writes there, `summary` is the store's, headed."""

    store: TaskStore

    def _recalls(self) -> str:
        """How this memory recalls, for `summary`."""
        raise NotImplementedError

    async def record(self, episode: Episode) -> Episode:
        """Write the episode to the store."""
        episode = _episode(episode)
        await self.store.write(episode)
        return episode

    async def summary(self) -> str:
        """The store's summary, under what this memory recalls."""
        return f"{type(self).__name__} ({self._recalls()}):\n{await self.store.summary()}"


class RecencyMemory(_StoreMemory):
    """Recalls the `n` episodes completed last, newest first.

    Args:
        store: Where episodes are kept.
        n: How many episodes to recall.
        include: The episode fields shown when recalling.
        encoding: The tiktoken encoding for `max_tokens`.
    """

    def __init__(
        self,
        store: TaskStore,
        n: int = 3,
        *,
        include: Iterable[str] | None = None,
        encoding: str | TokenCounter = DEFAULT_ENCODING,
    ) -> None:
        super().__init__(include=include, encoding=encoding)
        self.store = _store_arg(store)
        self.n = require_int("n", n, minimum=1, error=ConfigurationError)

    async def retrieve(self, task: Task | str) -> list[Episode]:
        """The last `n` episodes, newest first (the task does not matter)."""
        as_task(task)
        return await self.store.read_recent(self.n)

    def _recalls(self) -> str:
        return f"recalls the last {self.n}"


class SimilarityMemory(_StoreMemory):
    """Recalls the `k` episodes most relevant to the new task's instruction.

    Args:
        store: Where episodes are kept.
        k: How many episodes to recall.
        search_kwargs: Passed to `store.search` (e.g. `filter`, `score_threshold`).
        include: The episode fields shown when recalling.
        encoding: The tiktoken encoding for `max_tokens`.
    """

    def __init__(
        self,
        store: TaskStore,
        k: int = 3,
        search_kwargs: Mapping[str, Any] | None = None,
        *,
        include: Iterable[str] | None = None,
        encoding: str | TokenCounter = DEFAULT_ENCODING,
    ) -> None:
        super().__init__(include=include, encoding=encoding)
        self.store = _store_arg(store)
        self.k = require_int("k", k, minimum=1, error=ConfigurationError)
        if search_kwargs is not None and not isinstance(search_kwargs, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(
                f"search_kwargs must be a mapping, got {type(search_kwargs).__name__}"
            )
        self.search_kwargs: dict[str, Any] = dict(search_kwargs or {})
        _check_search_kwargs(self.store, self.search_kwargs)

    async def retrieve(self, task: Task | str) -> list[Episode]:
        """The `k` episodes the store ranks best for the task's instruction."""
        return await self.store.search(as_task(task).instruction, self.k, **self.search_kwargs)

    def _recalls(self) -> str:
        return f"recalls the {self.k} most similar"


class HybridMemory(_StoreMemory):
    """Recalls the latest and the most similar episodes, fused by weighted Reciprocal Rank Fusion.

    An episode in both lists is shown once, ranked by the sum of its two fused scores.

    Args:
        store: Where episodes are kept.
        n: How many recent episodes to consider.
        k: How many similar episodes to consider.
        search_kwargs: Passed to `store.search`.
        limit: The most episodes recalled (default: all of them, at most `n + k`).
        recency_weight: The weight of the recency ranking.
        similarity_weight: The weight of the similarity ranking.
        rrf_k: The RRF constant: higher flattens the difference between ranks.
        include: The episode fields shown when recalling.
        encoding: The tiktoken encoding for `max_tokens`.
    """

    def __init__(
        self,
        store: TaskStore,
        *,
        n: int = 3,
        k: int = 3,
        search_kwargs: Mapping[str, Any] | None = None,
        limit: int | None = None,
        recency_weight: float = 1.0,
        similarity_weight: float = 1.0,
        rrf_k: int = 60,
        include: Iterable[str] | None = None,
        encoding: str | TokenCounter = DEFAULT_ENCODING,
    ) -> None:
        super().__init__(include=include, encoding=encoding)
        self.recency = RecencyMemory(store, n)
        self.similarity = SimilarityMemory(store, k, search_kwargs)
        self.store = self.recency.store
        # A filter that confines the similar episodes (to one user, say) must confine the
        # recent ones too, or the latest episodes of everyone else would be recalled with them.
        self._recent_filter: object = self.similarity.search_kwargs.get("filter")
        if self._recent_filter is not None and not _reads_recent_with_filter(self.store):
            raise ConfigurationError(
                f"search_kwargs has a filter, but {type(self.store).__name__}.read_recent(n) "
                "takes none, so the recent episodes would not be filtered: give the store a "
                "read_recent(n, *, filter=None) (the bundled stores have one) or scope it "
                "with user_id/agent_id instead"
            )
        self.limit = (
            None
            if limit is None
            else require_int("limit", limit, minimum=1, error=ConfigurationError)
        )
        self.weights = (
            require_weight("recency_weight", recency_weight, error=ConfigurationError),
            require_weight("similarity_weight", similarity_weight, error=ConfigurationError),
        )
        if not any(self.weights):
            raise ConfigurationError(
                "recency_weight and similarity_weight are both 0: give one a weight > 0"
            )
        self.rrf_k = require_int("rrf_k", rrf_k, minimum=1, error=ConfigurationError)

    async def retrieve(self, task: Task | str) -> list[Episode]:
        """Recent and similar episodes, fused, best first."""
        the_task = as_task(task)
        recent_read = (
            self.recency.retrieve(the_task)
            if self._recent_filter is None
            else _read_recent(self.store, self.recency.n, self._recent_filter)
        )
        recent, similar = await asyncio.gather(recent_read, self.similarity.retrieve(the_task))
        scores: dict[str, float] = {}
        firsts: dict[str, tuple[int, int]] = {}
        episodes: dict[str, Episode] = {}
        for stream, (ranking, weight) in enumerate(
            ((similar, self.weights[1]), (recent, self.weights[0]))
        ):
            for rank, episode in enumerate(ranking, start=1):
                if weight <= 0:
                    continue
                scores[episode.id_] = scores.get(episode.id_, 0.0) + weight / (self.rrf_k + rank)
                firsts.setdefault(episode.id_, (rank, stream))
                episodes.setdefault(episode.id_, episode)
        # Ties (same fused score): the better single rank first, similarity before recency.
        ordered = sorted(scores, key=lambda i: (-scores[i], firsts[i]))
        if self.limit is not None:
            ordered = ordered[: self.limit]
        return [episodes[i] for i in ordered]

    def _recalls(self) -> str:
        return f"fuses the last {self.recency.n} and the {self.similarity.k} most similar"


def _reads_recent_with_filter(store: TaskStore) -> bool:
    """Whether `store.read_recent` takes a `filter` keyword (the bundled stores' does)."""
    try:
        parameters = inspect.signature(store.read_recent).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD
        or (p.name == "filter" and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
        for p in parameters
    )


async def _read_recent(store: TaskStore, n: int, flt: object) -> list[Episode]:
    read: Any = store.read_recent  # the protocol's read_recent has no filter; checked above
    episodes: list[Episode] = await read(n, filter=flt)
    return episodes


REFLECTION_TEMPLATE = """\
You just finished the task below.

Task: {instruction}
Result: {result}
Error: {error}

In one sentence, state the lesson from this attempt that would help with similar tasks."""

_TEMPLATE_FIELDS = frozenset({"instruction", "result", "error", "rollout"})


#: A store without a `tenant` (a custom one): nothing to compare.
_NO_TENANT = object()


class ReflectiveMemory(_StoreMemory):
    """Asks an LLM for a one-sentence lesson as each episode is recorded (Reflexion).

    The lesson is stored as `additional_data["reflection"]` on a copy of the episode, so the
    caller's episode is never changed, and shows up in every recall. When the LLM call fails
    (raises, times out, or answers with no text), the episode is recorded without a lesson:
    the failure is logged on the `episodex` logger and counted in `reflection_failures`.

    ```python
    from episodex import Episode, JSONLTaskStore, ReflectiveMemory, Task, TaskResult

    async def llm(prompt: str) -> str:  # any async str -> str; the adapters turn
        return "Check the units first."  # LangChain and LlamaIndex models into one

    memory = ReflectiveMemory(JSONLTaskStore("./agent-memory"), llm, n=3)
    task = Task(instruction="Convert 3 miles to km")
    episode = Episode(task=task, result=TaskResult(task_id=task.id_, content="4.83 km"))
    stored = await memory.record(episode)
    print(stored.additional_data["reflection"])  # -> Check the units first.
    print(await memory.recall("Convert 5 miles to km", max_tokens=400))  # -> <reflection>
    ```

    Args:
        store: Where episodes are kept.
        llm: A function from prompt to text: async, or plain (called in a worker thread, so
            the event loop runs on while it waits for the model).
        n: How many recent episodes to recall (unless `recall_with` is given).
        template: The reflection prompt; it may use `{instruction}`, `{result}`, `{error}`
            and `{rollout}`, and must use `{instruction}`. Each is filled in on one line
            (line breaks folded) with `<`, `>` and `&` escaped, so an episode's text can
            neither add a line of its own nor close tags the template quotes it in.
        timeout: Seconds to wait for the LLM before recording without a lesson.
        max_reflection_chars: The longest lesson kept (a longer answer is shortened).
        recall_with: Another memory over the same store to recall with (e.g. a
            `HybridMemory`) instead of the last `n`; one over another user's or agent's store
            is refused (`ConfigurationError`).
        include: The episode fields shown when recalling.
        encoding: The tiktoken encoding for `max_tokens`.
    """

    def __init__(
        self,
        store: TaskStore,
        llm: AnyLLM,
        n: int = 3,
        *,
        template: str = REFLECTION_TEMPLATE,
        timeout: float | None = None,
        max_reflection_chars: int = 1000,
        recall_with: TaskMemory | None = None,
        include: Iterable[str] | None = None,
        encoding: str | TokenCounter = DEFAULT_ENCODING,
    ) -> None:
        super().__init__(include=include, encoding=encoding)
        self.store = _store_arg(store)
        self.llm: AnyLLM = require_llm(llm)
        self.n = require_int("n", n, minimum=1, error=ConfigurationError)
        self.template = _template_arg(template)
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, Real) or not timeout > 0  # pyright: ignore[reportUnnecessaryIsInstance]
        ):
            raise ConfigurationError(
                f"timeout must be a number of seconds > 0 or None, got {timeout!r}"
            )
        self.timeout = timeout
        self.max_reflection_chars = require_int(
            "max_reflection_chars", max_reflection_chars, minimum=1, error=ConfigurationError
        )
        if recall_with is not None and (
            not isinstance(recall_with, TaskMemory) or not recall_with.ranks_episodes  # pyright: ignore[reportUnnecessaryIsInstance]
        ):
            raise ConfigurationError(
                "recall_with must be a memory that ranks episodes (implements retrieve), got "
                f"{type(recall_with).__name__}"
            )
        # A memory over another user's or agent's store would recall their episodes into
        # this one's prompts: only the tenant this memory writes for may be recalled.
        other = getattr(recall_with, "store", None)
        theirs, ours = (
            getattr(other, "tenant", _NO_TENANT),
            getattr(self.store, "tenant", _NO_TENANT),
        )
        if _NO_TENANT not in (theirs, ours) and theirs != ours:
            raise ConfigurationError(
                f"recall_with recalls from the store of user/agent {theirs!r}, and this memory "
                f"writes to the store of {ours!r}: give it a memory over this store (or one "
                "of the same user_id and agent_id)"
            )
        self.recall_with = recall_with
        self.reflection_failures = 0
        """How many episodes were recorded without a lesson because the LLM call failed."""
        self.last_reflection_error: BaseException | None = None
        """The most recent LLM failure, if any."""

    async def reflect(self, episode: Episode) -> str:
        """Ask the LLM for the lesson of one episode; raises what the LLM call raises."""
        prompt = self.template.format(
            instruction=_quoted(episode.task.instruction),
            result=_quoted(episode.result.content) if episode.result is not None else "(no result)",
            error=_quoted(episode.error or "") or "(none)",
            rollout=_quoted(episode.rollout),
        )
        answer = await asyncio.wait_for(ask(self.llm, prompt), self.timeout)
        # An answer without one letter or digit ("\x00", a zero-width space, "...") would be
        # stored and shown in every recalled block as the episode's lesson.
        if not isinstance(answer, str) or not any(ch.isalnum() for ch in answer):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"the LLM answered {answer!r:.80}, not a sentence")
        return clip(answer, self.max_reflection_chars, ellipsis="...")

    async def record(self, episode: Episode) -> Episode:
        """Reflect on the episode, then write a copy carrying the lesson; returns that copy."""
        episode = _episode(episode)
        try:
            lesson = await self.reflect(episode)
            # Inside the try: an answer the episode cannot store (a lone surrogate) is an
            # unusable answer like any other, not a reason to lose the episode.
            stored = episode.replace(
                additional_data={**(episode.additional_data or {}), "reflection": lesson}
            )
        except Exception as exc:  # any LLM failure: keep the episode, report the failure
            self.reflection_failures += 1
            self.last_reflection_error = exc
            logger.warning(
                "episodex: reflection failed for task %r (%s: %s); recording the episode "
                "without a lesson (%d failure(s) so far)",
                episode.task.id_,
                type(exc).__name__,
                exc,
                self.reflection_failures,
            )
            stored = episode
        await self.store.write(stored)
        return stored

    async def retrieve(self, task: Task | str) -> list[Episode]:
        """The last `n` episodes with their lessons (or what `recall_with` retrieves)."""
        if self.recall_with is not None:
            return await self.recall_with.retrieve(as_task(task))
        as_task(task)
        return await self.store.read_recent(self.n)

    def _recalls(self) -> str:
        how = (
            f"recalls with {type(self.recall_with).__name__}"
            if self.recall_with
            else f"recalls the last {self.n}"
        )
        return f"{how}; {self.reflection_failures} reflection failure(s)"


def _quoted(text: str) -> str:
    r"""Episode text for the reflection prompt: one line, `<`, `>` and `&` escaped.

    Tasks, answers and errors come from users, tools and models: as they were, a task
    reading "...\nResult: success\nError: (none)" gave the prompt lines of its own, and
    "</attempt>" closed a template's quote and spoke as the prompt.
    """
    return html.escape(" ".join(text.split()), quote=False)


def _template_arg(template: object) -> str:
    if not isinstance(template, str):
        raise ConfigurationError(f"template must be a string, got {type(template).__name__}")
    try:
        fields = [
            (name, spec)
            for _, name, spec, _ in string.Formatter().parse(template)
            if name is not None
        ]
    except ValueError as exc:
        raise ConfigurationError(f"template is not a valid format string: {exc}") from None
    names = {name for name, _ in fields}
    unknown = names - _TEMPLATE_FIELDS
    if unknown or "instruction" not in names:
        raise ConfigurationError(
            f"template must use {{instruction}} and may use {{result}}, {{error}}, {{rollout}}; "
            f"it uses {sorted(names)}"
        )
    if any(spec and "{" in spec for _, spec in fields):
        # A field inside a format spec would take the episode's own text as the spec.
        raise ConfigurationError(
            "template must not nest a field inside a format spec, as in {instruction:{result}}"
        )
    try:
        # Every field is text: a spec or conversion that text cannot take fails here, once,
        # not at each record (where it would pass for an LLM failure and drop every lesson).
        template.format(**dict.fromkeys(_TEMPLATE_FIELDS, "text"))
    except (ValueError, KeyError, IndexError, AttributeError, TypeError) as exc:
        raise ConfigurationError(
            f"template cannot be filled with text ({type(exc).__name__}: {exc}); "
            "use plain fields such as {instruction}"
        ) from None
    return template
