"""An agent loop that learns from its own task episodes.

Three tasks run one after another. Before each, the agent's system prompt gets one
`<recalled_episodes>` block from two memories over the same store: a `ReflectiveMemory` (the
latest episodes, each with a one-sentence lesson an LLM drew when it was recorded) and a
`HybridMemory` (recent and similar episodes fused). After each, the episode is recorded
through the reflective memory. A fourth task then shows what the agent has learnt.

Runs offline on the embedded Qdrant Edge store in a temporary folder, with a scripted fake
LLM. With `OPENAI_API_KEY` set and the `openai` package installed, a real model answers and
reflects instead.

    python examples/task_agent_reflective.py
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile

from episodex import (
    Episode,
    HybridMemory,
    LLMCallable,
    QdrantTaskStore,
    ReflectiveMemory,
    Task,
    TaskResult,
    render_memories,
)

SYSTEM = "You are a careful assistant. Learn from the earlier attempts below."
TASKS = [
    "Convert 3 miles to kilometres",
    "Summarise the meeting notes: budget approved, launch moved to May, hire two engineers",
    "Convert 10 kilometres to miles",
]
NEXT_TASK = "Convert a 26.2 mile marathon to kilometres"


async def fake_llm(prompt: str) -> str:
    """A scripted stand-in for a chat model: answers tasks and draws lessons."""
    if "state the lesson" in prompt:
        if "kilometres to miles" in prompt:
            return "Divide by 1.609 to go from kilometres to miles, and round to two decimals."
        if "miles" in prompt:
            return "Multiply miles by 1.609 and give the unit in the answer."
        return "Lead a summary with the decision, then list the actions."
    task = prompt.rsplit("Task: ", 1)[-1]
    if "3 miles" in task:
        return "3 miles = 4.83 km"
    if "10 kilometres" in task:
        return "10 km = 6.21 miles"
    if "26.2" in task:
        return "26.2 miles = 42.16 km"
    return "Budget approved; launch moved to May; hire two engineers."


def choose_llm() -> tuple[LLMCallable, str]:
    """A real model when OPENAI_API_KEY is set and openai is installed, else the fake."""
    if os.environ.get("OPENAI_API_KEY"):
        try:
            from openai import AsyncOpenAI
        except ImportError:
            return fake_llm, "fake LLM (pip install openai to use OPENAI_API_KEY)"
        client = AsyncOpenAI()

        async def openai_llm(prompt: str) -> str:
            reply = await client.chat.completions.create(
                model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
                messages=[{"role": "user", "content": prompt}],
            )
            return reply.choices[0].message.content or ""

        return openai_llm, "OpenAI"
    return fake_llm, "fake LLM"


async def main() -> None:
    llm, which = choose_llm()
    print(f"LLM: {which}")
    with tempfile.TemporaryDirectory() as folder:
        store = QdrantTaskStore(path=folder)  # the embedded engine, the bundled model
        reflective = ReflectiveMemory(store, llm, n=2)
        hybrid = HybridMemory(store, n=1, k=2)
        try:
            for number, instruction in enumerate(TASKS, start=1):
                task = Task(instruction=instruction)
                recalled = await render_memories([reflective, hybrid], task, max_tokens=600)
                system_prompt = f"{SYSTEM}\n{recalled}" if recalled else SYSTEM
                print(f"\n=== task {number}: {instruction}")
                print(f"--- system prompt ({'with' if recalled else 'no'} recalled episodes)")
                print(system_prompt)
                answer = await llm(f"{system_prompt}\n\nTask: {instruction}")
                print(f"--- answer: {answer}")
                episode = Episode(
                    task=task,
                    rollout=f"thought: solve it directly\nanswer: {answer}",
                    result=TaskResult(task_id=task.id_, content=answer),
                )
                stored = await reflective.record(episode)
                lesson = (stored.additional_data or {}).get("reflection", "(none)")
                print(f"--- lesson recorded: {lesson}")

            print(f"\n=== next task: {NEXT_TASK}")
            recalled = await render_memories([reflective, hybrid], NEXT_TASK, max_tokens=600)
            print(f"{SYSTEM}\n{recalled}")
            shown = re.findall(r"<task>(.*?)</task>", recalled)
            print(f"--- recalled {len(shown)} episodes: {shown}")
            print(f"--- {await hybrid.summary()}")
            print(f"--- reflection failures: {reflective.reflection_failures}")
        finally:
            store.close()


if __name__ == "__main__":
    asyncio.run(main())
