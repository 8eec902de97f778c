"""A classic chain whose output parser returns data keeps its answer, and the turn is recorded.

`LLMChain(..., output_parser=JsonOutputParser())` (or any parser returning a dict, a list or
a pydantic model) hands `save_context` the parsed value. The classic memory could only read
text or messages, so it raised `ValidationError` after the model had answered: the chain
failed and the user lost the answer, on every call. The answer is now recorded as its JSON.
"""

from __future__ import annotations

import uuid

import pytest
from episodex import EpisodicMemory
from langchain_classic.chains import LLMChain
from langchain_classic.chains.base import Chain
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.prompts import PromptTemplate
from langchain_episodex import EpisodicConversationMemory
from lc_fakes import RecordingChatModel
from pydantic import BaseModel

AGENT = "planner"
PROMPT = PromptTemplate.from_template("{history}\nUser: {question}\nAnswer in JSON:")

pytestmark = pytest.mark.filterwarnings(
    "ignore::langchain_core._api.deprecation.LangChainDeprecationWarning"
)


class Trip(BaseModel):
    """A trip the user plans."""

    city: str
    nights: int


def _chain(memory: EpisodicMemory, user: str, *answers: str, pydantic: bool = False) -> Chain:
    chat = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="c1", input_key="question"
    )
    replies: list[BaseMessage] = [AIMessage(a) for a in answers]
    parser = PydanticOutputParser(pydantic_object=Trip) if pydantic else JsonOutputParser()
    return LLMChain(
        llm=RecordingChatModel(responses=replies, received=[]),
        prompt=PROMPT,
        output_parser=parser,
        memory=chat,
    )


def _recorded(memory: EpisodicMemory, user: str) -> list[str]:
    items = memory.store.read_recent(10, user_id=user, agent_id=AGENT)
    return [item["long_summary_text"] for item in items]


def test_a_chain_whose_parser_returns_a_dict_keeps_its_answer(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    chain = _chain(memory, user, '{"city": "Oslo", "nights": 3}')
    out = chain.invoke({"question": "Plan my trip to Oslo for three nights."})
    assert out["text"] == {"city": "Oslo", "nights": 3}
    (summary,) = _recorded(memory, user)
    assert summary == (
        'user: Plan my trip to Oslo for three nights.\nassistant: {"city": "Oslo", "nights": 3}'
    )


async def test_a_chain_whose_parser_returns_a_model_keeps_its_answer_async(
    memory: EpisodicMemory,
) -> None:
    user = f"user-{uuid.uuid4().hex}"
    chain = _chain(memory, user, '{"city": "Bergen", "nights": 2}', pydantic=True)
    out = await chain.ainvoke({"question": "Two nights in Bergen, please."})
    assert out["text"] == Trip(city="Bergen", nights=2)
    (summary,) = _recorded(memory, user)
    assert summary.endswith('assistant: {"city":"Bergen","nights":2}')
