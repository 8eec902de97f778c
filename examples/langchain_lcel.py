"""An LCEL chain (`prompt | model`) with episodic memory.

`recall_episodes` is a runnable from the chain input to the `<recalled_episodes>` block, for
`RunnablePassthrough.assign`; `record_exchange` stores the answer afterwards. The user and
conversation come from the config's `configurable`, as with `RunnableWithMessageHistory`.

    python examples/langchain_lcel.py

Offline by default (a scripted chat model). With `OPENAI_API_KEY` set and `langchain-openai`
installed, it talks to `gpt-4o-mini` instead.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import tempfile

from episodex import EpisodicMemory
from langchain_core.language_models import BaseChatModel, FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig, RunnablePassthrough
from langchain_episodex import arecord_exchange, recall_episodes

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "You are a travel assistant. What you remember:\n{recalled_episodes}"),
        ("human", "{question}"),
    ]
)


def chat_model(*scripted: str) -> BaseChatModel:
    if os.environ.get("OPENAI_API_KEY") and importlib.util.find_spec("langchain_openai"):
        from langchain.chat_models import init_chat_model

        return init_chat_model("openai:gpt-4o-mini")
    return FakeListChatModel(responses=list(scripted))


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        memory = EpisodicMemory(path=folder)
        try:
            recall = recall_episodes(memory, input_key="question", agent_id="travel")
            chain = (
                RunnablePassthrough.assign(recalled_episodes=recall)
                | PROMPT
                | chat_model(
                    "Done: aisle seat, vegetarian meal, Oslo on 3 May.",
                    "Aisle, with a vegetarian meal.",
                )
            )

            march: RunnableConfig = {
                "configurable": {"user_id": "alice", "conversation_id": "march"}
            }
            question = "Book Oslo on 3 May, aisle seat, vegetarian meal please."
            answer = await chain.ainvoke({"question": question}, config=march)
            await arecord_exchange(memory, question, answer, agent_id="travel", config=march)
            print("march:", answer.text)

            april: RunnableConfig = {
                "configurable": {"user_id": "alice", "conversation_id": "april"}
            }
            question = "Same seat and meal as last time for my Rome trip?"
            print("recalled in april:")
            print(await recall.ainvoke({"question": question}, config=april))
            answer = await chain.ainvoke({"question": question}, config=april)
            print("april:", answer.text)
        finally:
            memory.close()


if __name__ == "__main__":
    asyncio.run(main())
