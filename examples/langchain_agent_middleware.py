"""A LangChain v1 agent (`create_agent`) with episodic memory as middleware.

`EpisodicMemoryMiddleware` recalls the episodes relevant to the user's message once per run,
adds them to the system message of every model call (never to the history), and records the
finished run, with the tools it used, as an episode. With `search_tool=True` the agent can
also search its memory itself (`search_memory`). The user comes from the runtime context, or
from each config's `configurable` in `agent.batch`.

    python examples/langchain_agent_middleware.py

Offline by default (a scripted chat model). With `OPENAI_API_KEY` set and `langchain-openai`
installed, it talks to `gpt-4o-mini` instead.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Sequence
from typing import Any

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel, FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware


class ScriptedChatModel(FakeMessagesListChatModel):
    """Plays back scripted answers, tool calls included; stands in for a real model offline."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self


@tool
def track_parcel(order_id: str) -> str:
    """Where a parcel is now."""
    return f"Order {order_id}: held at the Leeds depot, redelivery booked for Friday."


def chat_model(*scripted: AIMessage) -> BaseChatModel:
    if os.environ.get("OPENAI_API_KEY") and importlib.util.find_spec("langchain_openai"):
        from langchain.chat_models import init_chat_model

        return init_chat_model("openai:gpt-4o-mini")
    return ScriptedChatModel(responses=list(scripted))


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        memory = EpisodicMemory(path=folder)
        try:
            middleware = EpisodicMemoryMiddleware(memory, agent_id="shop-support", search_tool=True)

            def agent(*scripted: AIMessage) -> Any:
                return create_agent(
                    chat_model(*scripted),
                    tools=[track_parcel],
                    system_prompt="You are a support agent for an online shop.",
                    middleware=[middleware],
                    context_schema=EpisodicContext,
                )

            first = agent(
                AIMessage(
                    "",
                    tool_calls=[{"name": "track_parcel", "args": {"order_id": "1182"}, "id": "t1"}],
                ),
                AIMessage(
                    "Your parcel 1182 is at the Leeds depot; redelivery is booked for Friday."
                ),
            ).invoke(
                {"messages": [{"role": "user", "content": "Where is my parcel for order 1182?"}]},
                context={"user_id": "alice", "conversation_id": "tuesday"},
            )
            print("tuesday:", first["messages"][-1].text)

            second = agent(
                AIMessage("It is at the Leeds depot; the redelivery is on Friday.")
            ).invoke(
                {"messages": [{"role": "user", "content": "Any news on my parcel?"}]},
                context={"user_id": "alice", "conversation_id": "thursday"},
            )
            print("recalled on thursday:")
            print(second["recalled_episodes"])
            print("thursday:", second["messages"][-1].text)

            # The model decides to search its memory; whose memory comes from the run.
            third = agent(
                AIMessage(
                    "",
                    tool_calls=[
                        {
                            "name": "search_memory",
                            "args": {"query": "parcel redelivery"},
                            "id": "m1",
                        }
                    ],
                ),
                AIMessage("Your redelivery for order 1182 was booked for Friday."),
            ).invoke(
                {"messages": [{"role": "user", "content": "When was my redelivery again?"}]},
                context={"user_id": "alice", "conversation_id": "friday"},
            )
            found = next(m for m in third["messages"] if isinstance(m, ToolMessage))
            print("search_memory found tuesday:", 'conversation="tuesday"' in str(found.content))
            print("friday:", third["messages"][-1].text)

            stranger = agent(AIMessage("Which order do you mean?")).invoke(
                {"messages": [{"role": "user", "content": "Any news on my parcel?"}]},
                context={"user_id": "bob"},
            )
            print("bob recalls:", repr(stranger["recalled_episodes"]))

            # One batch, one user per config: each run sees only its own user's memory.
            batch = agent(AIMessage("Let me check."), AIMessage("Let me check.")).batch(
                [{"messages": [{"role": "user", "content": "Any news on parcel 1182?"}]}] * 2,
                config=[
                    {"configurable": {"user_id": "alice", "conversation_id": "sat-a"}},
                    {"configurable": {"user_id": "bob", "conversation_id": "sat-b"}},
                ],
            )
            for who, out in zip(("alice", "bob"), batch, strict=True):
                print(f"batch {who} recalls parcel 1182:", "1182" in out["recalled_episodes"])
        finally:
            memory.close()


if __name__ == "__main__":
    main()
