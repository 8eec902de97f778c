"""A LlamaIndex FunctionAgent with long-term episodic memory, as a `Memory` block.

`EpisodicMemoryBlock` sits in LlamaIndex's `Memory`, with its default settings. Each exchange
is recorded as an episode of the conversation (the session id) once it is complete, and
`aflush` records the rest at the end of a session. On every model call, the block recalls the
episodes that match the user's latest message, from this conversation and earlier ones, and
`Memory` puts them in the prompt under `<memory><episodes>`. Last, the agent gets
`create_memory_search_tool` and searches its own episodes when it decides to.

    python examples/llamaindex_function_agent.py

Offline: the model is LlamaIndex's `MockFunctionCallingLLM` with scripted answers (swap in any
LlamaIndex LLM, e.g. `OpenAI(model="gpt-4o-mini")`), the store is embedded Qdrant Edge in a
temporary folder, the embedding model is the bundled one and tokens are counted with the
offline cl100k tokenizer.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from typing import Any

from episodex import EpisodicMemory
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.memory.episodex import (
    EpisodicMemoryBlock,
    EpisodicRetriever,
    create_memory_search_tool,
    offline_tokenizer,
)

AGENT_ID = "shop-support"


class ScriptedLLM(MockFunctionCallingLLM):
    """Answers with the next scripted reply and keeps what it was sent, to show the prompt."""

    def __init__(self, *replies: str | ChatMessage) -> None:
        super().__init__()
        queue = list(replies)
        self._seen: list[list[ChatMessage]] = []

        def respond(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
            self._seen.append(list(messages))
            reply = queue.pop(0)
            return (
                reply
                if isinstance(reply, ChatMessage)
                else ChatMessage(role="assistant", content=reply)
            )

        self.response_generator = respond

    def memory_seen(self) -> str:
        """The `<memory>` part of the last prompt, or "" when it had none."""
        for message in self._seen[-1]:
            text = message.content or ""
            if "<memory>" in text:
                return text[text.index("<memory>") : text.index("</memory>") + len("</memory>")]
        return ""


def support_agent(llm: ScriptedLLM) -> FunctionAgent:
    return FunctionAgent(llm=llm, tools=[], system_prompt="You are a shop's support agent.")


def chat_memory(block: EpisodicMemoryBlock, session_id: str, **limits: Any) -> Memory:
    return Memory.from_defaults(
        session_id=session_id, memory_blocks=[block], tokenizer_fn=offline_tokenizer(), **limits
    )


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        episodes = EpisodicMemory(path=folder)
        try:
            alice = EpisodicMemoryBlock(memory=episodes, user_id="alice", agent_id=AGENT_ID)

            # Monday: LlamaIndex's default short-term memory; each exchange becomes an episode.
            llm = ScriptedLLM(
                "Sorry about that! I have issued a refund of 39 EUR for order 1182.",
                "Done: future orders go to 12 Elm Street.",
                "You're welcome, bye!",
            )
            agent = support_agent(llm)
            monday = chat_memory(alice, "monday")
            for text in (
                "My kettle from order 1182 arrived with a cracked lid.",
                "Please send my future orders to 12 Elm Street.",
                "Thanks, that's all.",
            ):
                print("monday:", await agent.run(text, memory=monday))
            await alice.aflush(monday)  # end of session: nothing is left unrecorded
            print("episodes recorded:", await episodes.count(user_id="alice", agent_id=AGENT_ID))

            # Thursday: a new session; the agent's prompt carries Monday's episodes.
            llm = ScriptedLLM("Yes: the 39 EUR refund for order 1182 was issued on Monday.")
            agent = support_agent(llm)
            answer = await agent.run(
                "Did my refund for the kettle go through?", memory=chat_memory(alice, "thursday")
            )
            print("recalled on thursday:")
            print(llm.memory_seen())
            print("thursday:", answer)

            # Another user shares the store but never sees Alice's episodes.
            bob = EpisodicMemoryBlock(memory=episodes, user_id="bob", agent_id=AGENT_ID)
            llm = ScriptedLLM("Which order do you mean?")
            agent = support_agent(llm)
            await agent.run("Did my refund go through?", memory=chat_memory(bob, "bob-1"))
            print("bob's prompt has memory:", bool(llm.memory_seen()))

            # The same episodes as LlamaIndex nodes, e.g. for a query engine.
            retriever = EpisodicRetriever(episodes, user_id="alice", agent_id=AGENT_ID)
            [best, *_] = await retriever.aretrieve("where should my parcels be delivered?")
            print("retriever:", best.node.metadata["short_summary"], f"({best.score:.3f})")

            # Memory as a tool: the agent searches Alice's episodes when it decides to. The
            # tool's only argument is the query; whose episodes it searches is fixed here.
            search = create_memory_search_tool(episodes, user_id="alice", agent_id=AGENT_ID)
            tool_call = ToolCallBlock(
                tool_call_id="call-1", tool_name="search_memory", tool_kwargs={"query": "kettle"}
            )
            llm = ScriptedLLM(
                ChatMessage(role="assistant", blocks=[tool_call]),
                "Your kettle (order 1182) was refunded: 39 EUR, on Monday.",
            )
            agent = FunctionAgent(
                llm=llm, tools=[search], system_prompt="You are a shop's support agent."
            )
            answer = await agent.run("What did you do about my kettle?")
            [result] = [m for m in llm._seen[-1] if m.role == MessageRole.TOOL]
            found = [
                line for line in str(result.content).splitlines() if line.startswith("<summary>")
            ]
            print("tool found:", found[0])
            print("friday:", answer)
        finally:
            episodes.close()


if __name__ == "__main__":
    asyncio.run(main())
