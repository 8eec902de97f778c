"""A classic LangChain `ConversationChain` that remembers earlier conversations.

`langchain_episodex.EpisodicConversationMemory` plugs into any classic chain, with
`ConversationChain`'s default prompt as it is: before each call it recalls the episodes
relevant to the user's message into the prompt variable `history`; after the call it records
the exchange as an episode. Here a customer reports a broken kettle on Monday, and on
Thursday, in a new conversation, asks what happened.

    python examples/langchain_classic_chain.py

Offline by default (a scripted chat model). With `OPENAI_API_KEY` set and `langchain-openai`
installed, it talks to `gpt-4o-mini` instead.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import warnings

from episodex import EpisodicMemory as Episodes
from langchain_classic.chains import ConversationChain
from langchain_core._api import LangChainDeprecationWarning
from langchain_core.language_models import BaseChatModel, FakeListChatModel
from langchain_episodex import EpisodicConversationMemory

# ConversationChain is deprecated upstream in favour of create_agent (see
# langchain_agent_middleware.py); this example is for code that still runs classic chains.
warnings.filterwarnings("ignore", category=LangChainDeprecationWarning)


def chat_model(*scripted: str) -> BaseChatModel:
    if os.environ.get("OPENAI_API_KEY") and importlib.util.find_spec("langchain_openai"):
        from langchain.chat_models import init_chat_model

        return init_chat_model("openai:gpt-4o-mini")
    return FakeListChatModel(responses=list(scripted))


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        episodes = Episodes(path=folder)
        try:
            monday = EpisodicConversationMemory(
                memory=episodes, user_id="alice", agent_id="shop-support", conversation_id="monday"
            )
            chain = ConversationChain(
                llm=chat_model(
                    "Sorry about that! I have issued a refund of 39 EUR for order 1182."
                ),
                memory=monday,
            )
            reply = chain.invoke({"input": "My kettle from order 1182 arrived with a cracked lid."})
            print("monday:", reply["response"])

            thursday = EpisodicConversationMemory(
                memory=episodes,
                user_id="alice",
                agent_id="shop-support",
                conversation_id="thursday",
            )
            question = "Did anything happen about my broken kettle?"
            recalled = thursday.load_memory_variables({"input": question})["history"]
            print("recalled on thursday:")
            print(recalled)
            chain = ConversationChain(
                llm=chat_model("Yes: the 39 EUR refund for order 1182 was issued on Monday."),
                memory=thursday,
            )
            print("thursday:", chain.invoke({"input": question})["response"])

            bob = EpisodicConversationMemory(
                memory=episodes, user_id="bob", agent_id="shop-support"
            )
            print(
                "bob recalls:",
                repr(bob.load_memory_variables({"input": question})["history"]),
            )
        finally:
            episodes.close()


if __name__ == "__main__":
    main()
