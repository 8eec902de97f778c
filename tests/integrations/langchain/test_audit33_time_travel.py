"""A thread rewound by LangGraph time travel forgets the runs of the branch it left.

LangGraph forks a thread at one of its checkpoints: the runs that followed it on the branch
the thread left are no longer the thread's. Only the run at the fork point was replaced; the
episodes of the later ones stayed in memory and were recalled as if they had happened (a run
two answers later than the fork point claimed the positions the new branch then used). A run
recorded on a thread now forgets that thread's episodes from its start on that are not its
own, and only those of the same line of runs: other threads of the conversation keep theirs,
and so does an earlier thread whose id a new checkpointer uses again.
"""

from __future__ import annotations

import uuid
from typing import Any

from episodex import EpisodicMemory
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import EchoChatModel


def _answer(messages: list[BaseMessage]) -> BaseMessage:
    question = next(m for m in reversed(messages) if isinstance(m, HumanMessage)).text
    return AIMessage(f"About {question}: answer {uuid.uuid4().hex[:8]}.")


def _agent(memory: EpisodicMemory) -> tuple[EpisodicMemoryMiddleware, Any]:
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    agent = create_agent(
        EchoChatModel(answer=_answer),
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    return middleware, agent


def _stored(memory: EpisodicMemory, user: str) -> list[tuple[int, int, str]]:
    items = memory.store.read_recent(50, user_id=user, agent_id="support")
    return sorted((e["start_index"], e["end_index"], e["long_summary_text"]) for e in items)


def _thread(agent: Any, config: RunnableConfig) -> list[tuple[int, int, str]]:
    messages: list[BaseMessage] = agent.get_state(config).values["messages"]
    return [
        (i, i + 1, f"user: {messages[i].text}\nassistant: {messages[i + 1].text}")
        for i in range(0, len(messages), 2)
    ]


def _ask(agent: Any, config: RunnableConfig, user: str, *questions: str) -> None:
    for question in questions:
        agent.invoke({"messages": [HumanMessage(question)]}, config, context={"user_id": user})


def _ended_with(agent: Any, config: RunnableConfig, messages: int) -> RunnableConfig:
    """The config of the checkpoint where the thread's run ended with `messages` messages."""
    return next(
        s.config
        for s in agent.get_state_history(config)
        if not s.next and len(s.values.get("messages", [])) == messages
    )


def test_a_fork_forgets_every_later_run_of_the_branch_it_left(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware, agent = _agent(memory)
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    _ask(agent, config, user, "Where is my refund?", "And the invoice?", "And the receipt?")
    # Back to the end of the first run, with another second question.
    _ask(agent, _ended_with(agent, config, 2), user, "Cancel my order instead.")
    _ask(agent, config, user, "Thanks!")
    assert middleware.flush() == 0
    stored = _stored(memory, user)
    assert stored == _thread(agent, config)
    assert [line.split("\n")[0] for _, _, line in stored] == [
        "user: Where is my refund?",
        "user: Cancel my order instead.",
        "user: Thanks!",
    ]
    # The left branch is not recalled either.
    found = memory.store.recall(
        user_id=user, agent_id="support", query="receipt invoice", previous_conversation_limit=10
    )
    assert not any(
        "receipt" in e["long_summary_text"] or "invoice" in e["long_summary_text"]
        for e in found["previous_conversations"]
    )


def test_a_thread_id_used_again_on_a_new_checkpointer_keeps_the_earlier_episodes(
    memory: EpisodicMemory,
) -> None:
    # A restarted process (a new `InMemorySaver`) begins the thread again at position 0: the
    # earlier thread's episodes are past conversations to recall, not a branch it left.
    user = f"user-{uuid.uuid4().hex}"
    config: RunnableConfig = {"configurable": {"thread_id": user}}
    middleware, agent = _agent(memory)
    _ask(agent, config, user, "Where is my refund?", "And the invoice?")
    again, restarted = _agent(memory)
    _ask(restarted, config, user, "Where is my parcel?")
    assert middleware.flush() == 0 and again.flush() == 0
    assert [line.split("\n")[0] for _, _, line in _stored(memory, user)] == [
        "user: Where is my parcel?",
        "user: Where is my refund?",
        "user: And the invoice?",
    ]


def test_threads_sharing_a_conversation_keep_their_runs_when_one_forks(
    memory: EpisodicMemory,
) -> None:
    # Forgetting the left branch is the forked thread's business only.
    user = f"user-{uuid.uuid4().hex}"
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support", conversation_id="c1")
    agent = create_agent(
        EchoChatModel(answer=_answer),
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    first: RunnableConfig = {"configurable": {"thread_id": f"{user}-1"}}
    second: RunnableConfig = {"configurable": {"thread_id": f"{user}-2"}}
    _ask(agent, first, user, "Where is my refund?", "And the invoice?")
    _ask(agent, second, user, "Where is my parcel?", "And the label?")
    _ask(agent, _ended_with(agent, first, 2), user, "Cancel my order instead.")
    assert middleware.flush() == 0
    assert [line.split("\n")[0] for _, _, line in _stored(memory, user)] == [
        "user: Where is my parcel?",
        "user: Where is my refund?",
        "user: And the label?",
        "user: Cancel my order instead.",
    ]
