"""A thread another middleware summarises keeps one count of its messages.

Each episode the middleware records names the messages it summarises (`start_index`,
`end_index`), and every recall leaves out the thread's episodes whose messages the model
still sees (`seen_until`). Both were positions in the history as it was at that moment: once
a `SummarizationMiddleware` had replaced the early messages with a summary, later runs were
recorded at positions earlier episodes already held, and the recall's window, counted in the
shortened history, hid exactly the early episodes the summary had taken out of the model's
sight, the ones memory must bring back. Positions now count every message of the thread.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Sequence
from typing import Any

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langchain_episodex import EpisodicMemoryMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import RecordingChatModel

FACTS = [
    ("My dog is called Biscuit.", "Biscuit is a lovely name for a dog."),
    ("I live in Trondheim, in Norway.", "Trondheim is a fine city."),
    ("My favourite colour is teal.", "Teal is a calm colour."),
    ("I work as a glassblower.", "Glassblowing is a rare craft."),
    ("My sister plays the cello.", "The cello has a warm sound."),
    ("I am allergic to peanuts.", "I will keep peanuts out of suggestions."),
    ("My car is a green Volvo estate.", "Volvo estates are roomy."),
    ("I collect stamps from Iceland.", "Icelandic stamps are beautiful."),
    ("My daughter starts school in August.", "August is an exciting month for her."),
    ("I brew my own cider at home.", "Home cider is a good hobby."),
    ("My bicycle has a broken chain.", "A chain is easy to replace."),
    ("I am learning to speak Portuguese.", "Portuguese is a rewarding language."),
]
QUESTION = "What is the name of my dog?"


def _agent(memory: EpisodicMemory, user: str) -> tuple[Any, RecordingChatModel, RecordingChatModel]:
    episodes = EpisodicMemoryMiddleware(memory, agent_id="support", user_id=user)
    summarizer = RecordingChatModel(responses=[AIMessage("The user told some facts.")])
    summarising = SummarizationMiddleware(summarizer, trigger=("messages", 6), keep=("messages", 2))
    answers: list[BaseMessage] = [AIMessage(answer) for _, answer in FACTS]
    answers.append(AIMessage("Your dog is Biscuit."))
    model = RecordingChatModel(responses=answers)
    agent = create_agent(model, middleware=[episodes, summarising], checkpointer=InMemorySaver())
    return agent, model, summarizer


def _config(user: str) -> RunnableConfig:
    return {"configurable": {"thread_id": f"thread-{user}"}}


def _ranges(memory: EpisodicMemory, user: str) -> list[tuple[int, int, str]]:
    hits = memory.store.iter_episodes(user_id=user, agent_id="support")
    return sorted(
        (
            int(hit.payload["start_index"]),
            int(hit.payload["end_index"]),
            str(hit.payload["short_summary_text"]),
        )
        for hit in hits
    )


def _check_ranges(memory: EpisodicMemory, user: str, extra: Sequence[str] = ()) -> None:
    ranges = _ranges(memory, user)
    # In thread order, each episode claims its own messages: none claims another's.
    assert [text for _, _, text in ranges] == [fact for fact, _ in FACTS] + list(extra)
    for (_, end, _), (start, _, _) in itertools.pairwise(ranges):
        assert start > end, ranges


def test_a_summarised_away_turn_is_recalled(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    agent, model, summarizer = _agent(memory, user)
    for fact, _ in FACTS:
        agent.invoke({"messages": [HumanMessage(fact)]}, _config(user))
    assert summarizer.received  # the history was summarised along the way
    _check_ranges(memory, user)
    agent.invoke({"messages": [HumanMessage(QUESTION)]}, _config(user))
    prompt = model.prompt_text()
    assert "Biscuit" not in [m.text for m in model.received[-1][1:]]  # not in the history itself
    assert "My dog is called Biscuit." in prompt  # but brought back by memory


async def test_a_summarised_away_turn_is_recalled_async(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    agent, model, summarizer = _agent(memory, user)
    for fact, _ in FACTS:
        await agent.ainvoke({"messages": [HumanMessage(fact)]}, _config(user))
    assert summarizer.received
    _check_ranges(memory, user)
    await agent.ainvoke({"messages": [HumanMessage(QUESTION)]}, _config(user))
    assert "My dog is called Biscuit." in model.prompt_text()


def test_stopped_streams_on_a_summarised_thread_keep_one_count(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    agent, _, summarizer = _agent(memory, user)
    for n, (fact, _) in enumerate(FACTS):
        for update in agent.stream(
            {"messages": [HumanMessage(fact)]}, _config(user), stream_mode="updates"
        ):
            if n % 2 and "model" in update:
                break  # the client went away with the answer: the next run records this one
    agent.invoke({"messages": [HumanMessage(QUESTION)]}, _config(user))
    assert summarizer.received
    _check_ranges(memory, user, [QUESTION])


def test_a_trimmed_thread_counts_on(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    episodes = EpisodicMemoryMiddleware(memory, agent_id="support", user_id=user)
    model = RecordingChatModel(responses=[AIMessage(answer) for _, answer in FACTS])
    agent: Any = create_agent(model, middleware=[episodes], checkpointer=InMemorySaver())
    for fact, _ in FACTS:
        history = agent.get_state(_config(user)).values.get("messages", [])
        # The application keeps the last four messages of the thread.
        trim = [RemoveMessage(id=str(m.id)) for m in history[:-4]]
        agent.invoke({"messages": [*trim, HumanMessage(fact)]}, _config(user))
    _check_ranges(memory, user)
    # The question of the first run left the history: memory still brings it back.
    agent.invoke({"messages": [HumanMessage(QUESTION)]}, _config(user))
    assert "My dog is called Biscuit." in model.prompt_text()


def test_a_thread_begun_by_an_older_version_goes_on(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    agent, _, _ = _agent(memory, user)
    agent.invoke({"messages": [HumanMessage(FACTS[0][0])]}, _config(user))
    # An older version kept no thread positions in its run state.
    key = "recalled_episodes_run"
    run = agent.get_state(_config(user)).values[key]
    old = {
        k: v
        for k, v in run.items()
        if k not in ("thread_start", "window", "window_id", "thread_end", "last_id")
    }
    agent.update_state(_config(user), {key: old})
    for fact, _ in FACTS[1:]:
        agent.invoke({"messages": [HumanMessage(fact)]}, _config(user))
    _check_ranges(memory, user)
