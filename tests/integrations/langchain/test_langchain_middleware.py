from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from episodex import ConfigurationError, ProgrammaticGrader, StepLessonMemory
from episodex import EpisodicMemory as Episodes
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_episodex import EpisodicContext, EpisodicMemoryMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from lc_fakes import RecordingChatModel

SYSTEM = "You are a support agent."


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    return f"Order {order_id} shipped on Monday."


def _script() -> RecordingChatModel:
    return RecordingChatModel(
        responses=[
            AIMessage(
                "",
                tool_calls=[{"name": "lookup_order", "args": {"order_id": "1234"}, "id": "call-1"}],
            ),
            AIMessage("Your order 1234 shipped on Monday."),
        ],
        received=[],
    )


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def _system(messages: list[BaseMessage]) -> str:
    assert isinstance(messages[0], SystemMessage)
    return str(messages[0].content)


def _user() -> str:
    return f"user-{uuid.uuid4().hex}"


def test_sync_run_is_recorded_and_recalled_next_time(memory: Episodes) -> None:
    user = _user()
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    first_model = _script()
    agent = create_agent(
        first_model,
        tools=[lookup_order],
        system_prompt=SYSTEM,
        middleware=[middleware],
        context_schema=EpisodicContext,
    )
    out = agent.invoke(
        _ask("Where is my order 1234?"),  # pyright: ignore[reportArgumentType]
        context={"user_id": user, "conversation_id": "c1"},  # pyright: ignore[reportArgumentType]
    )
    assert out["messages"][-1].text == "Your order 1234 shipped on Monday."
    assert out["recalled_episodes"] == ""
    assert [_system(m) for m in first_model.received] == [SYSTEM, SYSTEM]  # nothing recalled yet

    recent = middleware_memory_recent(memory, user)
    assert recent["short_summary_text"] == "Where is my order 1234?"
    assert recent["tools_invoked"] == ["lookup_order"]
    assert recent["long_summary_text"] == (
        "user: Where is my order 1234?\nassistant: [called lookup_order]\n"
        "tool: Order 1234 shipped on Monday.\nassistant: Your order 1234 shipped on Monday."
    )
    assert recent["conversation_id"] == "c1"
    assert (recent["start_index"], recent["end_index"]) == (0, 3)

    second_model = _script()
    agent = create_agent(
        second_model,
        tools=[lookup_order],
        system_prompt=SYSTEM,
        middleware=[middleware],
        context_schema=EpisodicContext,
    )
    question = "Has order 1234 shipped yet?"
    expected = _recall(memory, user, "c2", question)
    assert "Where is my order 1234?" in expected
    out = agent.invoke(_ask(question), context={"user_id": user, "conversation_id": "c2"})  # pyright: ignore[reportArgumentType]
    # Both model calls of the run (before and after the tool) get the block, verbatim.
    assert [_system(m) for m in second_model.received] == [f"{SYSTEM}\n\n{expected}"] * 2
    assert out["recalled_episodes"] == expected
    # Injected per call, never persisted in the history.
    assert not any(expected in str(m.content) for m in out["messages"])


async def test_async_run_is_recorded_and_recalled_next_time(memory: Episodes) -> None:
    user = _user()
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support", user_id=user)
    agent = create_agent(_script(), tools=[lookup_order], middleware=[middleware])
    await agent.ainvoke(
        _ask("Where is my order 1234?"),  # pyright: ignore[reportArgumentType]
        config={"configurable": {"thread_id": "t1"}},  # pyright: ignore[reportArgumentType]
    )
    assert await memory.count(user_id=user, agent_id="support", conversation_id="t1") == 1

    model = _script()
    agent = create_agent(model, tools=[lookup_order], middleware=[middleware])
    expected = _recall(memory, user, "t2", "order 1234 status")
    await agent.ainvoke(_ask("order 1234 status"), config={"configurable": {"thread_id": "t2"}})  # pyright: ignore[reportArgumentType]
    # No system prompt: the block becomes the system message.
    assert [_system(m) for m in model.received] == [expected, expected]


