"""`EpisodicConversationMemory` for classic LangChain chains (`ConversationChain`, `LLMChain`)."""

from __future__ import annotations

import functools
import logging
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from episodex import (
    EpisodeRecorder,
    MemoryScope,
    RecorderStats,
    ValidationError,
    run_sync,
)
from episodex import EpisodicMemory as CoreMemory
from langchain_core.messages import BaseMessage, SystemMessage
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from langchain_episodex._branches import forget_left_branches
from langchain_episodex._context import run_scope
from langchain_episodex._options import check_recall_options, core_memory
from langchain_episodex._positions import Hold, scope_key, stored_length
from langchain_episodex._pydantic import configuration_error
from langchain_episodex._recall import arecall_block
from langchain_episodex._settings import id_field, key_field
from langchain_episodex._summaries import (
    answer_value,
    exchange_episodes,
    exchange_records,
    message_text,
)

try:
    from langchain_classic.base_memory import BaseMemory
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        "langchain_episodex.EpisodicConversationMemory needs langchain-classic: "
        'pip install "langchain-episodex[classic]"'
    ) from exc

__all__ = ["EpisodicConversationMemory", "EpisodicMemory"]

logger = logging.getLogger("langchain_episodex")

# Messages of one exchange: the question and the answer.
_EXCHANGE = 2

# A classic chain's `invoke(x, config=...)` keeps its config to itself (its memory gets the
# inputs only and no run config is current), so telling the user to put the ids in the
# configurable would point at the one place that does not work.
_WHERE = (
    "the config of a runnable that calls the chain (a RunnableLambda, a LangGraph node): a "
    "classic chain does not hand its own config (chain.invoke(x, config=...)) to its memory, "
    "so give the ids to the memory, EpisodicConversationMemory(user_id=..., agent_id=...), "
    "or call the chain from such a runnable given that config"
)

# Chain inputs that are never the user's message.
_NOT_THE_INPUT = frozenset({"stop"})


