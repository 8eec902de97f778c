"""`EpisodicMemoryMiddleware`: episodic memory for LangChain v1 agents (`create_agent`)."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from numbers import Integral
from typing import Any, Literal, Protocol, cast, runtime_checkable

from episodex import (
    AnyLLM,
    ConfigurationError,
    ConversationEpisode,
    EpisodeRecorder,
    MemoryScope,
    RecorderStats,
    SyncStepLessonMemory,
    ValidationError,
    require_id,
    run_sync,
)
from episodex import EpisodicMemory as CoreMemory
from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)

from langchain_episodex._branches import forget_left_branches, line_episodes
from langchain_episodex._checkpoints import athread_root, thread_root
from langchain_episodex._context import run_scope
from langchain_episodex._llm import from_langchain
from langchain_episodex._options import check_recall_options, core_memory
from langchain_episodex._recall import arecall_block, recall_block
from langchain_episodex._run_positions import (
    run_episode_id,
    run_messages,
    run_position,
    run_start,
    thread_end,
    thread_positions,
)
from langchain_episodex._settings import check_flag, check_ids
from langchain_episodex._summaries import (
    message_text,
    readable,
    readable_page,
    recorded_line,
    reflect_summaries,
    run_episodes,
)
from langchain_episodex._tool import create_memory_search_tool

try:
    from typing import Annotated, NotRequired

    from langchain.agents.middleware.types import (
        AgentMiddleware,
        AgentState,
        ModelCallResult,
        ModelRequest,
        ModelResponse,
        OmitFromInput,
        PrivateStateAttr,
    )
    from langgraph.config import get_config
    from langgraph.runtime import Runtime
    from typing_extensions import TypedDict
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        'EpisodicMemoryMiddleware needs langchain v1: pip install "langchain-episodex[agents]"'
    ) from exc

__all__ = ["EpisodicMemoryMiddleware", "LessonSource"]

logger = logging.getLogger("langchain_episodex")

_RESERVED_KEYS = frozenset({"messages", "jump_to", "structured_response"})

EnvGetter = Callable[[Mapping[str, Any], Runtime[Any]], Any]
StateGetter = Callable[[Mapping[str, Any], Runtime[Any]], str | Awaitable[str]]


@runtime_checkable
class LessonSource(Protocol):
    """Where `mode="lessons"` gets its block: episodex's `StepLessonMemory` fits this.

    So does its `SyncStepLessonMemory`: a synchronous `lessons_block` is called in the thread
    that runs the model call. The lesson lifecycle (`init_episode`, recording steps,
    `end_episode`) stays with the application; the middleware only asks for the block of the
    current state.
    """

    def lessons_block(self, current_env: Any, current_state: str) -> Awaitable[str] | str:
        """The REPEAT/AVOID block for the current page and internal state (`""` for none)."""
        ...


def _last_text(messages: Sequence[BaseMessage], kind: type[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, kind):
            return message_text(message)
    return ""


def _storable_tool(name: str) -> bool:
    """Whether the store takes a tool name the model wrote (a hallucinated one may be too long).

    One it refuses is left out of `tools_invoked`, or the whole episode would be refused.
    """
    try:
        require_id("tool name", name)
    except ValidationError:
        return False
    return True


def _tool_names(names: object, mode: str) -> list[str]:
    """`memory_tools` as a list of names (`ConfigurationError` for anything else)."""
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ConfigurationError(f"memory_tools must be a list of tool names, got {names!r:.80}")
    items = list(cast("Sequence[object]", names))
    if not all(isinstance(name, str) and name.strip() for name in items):
        raise ConfigurationError(f"memory_tools must be non-empty tool names, got {items!r:.80}")
    if items and mode != "episodes":
        raise ConfigurationError("memory_tools is for mode='episodes'")
    return cast("list[str]", items)


def _with_block(system: SystemMessage | None, block: str) -> SystemMessage:
    if system is None:
        return SystemMessage(content=block)
    content = system.content
    if isinstance(content, str):
        new_content: Any = f"{content}\n\n{block}" if content else block
    else:
        new_content = [*content, {"type": "text", "text": block}]
    return system.model_copy(update={"content": new_content})


def _thread_id() -> str | None:
    try:
        thread = (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:  # outside a LangGraph run
        return None
    return None if thread is None else str(thread)


def _default_current_state(state: Mapping[str, Any], runtime: Runtime[Any]) -> str:
    # The agent's own latest words are its internal state; before it spoke, the user's request.
    messages: list[BaseMessage] = state.get("messages", [])
    return _last_text(messages, AIMessage) or _last_text(messages, HumanMessage)


class EpisodicMemoryMiddleware(AgentMiddleware[AgentState[Any], Any]):
    """Episodic memory for `create_agent`: recall at the start of a run, record it at the end.

    In `mode="episodes"` (the default):

    - before the agent runs, the episodes relevant to the last user message are recalled
      once and kept in the state field `state_key` (the `<recalled_episodes>` block);
    - every model call gets that block appended to its system message (in `wrap_model_call`
      and `awrap_model_call`); it is never written into the message history;
    - after the agent finishes, the run is recorded as one episode: the run's first user
      message, its final answer and the tools it invoked (summarised by `reflection_model`
      when one is given). A run whose stream the consumer stopped before that step (it broke
      out of `agent.stream`, closed `astream`) is recorded by the next run of its thread.
      A run LangGraph runs again from a checkpoint (`invoke(None, config)` with a
      `checkpoint_id`, or a new input there) replaces the record of the run it re-ran, and
      the runs after that one on the branch the thread left are forgotten (those recorded
      by this version onwards).

    Memory never costs the user the answer: a failed recall runs the agent without the block
    and a failed record keeps the episode in a bounded queue (`EpisodeRecorder`) that is
    written before the next episode and on `flush()`; both are logged and counted in
    `stats()`. With a checkpointer, episodes of the same thread that are already in the
    message history are not recalled again; those a middleware that summarises or trims the
    history (`SummarizationMiddleware`) took out of it are (an episode's message positions
    count every message of the thread, not only those left in the history). A long run
    whose own question such a middleware takes out before the run ends is still recorded:
    the run state keeps its input for that.

    In `mode="lessons"`, every model call instead gets the REPEAT/AVOID block of step lessons
    for the current environment and state, from `lessons` (episodex's `StepLessonMemory`).

    Recall is an `EpisodicRetriever` run under the agent's run, so callback handlers and
    LangSmith see its query and documents. With `search_tool=True` the agent also gets
    `create_memory_search_tool`'s tool, to search its memory when it decides to.

    Ids follow the package's one rule (see `EpisodicContext`): the ids given to the
    constructor win, then the runtime context (`context=`), then the config's
    `configurable` (so `agent.batch(inputs, config=[per-user configs])` works), and for the
    conversation the LangGraph `thread_id`, then a new id per run.

    Setup:
        `pip install "langchain-episodex[agents]"`

    Instantiate:
        ```python
        # docs: no-run (needs a chat model; examples/langchain_agent_middleware.py runs this offline)
        from episodex import EpisodicMemory
        from langchain.agents import create_agent
        from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware

        memory = EpisodicMemory(path="./memory")
        agent = create_agent(model, tools=[...], system_prompt="You are a support agent.",
                             middleware=[EpisodicMemoryMiddleware(memory, agent_id="support")],
                             context_schema=EpisodicContext)
        ```

    Use:
        ```python
        # docs: no-run (continues the block above)
        agent.invoke({"messages": [{"role": "user", "content": "Where is my refund?"}]},
                     context={"user_id": "u1", "conversation_id": "c7"})
        ```

    Async:
        ```python
        # docs: no-run (continues the block above)
        await agent.ainvoke({"messages": [...]}, context={"user_id": "u1"})
        ```

    Args:
        memory: The core memory (mode `episodes`).
        mode: `episodes` recalls and records conversation episodes; `lessons` injects step
            lessons.
        user_id: The user, for every run (None: from the runtime context or config).
        agent_id: The agent, for every run (None: from the runtime context or config).
        conversation_id: The conversation, for every run (None: from the runtime context,
            config or thread).
        state_key: The state field holding the recalled block; also names the middleware
            (`EpisodicMemoryMiddleware[state_key]`), so two instances need two keys.
        name: The middleware name, instead of the one derived from `state_key`.
        max_tokens: Token budget of the recalled block (mode `episodes`).
        recall_options: Extra `EpisodicMemory.recall` options (mode `episodes`).
        record: Record each finished run as an episode.
        reflection_model: A LangChain model, or a `prompt -> text` function (async, or
            plain: called in a worker thread), that writes the episode's summaries; None
            records plain summaries.
        lessons: The lesson source (mode `lessons`).
        env: `(state, runtime) -> environment` for lessons, async or plain: what the agent
            sees now, an `EnvState` or a mapping with `url`, `page`, `elements` (mode
            `lessons`).
        current_state: `(state, runtime) -> text` of the agent's internal state for
            lessons, async or plain; default: its last message, else the user's.
        deferred: Record in a background thread, so a run does not wait for embedding;
            `flush()` (or `aflush()`) waits for it.
        max_pending: Most episodes kept while the store fails.
        spill_path: A JSONL file that keeps the episodes a failed write leaves waiting, so
            a restart loses none (None keeps them in memory, dropping the oldest beyond
            `max_pending`).
        search_tool: Give the agent the memory search tool (mode `episodes`).
        memory_tools: Names of the agent's other tools whose replies are recalled memory (a
            `create_retriever_tool` over an `EpisodicRetriever`, a tool of your own that
            answers with its documents): their replies are recorded as a `[recalled
            episodes]` marker, not as words of this conversation (mode `episodes`). A reply
            that carries the retriever's documents as its artifact, or a
            `<recalled_episodes>` block, is known without being named, and only the recalled
            part of it becomes the marker.
    """

    def __init__(
        self,
        memory: CoreMemory | Any | None = None,
        *,
        mode: Literal["episodes", "lessons"] = "episodes",
        user_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
        state_key: str | None = None,
        name: str | None = None,
        max_tokens: int | None = None,
        recall_options: Mapping[str, Any] | None = None,
        record: bool = True,
        reflection_model: BaseLanguageModel[Any] | AnyLLM | None = None,
        lessons: LessonSource | SyncStepLessonMemory | None = None,
        env: EnvGetter | None = None,
        current_state: StateGetter | None = None,
        deferred: bool = False,
        max_pending: int = 1000,
        spill_path: str | os.PathLike[str] | None = None,
        search_tool: bool = False,
        memory_tools: Sequence[str] = (),
    ) -> None:
        super().__init__()
        # Checked first: `deferred` goes to the recorder below, `record` and `search_tool`
        # are read at every run, and any non-empty text (`"no"`) was taken as yes.
        record = check_flag("record", record)
        deferred = check_flag("deferred", deferred)
        search_tool = check_flag("search_tool", search_tool)
        if mode not in ("episodes", "lessons"):
            raise ConfigurationError(f"mode must be 'episodes' or 'lessons', got {mode!r}")
        self.mode = mode
        memory = core_memory(memory)
        if mode == "episodes":
            if not isinstance(memory, CoreMemory):
                raise ConfigurationError(
                    f"mode='episodes' needs memory=, an episodex EpisodicMemory; got {type(memory).__name__}"
                )
            if lessons is not None or env is not None or current_state is not None:
                raise ConfigurationError("lessons=, env= and current_state= are for mode='lessons'")
        else:
            if not isinstance(lessons, SyncStepLessonMemory) and not isinstance(
                lessons, LessonSource
            ):
                raise ConfigurationError(
                    "mode='lessons' needs lessons=, an object with "
                    f"`lessons_block(current_env, current_state)`; got {type(lessons).__name__}"
                )
            if env is None or not callable(env):
                raise ConfigurationError(
                    "mode='lessons' needs env=, a function (state, runtime) -> environment"
                )
            if current_state is not None and not callable(current_state):
                raise ConfigurationError("current_state must be a function (state, runtime) -> str")
            # Lessons mode neither recalls nor records episodes: these were taken and never
            # used (a `max_tokens` that capped nothing), refused like `search_tool=True`.
            given = {
                "max_tokens": max_tokens is not None,
                "recall_options": recall_options is not None,
                "reflection_model": reflection_model is not None,
                "spill_path": spill_path is not None,
                "deferred": deferred is not False,
            }
            refused = [option for option, set_ in given.items() if set_]
            if refused:
                raise ConfigurationError(
                    f"{', '.join(refused)} {'is' if len(refused) == 1 else 'are'} for "
                    "mode='episodes'; lessons mode gives the lesson source's block as it is"
                )
        self.memory: CoreMemory | None = memory if mode == "episodes" else None
        self._memory_tools = _tool_names(memory_tools, mode)
        self.recorder: EpisodeRecorder | None = (
            EpisodeRecorder(
                self.memory,
                deferred=deferred,
                max_pending=max_pending,
                spill_path=spill_path,
                on_written_later=functools.partial(forget_left_branches, self.memory),
            )
            if self.memory is not None
            else None
        )
        self._recall_failures = 0
        self.lessons = lessons
        self._env = env
        self._current_state: StateGetter = current_state or _default_current_state
        self.defaults = {
            "user_id": user_id,
            "agent_id": agent_id,
            "conversation_id": conversation_id,
        }
        check_ids(self.defaults)
        state_key = state_key if state_key is not None else f"recalled_{mode}"
        if (
            not isinstance(state_key, str)  # pyright: ignore[reportUnnecessaryIsInstance]
            or not state_key.isidentifier()
            or state_key in _RESERVED_KEYS
        ):
            raise ConfigurationError(
                f"state_key must be an identifier other than {sorted(_RESERVED_KEYS)}, got {state_key!r}"
            )
        self.state_key = state_key
        self._run_key = f"{state_key}_run"
        if name is not None and (not isinstance(name, str) or not name.strip()):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"name must be a non-empty string, got {name!r}")
        self._name = name or f"EpisodicMemoryMiddleware[{state_key}]"
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, Integral) or max_tokens < 0  # pyright: ignore[reportUnnecessaryIsInstance]
        ):
            raise ConfigurationError(f"max_tokens must be an integer >= 0, got {max_tokens!r}")
        # A numpy integer as the Python int it equals.
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        try:
            self.recall_options = check_recall_options(
                recall_options or {}, self.__class__.__name__, memory=self.memory
            )
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        self.record = record
        if reflection_model is None or isinstance(reflection_model, BaseLanguageModel):
            self._reflect: AnyLLM | None = (
                None if reflection_model is None else from_langchain(reflection_model)
            )
        elif callable(reflection_model):
            self._reflect = reflection_model
        else:
            raise ConfigurationError(
                "reflection_model must be a LangChain model or a function from prompt to text "
                f"(async or plain), got {type(reflection_model).__name__}"
            )
        # Per instance, so two middlewares keep their blocks in their own fields. The block is
        # in the run's output (to see what was recalled); the run's bookkeeping stays private.
        fields: dict[str, Any] = {
            state_key: NotRequired[Annotated[str, OmitFromInput]],
            self._run_key: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]],
        }
        make_typed_dict: Any = TypedDict  # a TypedDict whose keys are only known at run time
        self.state_schema = make_typed_dict(f"EpisodicMemoryState_{state_key}", fields)
        self.tools = []
        if search_tool:
            if self.memory is None:
                raise ConfigurationError("search_tool=True is for mode='episodes'")
            self.tools = [
                create_memory_search_tool(
                    self.memory,
                    user_id=user_id,
                    agent_id=agent_id,
                    # The run's conversation as the middleware names it: given here, it
                    # wins over the thread id for the tool too, so the tool shows the
                    # episodes the middleware records as this conversation's.
                    conversation_id=conversation_id,
                    recall_options=self.recall_options,
                    max_tokens=max_tokens,
                )
            ]

    @property
    def name(self) -> str:
        """The middleware's name: distinct per `state_key` (or as given)."""
        return self._name

    # -- ids -----------------------------------------------------------------------------

    def _scope(self, runtime: Runtime[Any]) -> MemoryScope:
        try:
            config = get_config()
        except RuntimeError:  # outside a LangGraph run
            config = None
        scope = run_scope(self.defaults, config, context=getattr(runtime, "context", None))
        if scope.conversation_id is not None:
            return scope
        return MemoryScope(scope.user_id, scope.agent_id, uuid.uuid4().hex)

    # -- before the run: recall once -----------------------------------------------------

    def _run(
        self,
        messages: Sequence[AnyMessage],
        scope: MemoryScope,
        previous: Mapping[str, Any] | None,
        root: str | None = None,
    ) -> tuple[dict[str, Any], str]:
        start = run_start(messages)
        run = {
            "start": start,
            # The run's first message and the one before it, to find the run again at its end.
            "first_id": messages[start].id if start < len(messages) else None,
            "before_id": messages[start - 1].id if start else None,
            "head_id": messages[0].id if messages else None,
            # The run's input as it will be recorded: a long run's own first messages may
            # leave the history (summarised, trimmed) before it ends.
            "input": [
                {"id": message.id, "line": recorded_line(message, self._search_tools())}
                for message in messages[start:]
            ],
            # Where it is in the whole thread, counting what a summary took from the history.
            **thread_positions(messages, start, previous),
            "conversation_id": scope.conversation_id,
            "user_id": scope.user_id,
            "agent_id": scope.agent_id,
            # The LangGraph thread: a run it replays or forks is recorded under the same ids.
            "thread_id": _thread_id(),
            # This thread's line of runs, carried from run to run in the checkpoint: a fork
            # shares it with the branch it left, a thread id used again on a new checkpointer
            # (a restarted `InMemorySaver`, a deleted thread) begins another. A thread's first
            # run takes `root`, the line of the thread's earlier checkpoints: a fork before
            # the first question has no run state, yet left a branch.
            "thread_root": (previous or {}).get("thread_root") or root or uuid.uuid4().hex,
            # Every episode of this line of runs carries its thread id and root (it began
            # with this version): the recall's window can leave out only the thread's own.
            "rooted": previous is None or bool(previous.get("rooted")),
            # Not yet recorded: `after_agent` closes it. A run the consumer stopped streaming
            # before that step stays open in the checkpoint, and the next run records it.
            "open": True,
        }
        return run, _last_text(messages[start:], HumanMessage)

    def _search_tools(self) -> list[str]:
        return [tool.name for tool in self.tools] + self._memory_tools

    def _options(self, run: Mapping[str, Any]) -> dict[str, Any]:
        options = dict(self.recall_options)
        start, window = int(run["thread_start"]), int(run["window"])
        if start:
            given = "seen_from" in options or "seen_until" in options
            # The thread's messages from `window` to the run are in the history the model
            # sees; those before it a summary (or a trim) took away, so memory recalls them.
            if window and not given:
                options["seen_from"] = window
            options.setdefault("seen_until", start)
            thread, root = run.get("thread_id"), run.get("thread_root")
            if not given and run.get("rooted") and thread is not None and root is not None:
                # Other threads of the conversation count their own positions: their
                # episodes in the window are not in this prompt, so only this thread's
                # are left out.
                options.setdefault("seen_metadata", {"thread_id": str(thread), "thread_root": root})
        return options

    def _recall(
        self,
        messages: Sequence[AnyMessage],
        scope: MemoryScope,
        previous: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        root = thread_root(self._run_key) if previous is None else None
        run, query = self._run(messages, scope, previous, root)
        block = ""
        if query.strip() and self.memory is not None:
            try:
                block = recall_block(
                    self.memory,
                    scope,
                    query,
                    options=self._options(run),
                    max_tokens=self.max_tokens,
                )
            except Exception as exc:
                # Memory is an aid: the run goes on without it rather than failing the user.
                self._recall_failed(exc)
        return {self.state_key: block, self._run_key: run}

    async def _arecall(
        self,
        messages: Sequence[AnyMessage],
        scope: MemoryScope,
        previous: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        root = await athread_root(self._run_key) if previous is None else None
        run, query = self._run(messages, scope, previous, root)
        block = ""
        if query.strip() and self.memory is not None:
            try:
                block = await arecall_block(
                    self.memory,
                    scope,
                    query,
                    options=self._options(run),
                    max_tokens=self.max_tokens,
                )
            except Exception as exc:
                self._recall_failed(exc)
        return {self.state_key: block, self._run_key: run}

    def _recall_failed(self, exc: Exception) -> None:
        logger.warning("episodic recall failed; the run goes on without memory", exc_info=True)
        self._recall_failures += 1
        if self.recorder is not None:
            self.recorder.note_recall_failure(exc)

    def _unfinished(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """The state of the thread's previous run if it ended before it was recorded, else None.

        A consumer that stops reading a stream once it has the answer (breaks out of
        `agent.stream`, closes `astream`, a client that goes away) ends the run before
        `after_agent`: its question and answer stay in the checkpointed history, but this run
        begins after them, so without this no run would record them. Its messages are those
        from its start to this run's. A run stopped before anything was answered has no
        messages of its own: its question is in this run, and recorded with it.
        """
        previous: Mapping[str, Any] | None = state.get(self._run_key)
        if not self.record or previous is None or not previous.get("open"):
            return None
        messages: list[AnyMessage] = state["messages"]
        end = run_start(messages)
        start = run_position(messages, previous)
        if start is not None and start >= end:
            return None
        found = run_messages(messages[:end], previous)
        if found is None or not any(found):
            return None
        return {"messages": messages[:end], self._run_key: previous}

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Recall the episodes for the run's last user message into the state.

        First records the thread's previous run if the consumer stopped it before its end.
        """
        if self.mode != "episodes":
            return None
        unfinished = self._unfinished(state)
        previous = state.get(self._run_key)
        if unfinished is not None:
            run_sync(self._record(unfinished))
            previous = self._ended(unfinished)
        return self._recall(state["messages"], self._scope(runtime), previous)

    async def abefore_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Recall the episodes for the run's last user message into the state.

        First records the thread's previous run if the consumer stopped it before its end.
        """
        if self.mode != "episodes":
            return None
        unfinished = self._unfinished(state)
        previous = state.get(self._run_key)
        if unfinished is not None:
            await self._record(unfinished)
            previous = self._ended(unfinished)
        return await self._arecall(state["messages"], self._scope(runtime), previous)

    # -- every model call: inject --------------------------------------------------------

    async def _block(self, request: ModelRequest[Any]) -> str:
        if self.mode == "episodes":
            return str(request.state.get(self.state_key) or "")
        assert self.lessons is not None and self._env is not None  # checked in __init__
        try:
            # Either getter may be async (a page read from an async browser session): passed
            # on as they are, their coroutines would be the page and state asked about.
            env = self._env(request.state, request.runtime)
            if inspect.isawaitable(env):
                env = await env
            current = self._current_state(request.state, request.runtime)
            if inspect.isawaitable(current):
                current = await current
            # Read as the retrievers read a query: half a character (a lone surrogate) in the
            # page or the state as U+FFFD, or the lesson memory refuses them and the model
            # gets no lessons at this call.
            block = self.lessons.lessons_block(readable_page(env), readable(current))
            # A synchronous source (a SyncStepLessonMemory) has answered already; awaiting
            # its text would fail every call and the agent would never see a lesson.
            return block if isinstance(block, str) else await block
        except Exception as exc:
            self._recall_failed(exc)
            return ""

    def _inject(self, request: ModelRequest[Any], block: str) -> ModelRequest[Any]:
        if not block:
            return request
        return request.override(system_message=_with_block(request.system_message, block))

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult[Any]:
        """Call the model with the block appended to the system message."""
        return handler(self._inject(request, run_sync(self._block(request))))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult[Any]:
        """Call the model with the block appended to the system message."""
        return await handler(self._inject(request, await self._block(request)))

    # -- after the run: record -----------------------------------------------------------

    async def _record(self, state: Mapping[str, Any]) -> None:
        try:
            await self._record_run(state)
        except Exception:
            # The answer is already the user's; nothing here may take it away.
            logger.error("could not record the run as an episode", exc_info=True)

    async def _record_run(self, state: Mapping[str, Any]) -> None:
        run: dict[str, Any] | None = state.get(self._run_key)
        if self.recorder is None or run is None:
            return
        messages: list[AnyMessage] = state["messages"]
        found = run_messages(messages, run)
        if found is None:
            logger.warning(
                "the run of conversation %r is not recorded: its messages left the history "
                "before it ended (a middleware that summarises or trims it?)",
                run["conversation_id"],
            )
            return
        # `kept`: the lines of the run's input that left the history before the run ended.
        kept, ran = found
        asked = any(line[0] == "user" and line[1].strip() for line in kept)
        if not asked and not _last_text(ran, HumanMessage).strip():
            return  # nothing the user asked: nothing to recall the run by
        tools: list[str] = []
        for message in ran:
            if isinstance(message, AIMessage):
                for call in message.tool_calls:
                    if call["name"] not in tools and _storable_tool(call["name"]):
                        tools.append(call["name"])
        # Every part is summarised first and all are queued together: a run cancelled on the
        # way (a timeout) is then recorded whole or not at all, never in part.
        episodes: list[dict[str, Any]] = []
        # Counted over the whole thread (a run begun by an older version: in the history).
        first = int(run.get("thread_start", len(messages) - len(ran)))
        for episode in run_episodes(
            ran, start_index=first, search_tools=self._search_tools(), kept=kept
        ):
            short, long = episode.short_summary, episode.long_summary
            if self._reflect is not None:
                try:
                    short, long = await reflect_summaries(self._reflect, episode)
                except Exception:
                    # The user already has the answer; a failed reflection must not lose the run.
                    logger.warning("reflection failed; recording plain summaries", exc_info=True)
            metadata: dict[str, Any] = {"source": "langchain-agent"}
            if run.get("thread_id") is not None and run.get("thread_root") is not None:
                metadata.update(thread_id=str(run["thread_id"]), thread_root=run["thread_root"])
            if episode.part is not None:
                metadata.update(part=episode.part, parts=episode.parts)
            episodes.append(
                {
                    "short_summary": short,
                    "long_summary": long,
                    "user_id": run["user_id"],
                    "agent_id": run["agent_id"],
                    "conversation_id": run["conversation_id"],
                    "start_index": episode.start_index,
                    "end_index": episode.end_index,
                    "tools_invoked": tools,
                    "speakers": list(episode.speakers),
                    "metadata": metadata,
                    # A run recorded again (replayed from a checkpoint) replaces its record.
                    "point_id": run_episode_id(run, episode.start_index, episode.part),
                }
            )
        stored = await self.recorder.record_many(episodes)
        try:
            await self._forget_left_branch(run, first, episodes, stored)
        except Exception:
            # The run is recorded; what stays is the branch the thread left, never this run.
            # Every run checks (a fork is not known inside the run), so say what was tried.
            logger.warning(
                "could not look for, or forget, the episodes of a branch thread %r left by "
                "time travel; this run is recorded",
                run.get("thread_id"),
                exc_info=True,
            )

    async def _forget_left_branch(
        self,
        run: Mapping[str, Any],
        first: int,
        episodes: Sequence[Mapping[str, Any]],
        stored: Sequence[str | None],
    ) -> None:
        """Forget the episodes of the runs a LangGraph fork left behind, once this run is stored.

        A thread forked (time travel) at an earlier checkpoint goes on from there: the runs
        after it on the branch it left are no longer the thread's, and their episodes, at
        thread positions from this run's start on, would be recalled as if they had happened.
        Only episodes proven to be of this thread's line of runs are forgotten (its thread id
        and root in their metadata): not another thread's of the same conversation, not those
        of an earlier thread with the same id, not those recorded before the root was kept.
        """
        assert self.memory is not None and self.recorder is not None  # episodes mode
        thread, root = run.get("thread_id"), run.get("thread_root")
        own = {episode["point_id"] for episode in episodes}
        if thread is None or root is None or not own or None in own:
            return
        scope = {"user_id": run["user_id"], "agent_id": run["agent_id"]}

        def left_behind(episode: ConversationEpisode) -> bool:
            return (
                episode.user_id == run["user_id"]
                and episode.agent_id == run["agent_id"]
                and episode.conversation_id == run["conversation_id"]
                and episode.metadata.get("thread_id") == str(thread)
                and episode.metadata.get("thread_root") == root
                and episode.start_index >= first
                and episode.point_id not in own
            )

        # The left branch's episodes still waiting (the store failing, a deferred write not
        # done yet) first, this run's already queued: written later, they would bring the
        # branch back after the stored ones below are forgotten. No write runs meanwhile, so
        # one written before is among the stored ones read next.
        await self.recorder.forget_waiting(left_behind)
        memory = self.memory

        def left_branch() -> list[str]:
            # Every episode of the conversation from this run's start on is looked at, a page
            # at a time: the branch may be behind any number of newer episodes (other
            # threads of the conversation).
            return [
                stored.point_id
                for stored in line_episodes(
                    memory, conversation_id=run["conversation_id"], from_index=first, **scope
                )
                if stored.thread_id == str(thread)
                and stored.thread_root == root
                and stored.start_index >= first
                and stored.point_id not in own
            ]

        left = await asyncio.to_thread(left_branch)
        if not left:
            return
        # This run first, then the left branch: a failure between leaves episodes over, never
        # this run's missing. A deferred run is written now for that.
        if None in stored and (not self.recorder.deferred or await self.recorder.flush()):
            return
        for point_id in left:
            await self.memory.forget(point_id=point_id, **scope)

    def _ended(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """The run state of the run in `state`, recorded: where it ends in the thread."""
        run: Mapping[str, Any] = state[self._run_key]
        ended = {**run, **thread_end(state["messages"], run), "open": False}
        ended.pop("input", None)  # recorded: the checkpoint need not carry it on
        return ended

    def _closed(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        # The run is recorded (or failed to be, and is the recorder's now): the next run must
        # not record it again.
        run: Mapping[str, Any] | None = state.get(self._run_key)
        if run is None or not run.get("open"):
            return None
        # Where the run ends in the thread, so the next run counts on from there.
        return {self._run_key: self._ended(state)}

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Record the finished run as one episode."""
        if self.mode == "episodes" and self.record:
            run_sync(self._record(state))
            return self._closed(state)
        return None

    async def aafter_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Record the finished run as one episode."""
        if self.mode == "episodes" and self.record:
            await self._record(state)
            return self._closed(state)
        return None

    # -- health --------------------------------------------------------------------------

    async def aflush(self) -> int:
        """Write every pending episode now; returns how many are still pending."""
        return 0 if self.recorder is None else await self.recorder.flush()

    def flush(self) -> int:
        """Write every pending episode now; returns how many are still pending."""
        return run_sync(self.aflush())

    def stats(self) -> RecorderStats | None:
        """Recorded, pending and failed episodes and failed recalls (None in lessons mode)."""
        return None if self.recorder is None else self.recorder.stats()

    @property
    def recall_failures(self) -> int:
        """Recalls (or lesson blocks) that failed and were skipped."""
        return self._recall_failures
