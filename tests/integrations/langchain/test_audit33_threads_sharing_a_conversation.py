"""Threads sharing one conversation recall each other's runs.

Each LangGraph thread counts its episodes' positions over its own messages, so two threads
recording into one conversation (a middleware given `conversation_id`, or a runtime context
that names the same conversation for both) store episodes at the same positions. The recall
left out every episode of the conversation ending where the thread's own messages still in
the model's prompt are (`seen_from`/`seen_until`): the other thread's episodes at those
positions were left out too, though the model never saw them, so a thread never recalled
what was said in the other. The window now leaves out only the thread's own episodes (its
thread id and line of runs in their metadata); a single thread recalls as before.
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
    return AIMessage(f"Noted: {question}")


def _agent(
    memory: EpisodicMemory, **ids: Any
) -> tuple[EpisodicMemoryMiddleware, EchoChatModel, Any]:
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support", **ids)
    model = EchoChatModel(answer=_answer)
    agent = create_agent(
        model,
        middleware=[middleware],
        context_schema=EpisodicContext,
        checkpointer=InMemorySaver(),
    )
    return middleware, model, agent


def _ask(agent: Any, thread: str, question: str, **context: str) -> None:
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    agent.invoke({"messages": [HumanMessage(question)]}, config, context=context)


def _prompt(model: EchoChatModel) -> str:
    return "\n".join(str(m.text) for m in model.received[-1])


def _recalled(model: EchoChatModel) -> str:
    """The recalled block of the last model call ("" for none)."""
    prompt = _prompt(model)
    start, end = prompt.find("<recalled_episodes>"), prompt.find("</recalled_episodes>")
    return "" if start < 0 else prompt[start:end]


def test_a_thread_recalls_what_another_thread_of_its_conversation_said(
    memory: EpisodicMemory,
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware, model, agent = _agent(memory, conversation_id=f"c-{user}")
    _ask(agent, f"{user}-a", "I am planning a trip to Lisbon.", user_id=user)
    _ask(agent, f"{user}-b", "My dog is called Biscuit.", user_id=user)
    assert middleware.flush() == 0
    # Thread a's first run is in its prompt; thread b's run, at the same positions, is not.
    _ask(agent, f"{user}-a", "What is the name of my dog?", user_id=user)
    recalled = _recalled(model)
    assert "Biscuit" in recalled
    # Thread a's own first run is in the prompt as messages, not recalled again.
    assert "Lisbon" not in recalled


def test_threads_a_context_maps_to_one_conversation_recall_each_other(
    memory: EpisodicMemory,
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware, model, agent = _agent(memory)
    context = {"user_id": user, "conversation_id": f"c-{user}"}
    _ask(agent, f"{user}-a", "I am planning a trip to Lisbon.", **context)
    _ask(agent, f"{user}-b", "My dog is called Biscuit.", **context)
    _ask(agent, f"{user}-b", "I also have a cat called Miso.", **context)
    assert middleware.flush() == 0
    _ask(agent, f"{user}-a", "What are the names of my pets?", **context)
    recalled = _recalled(model)
    assert "Biscuit" in recalled and "Miso" in recalled
    assert "Lisbon" not in recalled


def test_a_single_thread_still_leaves_out_what_its_prompt_holds(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    middleware, model, agent = _agent(memory, conversation_id=f"c-{user}")
    _ask(agent, f"{user}-a", "My dog is called Biscuit.", user_id=user)
    _ask(agent, f"{user}-a", "I am planning a trip to Lisbon.", user_id=user)
    assert middleware.flush() == 0
    _ask(agent, f"{user}-a", "What is the name of my dog?", user_id=user)
    assert "Biscuit" in _prompt(model)
    assert _recalled(model) == ""