class EpisodicConversationMemory(BaseMemory):
    r"""Episodic memory for classic chains: recall before each call, record after it.

    `load_memory_variables` recalls episodes for the chain input and returns the
    `<recalled_episodes>` block under `memory_key` (`history` by default, the variable of
    `ConversationChain`'s default prompt; `""` when nothing matched), or with
    `return_messages=True` a list holding one `SystemMessage` with the block (empty when
    nothing matched), for a `MessagesPlaceholder`. `save_context` records the exchange
    (input and output) as an episode of this conversation; `clear` forgets the
    conversation. The async variants are natively async. A memory failure (engine or
    embedder) is logged to the `langchain_episodex` logger and the chain goes on: without
    the block when recall fails, with its answer when recording fails. A failed recording is
    not dropped: an `EpisodeRecorder` keeps it (with `spill_path`, in a file that outlives
    the process) and writes it before the next exchange or on `flush()`; `stats()` tells what
    is recorded, pending and failed.

    Ids follow the package's one rule (see `EpisodicContext`): the ones given here win,
    then those of the run the chain is called in (its runtime context, its config's
    `configurable`). A classic chain does not hand its own config to its memory, so the ids
    in `chain.invoke(x, config=...)` never reach it: give them here, or call the chain from a
    runnable (a `RunnableLambda`, a LangGraph node) invoked with that config. The
    conversation is the memory object's own (`conversation_id`, by default a new id per
    object).

    Setup:
        `pip install "langchain-episodex[classic]"`

    Instantiate:
        ```python
        from episodex import EpisodicMemory
        from langchain_episodex import EpisodicConversationMemory

        episodes = EpisodicMemory(path="./memory")
        memory = EpisodicConversationMemory(memory=episodes, user_id="u1",
                                            agent_id="assistant", conversation_id="c1")
        ```

    Use with `ConversationChain` and its default prompt:
        ```python
        # docs: no-run (needs a chat model; examples/langchain_classic_chain.py runs this offline)
        from langchain_classic.chains import ConversationChain

        chain = ConversationChain(llm=chat_model, memory=memory)
        chain.invoke({"input": "Where is my refund?"})
        ```

    Async:
        ```python
        # docs: no-run (continues the block above)
        await chain.ainvoke({"input": "Where is my refund?"})
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    memory: CoreMemory
    """The core memory (`episodex.EpisodicMemory`; a `SyncEpisodicMemory` is unwrapped)."""
    user_id: str | None = Field(default=None, min_length=1)
    """Whose memory (None: from the run); recall and recording never cross users."""
    agent_id: str | None = Field(default=None, min_length=1)
    """The agent the user talks to (None: from the run)."""
    conversation_id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1)
    """This conversation (default: a new id per memory object)."""
    memory_key: str = Field(default="history", min_length=1)
    """The prompt variable that receives the block."""
    return_messages: bool = Field(default=False, strict=True)
    """Return the block as a list of messages (for a `MessagesPlaceholder`), not a string."""
    input_key: str | None = None
    """The chain input holding the user's message; None when the chain has exactly one."""
    output_key: str | None = None
    """The chain output holding the answer; None when the chain has exactly one."""
    max_tokens: int | None = Field(default=None, ge=0)
    """Token budget of the block (None: no limit)."""
    recall_options: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Extra `recall` options (`episodex.RecallOptions`): limits, stream weights, ..."""
    spill_path: Path | str | None = None
    """A JSONL file keeping the exchanges a failed write leaves waiting (the store is down),
    so a process that ends before the store is back loses none: the next memory (or
    `EpisodeRecorder`) given the same file writes them. None keeps them in memory only.
    """

    _recorder: EpisodeRecorder | None = PrivateAttr(default=None)
    # Per conversation, the hold this object keeps on the indexes it took and has not stored
    # (an exchange waiting in the recorder, or counted while the store could not be read).
    _holds: dict[tuple[str, str, str], Hold] = PrivateAttr(
        default_factory=dict[tuple[str, str, str], Hold]
    )
    _holds_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            raise configuration_error(type(self).__name__, exc) from None
        # A spill file shared with an `EpisodicMemoryMiddleware` holds its runs too, and this
        # recorder writes them: a fork's run among them must forget the branch it left, as
        # the middleware's own recorder would.
        self._recorder = EpisodeRecorder(
            self.memory,
            spill_path=self.spill_path,
            on_written_later=functools.partial(forget_left_branches, self.memory),
        )

    @property
    def recorder(self) -> EpisodeRecorder:
        """What writes the exchanges: failed writes wait in it for the next try."""
        assert self._recorder is not None  # set in __init__
        return self._recorder

    def stats(self) -> RecorderStats:
        """Recorded, pending and failed episodes (and failed writes' last error)."""
        return self.recorder.stats()

    async def aflush(self) -> int:
        """Write every pending exchange now; returns how many are still pending."""
        return await self.recorder.flush()

    def flush(self) -> int:
        """Write every pending exchange now; returns how many are still pending."""
        return run_sync(self.aflush())

    _unwrap = field_validator("memory", mode="before")(core_memory)
    _known = field_validator("recall_options")(check_recall_options)
    # Checked when made: refused at every call, the id would fail every chain it is in.
    _ids = field_validator("user_id", "agent_id", "conversation_id")(id_field)
    # No chain has a blank input or output key, nor a prompt such a variable.
    _keys = field_validator("input_key", "output_key", "memory_key")(key_field)

    @model_validator(mode="after")
    def _weights_the_store_runs(self) -> EpisodicConversationMemory:
        # Against this memory's store: weights it cannot run would fail every recall.
        check_recall_options(self.recall_options, memory=self.memory)
        return self

    @property
    def memory_variables(self) -> list[str]:
        """The one variable this memory adds to the chain inputs."""
        return [self.memory_key]

    def _scope(self) -> MemoryScope:
        explicit = {
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "conversation_id": self.conversation_id,
        }
        return run_scope(explicit, where=_WHERE)

    def _pick(self, values: Mapping[str, Any], key: str | None, what: str) -> str:
        return message_text(self._pick_value(values, key, what))

    def _pick_value(self, values: Mapping[str, Any], key: str | None, what: str) -> object:
        if key is None:
            candidates = [k for k in values if k != self.memory_key and k not in _NOT_THE_INPUT]
            if len(candidates) != 1:
                raise ValidationError(
                    f"cannot tell which chain {what} to use among {sorted(candidates)}: "
                    f"set {what}_key= on the {type(self).__name__}"
                )
            key = candidates[0]
        if key not in values:
            raise ValidationError(f"the chain {what}s have no {key!r}; they have {sorted(values)}")
        return values[key]

    def _value(self, block: str) -> str | list[BaseMessage]:
        if not self.return_messages:
            return block
        return [SystemMessage(content=block)] if block else []

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Recall for the chain input; returns `{memory_key: block}`."""
        query = self._pick(inputs, self.input_key, "input")
        scope = self._scope()
        if not query.strip():
            return {self.memory_key: self._value("")}
        try:
            block = await arecall_block(
                self.memory, scope, query, options=self.recall_options, max_tokens=self.max_tokens
            )
        except Exception:
            # Memory is an aid: the chain runs without it rather than failing the user.
            logger.warning(
                "episodic recall failed; the chain goes on without memory", exc_info=True
            )
            block = ""
        return {self.memory_key: self._value(block)}

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Recall for the chain input; returns `{memory_key: block}`."""
        return run_sync(self.aload_memory_variables(inputs))

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Record the exchange (chain input and output) as an episode (several if very long)."""
        # The values themselves, not their text: a message's `name` is one of the speakers.
        asked = self._pick_value(inputs, self.input_key, "input")
        # A parsed output (a dict, a model) is recorded as its JSON: refused, the chain would
        # fail after the model answered and lose the answer. For the same reason data with no
        # JSON (keys JSON cannot hold, a dict that contains itself) is recorded as its text.
        output = self._pick_value(outputs, self.output_key, "output")
        try:
            answered = answer_value(output)
        except ValidationError:
            answered = str(output)
        question = message_text(asked)
        scope = self._scope()
        assert scope.conversation_id is not None  # _scope always names one
        if not question.strip():
            # Nothing to recall the exchange by, so nothing is recorded (the middleware skips
            # such a run too); raising here, after the model answered, cost the chain its answer.
            logger.warning("the exchange is not recorded: the user message has no text")
            return
        episodes = exchange_episodes(asked, answered)
        hold = Hold(self.memory, scope)
        # The indexes taken stay taken for every writer until the exchange is stored; kept
        # too when it was counted without the store, or stopped half way (a gap at most).
        keep = True
        try:
            stored = await self._stored_length(scope)
            first = hold.take(stored, _EXCHANGE)
            # The chain calls this after the model answered, so raising would lose the answer;
            # and a write that fails (the store is down) is kept and retried before the next
            # exchange, not dropped with only a log line. The recorder never raises for the
            # store, writes a long exchange's episodes in one batch, and logs a failure.
            stored_ids = await self.recorder.record_many(
                exchange_records(scope, episodes, first, source="langchain-classic")
            )
            # This exchange's own episodes: the recorder's pending count also holds those
            # other calls (a chain's batch, threads sharing this memory) queued and are
            # writing now. None is a point id not stored: waiting for the next write (the
            # records are this method's own, so the recorder has none to reject).
            pending = None in stored_ids
            if pending:
                logger.error("could not record the exchange as an episode; kept for retry")
            keep = pending or stored is None
        finally:
            self._keep(scope, hold, keep=keep)

    async def _stored_length(self, scope: MemoryScope) -> int | None:
        """The conversation's stored length, the exchanges waiting in the recorder written first.

        Read at every exchange, so the exchanges other writers stored (another memory object,
        `record_exchange`, another process) are counted; None when it could not be read.
        """
        try:
            if self.recorder.stats().pending:
                await self.recorder.flush()
            return await stored_length(self.memory, scope)
        except Exception:
            # Memory is an aid: the exchange is recorded all the same, after the indexes taken
            # in this process (from 0 if none), and the store is read again at the next one.
            logger.warning(
                "could not read how far conversation %r is stored; counting on from this process's own exchanges",
                scope.conversation_id,
                exc_info=True,
            )
            return None

    def _keep(self, scope: MemoryScope, hold: Hold, *, keep: bool) -> None:
        """Keep `hold` as this object's hold on the conversation, or release both."""
        key = scope_key(scope)
        with self._holds_lock:
            previous = self._holds.pop(key, None)
            if keep:
                self._holds[key] = hold
        if previous is not None:
            previous.release()
        if not keep:
            hold.release()

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Record the exchange (chain input and output) as an episode (several if very long)."""
        run_sync(self.asave_context(inputs, outputs))

    async def aclear(self) -> None:
        """Forget every episode of this conversation."""
        scope = self._scope()
        # Pending exchanges first: written after the forget, they would bring it back. The
        # recorder's forget takes out those the store still cannot take (it may delete but
        # not write: a nearly full disk), with no write of it in between.
        await self.recorder.flush()
        await self.recorder.forget(
            user_id=scope.user_id, agent_id=scope.agent_id, conversation_id=scope.conversation_id
        )
        # Nothing of the conversation waits here now: the next exchange counts from the store
        # (from 0), unless another writer still holds indexes it took (a gap, never a clash).
        with self._holds_lock:
            held = self._holds.pop(scope_key(scope), None)
        if held is not None:
            held.release()

    def clear(self) -> None:
        """Forget every episode of this conversation."""
        run_sync(self.aclear())


class EpisodicMemory(EpisodicConversationMemory):
    """The old name of `EpisodicConversationMemory`, kept so existing code keeps working.

    It clashed with the core's `episodex.EpisodicMemory`; new code should use
    `EpisodicConversationMemory`. The only difference is the old default `memory_key`,
    `recalled_episodes`, which prompts written for the old name use.
    """

    memory_key: str = Field(default="recalled_episodes", min_length=1)
    """The prompt variable that receives the block (old default: `recalled_episodes`)."""