def test_two_users_never_see_each_other(memory: Episodes) -> None:
    alice, bob = _user(), _user()
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support")
    agent = create_agent(
        _script(), tools=[lookup_order], system_prompt=SYSTEM, middleware=[middleware]
    )
    agent.invoke(_ask("Where is my order 1234?"), context={"user_id": alice})  # pyright: ignore[reportArgumentType]
    model = _script()
    agent = create_agent(model, tools=[lookup_order], system_prompt=SYSTEM, middleware=[middleware])
    out = agent.invoke(_ask("Where is my order 1234?"), context={"user_id": bob})  # pyright: ignore[reportArgumentType]
    assert out["recalled_episodes"] == ""
    assert [_system(m) for m in model.received] == [SYSTEM, SYSTEM]


@dataclass
class AppContext:
    user_id: str
    tenant: str


def test_checkpointed_thread_records_each_run(memory: Episodes) -> None:
    user = _user()
    middleware = EpisodicMemoryMiddleware(memory, agent_id="support", conversation_id="thread-a")
    model = RecordingChatModel(
        responses=[AIMessage("Noted: aisle seat."), AIMessage("Booked, aisle seat.")], received=[]
    )
    agent = create_agent(
        model, middleware=[middleware], checkpointer=InMemorySaver(), context_schema=AppContext
    )
    config: Any = {"configurable": {"thread_id": "x"}}
    context = AppContext(user_id=user, tenant="acme")
    agent.invoke(_ask("I always want an aisle seat"), config=config, context=context)  # pyright: ignore[reportArgumentType]
    out = agent.invoke(
        _ask("Book my flight to Oslo with my usual seat"),  # pyright: ignore[reportArgumentType]
        config=config,
        context=context,  # pyright: ignore[reportArgumentType]
    )
    # The second run's episode covers only its own messages.
    recent = middleware_memory_recent(memory, user)
    assert recent["short_summary_text"] == "Book my flight to Oslo with my usual seat"
    assert (recent["start_index"], recent["end_index"]) == (2, 3)
    # Turn 1 is in the thread's history the model sees: it is not recalled a second time.
    assert out["recalled_episodes"] == ""
    assert not any(isinstance(m, SystemMessage) for m in model.received[1])  # nothing injected
    assert "I always want an aisle seat" in model.prompt_text(1)
    assert model.prompt_text(1).count("I always want an aisle seat") == 1


async def test_reflection_model_writes_the_summaries(memory: Episodes) -> None:
    user = _user()
    reflector = RecordingChatModel(
        responses=[
            AIMessage(
                "User checked on order 1234.\nThe agent looked the order up; it shipped Monday."
            )
        ],
        received=[],
    )
    middleware = EpisodicMemoryMiddleware(
        memory, agent_id="support", user_id=user, reflection_model=reflector
    )
    agent = create_agent(_script(), tools=[lookup_order], middleware=[middleware])
    await agent.ainvoke(_ask("Where is my order 1234?"))  # pyright: ignore[reportArgumentType]
    recent = middleware_memory_recent(memory, user)
    assert recent["short_summary_text"] == "User checked on order 1234."
    assert recent["long_summary_text"] == "The agent looked the order up; it shipped Monday."
    assert "assistant: [called lookup_order]" in reflector.prompt_text()


