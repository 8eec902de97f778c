"""Every run is recorded when another middleware summarises the thread's history.

The middleware found a run's messages at the end by the position the run started at. A
`SummarizationMiddleware` replaces the history with a summary and its last messages before
a model call, so that position could lie past the end of the shortened history: every
other turn of a long thread was skipped, with no log, and a run starting inside it would
have recorded the wrong messages. The run is now found again by its messages' ids.
"""

from __future__ import annotations

import uuid

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_episodex import EpisodicMemoryMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import RecordingChatModel

TURNS = 8


def test_each_turn_of_a_summarised_thread_is_one_episode(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    episodes = EpisodicMemoryMiddleware(memory, agent_id="support", user_id=user)
    summarizer = RecordingChatModel(responses=[AIMessage("The user asked questions.")])
    summarising = SummarizationMiddleware(summarizer, trigger=("messages", 6), keep=("messages", 2))
    model = RecordingChatModel(responses=[AIMessage(f"answer {n}") for n in range(TURNS)])
    agent = create_agent(model, middleware=[episodes, summarising], checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": f"thread-{user}"}}
    for n in range(TURNS):
        agent.invoke({"messages": [HumanMessage(f"question {n}")]}, config)  # pyright: ignore[reportArgumentType]
    assert summarizer.received  # the history was summarised along the way
    texts = sorted(
        str(hit.payload["long_summary_text"])
        for hit in memory.store.iter_episodes(user_id=user, agent_id="support")
    )
    assert texts == sorted(f"user: question {n}\nassistant: answer {n}" for n in range(TURNS))
