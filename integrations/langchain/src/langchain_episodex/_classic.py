"""`EpisodicMemory` for classic LangChain chains (`LLMChain`, `ConversationChain`)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from episodex import EpisodicMemory as CoreMemory
from episodex import ValidationError, run_sync
from pydantic import ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticValidationError

from langchain_episodex._options import check_recall_options, core_memory
from langchain_episodex._pydantic import configuration_error
from langchain_episodex._summaries import exchange_summaries, message_text

try:
    from langchain_classic.base_memory import BaseMemory
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        'langchain_episodex.EpisodicMemory needs langchain-classic: pip install "langchain-episodex[classic]"'
    ) from exc

__all__ = ["EpisodicMemory"]

# Chain inputs that are never the user's message.
_NOT_THE_INPUT = frozenset({"stop"})


class EpisodicMemory(BaseMemory):
    r"""Episodic memory for classic chains: recall before each call, record after it.

    `load_memory_variables` recalls episodes for the chain input and returns the
    `<recalled_episodes>` block under `memory_key` (`""` when nothing matched);
    `save_context` records the exchange (input and output) as one episode of this
    conversation; `clear` forgets the conversation. The async variants are natively async.

    Setup:
        `pip install "langchain-episodex[classic]"`

    Instantiate:
        ```python
        from episodex import EpisodicMemory as Episodes
        from langchain_episodex import EpisodicMemory

        episodes = Episodes(path="./memory")
        memory = EpisodicMemory(memory=episodes, user_id="u1", agent_id="assistant",
                                conversation_id="c1")
        ```

    Use with `ConversationChain` (the prompt takes `recalled_episodes` and `input`):
        ```python
        # docs: no-run (needs a chat model; examples/langchain_classic_chain.py runs this offline)
        from langchain_classic.chains import ConversationChain
        from langchain_core.prompts import PromptTemplate

        prompt = PromptTemplate.from_template(
            "{recalled_episodes}\nHuman: {input}\nAI:")
        chain = ConversationChain(llm=chat_model, memory=memory, prompt=prompt)
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
    user_id: str = Field(min_length=1)
    """Whose memory: recall and recording never cross users."""
    agent_id: str = Field(min_length=1)
    """The agent the user talks to."""
    conversation_id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1)
    """This conversation (default: a new id per memory object)."""
    memory_key: str = Field(default="recalled_episodes", min_length=1)
    """The prompt variable that receives the block."""
    input_key: str | None = None
    """The chain input holding the user's message; None when the chain has exactly one."""
    output_key: str | None = None
    """The chain output holding the answer; None when the chain has exactly one."""
    max_tokens: int | None = Field(default=None, ge=0)
    """Token budget of the block (None: no limit)."""
    recall_options: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Extra `recall` options: result limits, stream weights, `stage1_limit`, `rrf_k`."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            raise configuration_error(type(self).__name__, exc) from None

    @field_validator("memory", mode="before")
    @classmethod
    def _unwrap(cls, value: object) -> object:
        return core_memory(value)

    @field_validator("recall_options")
    @classmethod
    def _known(cls, value: dict[str, Any]) -> dict[str, Any]:
        return check_recall_options(value)

    @property
    def memory_variables(self) -> list[str]:
        """The one variable this memory adds to the chain inputs."""
        return [self.memory_key]

    def _pick(self, values: Mapping[str, Any], key: str | None, what: str) -> str:
        if key is None:
            candidates = [k for k in values if k != self.memory_key and k not in _NOT_THE_INPUT]
            if len(candidates) != 1:
                raise ValidationError(
                    f"cannot tell which chain {what} to use among {sorted(candidates)}: "
                    f"set {what}_key= on the EpisodicMemory"
                )
            key = candidates[0]
        if key not in values:
            raise ValidationError(f"the chain {what}s have no {key!r}; they have {sorted(values)}")
        return message_text(values[key])

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Recall for the chain input; returns `{memory_key: block}`."""
        query = self._pick(inputs, self.input_key, "input")
        if not query.strip():
            return {self.memory_key: ""}
        block = await self.memory.recall_block(
            user_id=self.user_id,
            agent_id=self.agent_id,
            conversation_id=self.conversation_id,
            query=query,
            max_tokens=self.max_tokens,
            **self.recall_options,
        )
        return {self.memory_key: block}

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Recall for the chain input; returns `{memory_key: block}`."""
        return run_sync(self.aload_memory_variables(inputs))

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Record the exchange (chain input and output) as one episode."""
        question = self._pick(inputs, self.input_key, "input")
        answer = self._pick(outputs, self.output_key, "output")
        short, long = exchange_summaries(question, answer)
        await self.memory.memorize(
            short_summary=short,
            long_summary=long,
            user_id=self.user_id,
            agent_id=self.agent_id,
            conversation_id=self.conversation_id,
            metadata={"source": "langchain-classic"},
        )

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Record the exchange (chain input and output) as one episode."""
        run_sync(self.asave_context(inputs, outputs))

    async def aclear(self) -> None:
        """Forget every episode of this conversation."""
        await self.memory.forget(
            user_id=self.user_id, agent_id=self.agent_id, conversation_id=self.conversation_id
        )

    def clear(self) -> None:
        """Forget every episode of this conversation."""
        run_sync(self.aclear())