async def test_lessons_mode_injects_the_lessons_block(memory: Episodes) -> None:
    user = _user()
    lessons = StepLessonMemory.from_memory(
        memory, grader=ProgrammaticGrader(expected_actions=["click('12')"])
    )
    page = {
        "url": "https://desk.example/tickets/7",
        "elements": ["[12] button 'Priority'", "[13] link 'Close'"],
    }
    # Attempt 1, recorded by the application: a wrong click, graded at the end.
    await lessons.init_episode("ticket-7", user_id=user, agent_id="web", task="raise the priority")
    await lessons.record_step_start(
        env_pre=page, internal_state="I should close it", action="click('13')"
    )
    await lessons.end_episode(final_env=page)
    await lessons.init_episode("ticket-7", user_id=user, agent_id="web", task="raise the priority")
    expected = await lessons.lessons_block(page, "raise the priority")
    assert "AVOID" in expected

    episodes = EpisodicMemoryMiddleware(memory, agent_id="web", user_id=user)
    steps = EpisodicMemoryMiddleware(
        mode="lessons", lessons=lessons, env=lambda state, runtime: page
    )
    assert {episodes.name, steps.name} == {
        "EpisodicMemoryMiddleware[recalled_episodes]",
        "EpisodicMemoryMiddleware[recalled_lessons]",
    }
    model = RecordingChatModel(responses=[AIMessage("Done.")], received=[])
    agent = create_agent(model, system_prompt=SYSTEM, middleware=[episodes, steps])
    await agent.ainvoke(_ask("raise the priority"))  # pyright: ignore[reportArgumentType]
    assert _system(model.received[0]) == f"{SYSTEM}\n\n{expected}"
    sync_model = RecordingChatModel(responses=[AIMessage("Done.")], received=[])
    create_agent(sync_model, middleware=[steps]).invoke(_ask("raise the priority"))  # pyright: ignore[reportArgumentType]
    assert _system(sync_model.received[0]) == expected


def test_two_episode_middlewares_coexist(memory: Episodes) -> None:
    user = _user()
    shared = Episodes(location=":memory:")
    try:
        shared.store.memorize_many(
            [
                {
                    "short_summary": "Team policy: refunds need a receipt",
                    "long_summary": "Refunds are only issued with a receipt.",
                    "user_id": "team",
                    "agent_id": "support",
                    "conversation_id": "policy",
                }
            ]
        )
        personal = EpisodicMemoryMiddleware(memory, agent_id="support", user_id=user)
        team = EpisodicMemoryMiddleware(
            shared, agent_id="support", user_id="team", state_key="team_episodes", record=False
        )
        model = RecordingChatModel(responses=[AIMessage("You need a receipt.")], received=[])
        out = create_agent(model, middleware=[personal, team]).invoke(_ask("Can I get a refund?"))  # pyright: ignore[reportArgumentType]
        assert "Team policy: refunds need a receipt" in out["team_episodes"]
        assert out["team_episodes"] in _system(model.received[0])
        assert shared.store.count(user_id="team", agent_id="support") == 1  # record=False
    finally:
        shared.close()


def test_bad_configuration_raises_typed_errors(memory: Episodes) -> None:
    with pytest.raises(ConfigurationError, match="needs memory"):
        EpisodicMemoryMiddleware("./memory")
    with pytest.raises(ConfigurationError, match="lessons="):
        EpisodicMemoryMiddleware(mode="lessons")
    with pytest.raises(ConfigurationError, match="env="):
        EpisodicMemoryMiddleware(mode="lessons", lessons=StepLessonMemory.from_memory(memory))
    with pytest.raises(ConfigurationError, match="state_key"):
        EpisodicMemoryMiddleware(memory, state_key="messages")
    with pytest.raises(ConfigurationError, match="unknown recall option"):
        EpisodicMemoryMiddleware(memory, recall_options={"top": 2})
    with pytest.raises(ConfigurationError, match="mode"):
        EpisodicMemoryMiddleware(memory, mode="facts")  # type: ignore[arg-type]
    agent = create_agent(
        _script(), tools=[lookup_order], middleware=[EpisodicMemoryMiddleware(memory)]
    )
    with pytest.raises(ConfigurationError, match="no user_id"):
        agent.invoke(_ask("hello"))  # pyright: ignore[reportArgumentType]


def middleware_memory_recent(memory: Episodes, user: str) -> dict[str, Any]:
    return memory.store.read_recent(1, user_id=user, agent_id=memory_agent(memory, user))[0]


def memory_agent(memory: Episodes, user: str) -> str:
    for agent in ("support", "web"):
        if memory.store.count(user_id=user, agent_id=agent):
            return agent
    raise AssertionError(f"nothing recorded for {user}")


def _recall(memory: Episodes, user: str, conversation: str, query: str) -> str:
    from episodex import format_recall

    return format_recall(
        memory.store.recall(
            user_id=user, agent_id="support", conversation_id=conversation, query=query
        )
    )
