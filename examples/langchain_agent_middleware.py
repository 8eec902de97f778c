"""A LangChain v1 agent (`create_agent`) with episodic memory as middleware.

`EpisodicMemoryMiddleware` recalls the episodes relevant to the user's message once per run,
adds them to the system message of every model call (never to the history), and records the
finished run, with the tools it used, as an episode. The user comes from the runtime context.

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
from langchain_core.messages import AIMessage
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
            middleware = EpisodicMemoryMiddleware(memory, agent_id="shop-support")

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

            stranger = agent(AIMessage("Which order do you mean?")).invoke(
                {"messages": [{"role": "user", "content": "Any news on my parcel?"}]},
                context={"user_id": "bob"},
            )
            print("bob recalls:", repr(stranger["recalled_episodes"]))
        finally:
            memory.close()


if __name__ == "__main__":
    main()
