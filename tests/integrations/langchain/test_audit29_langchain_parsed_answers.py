"""`record_exchange` records a parsed answer as its JSON, as the classic memory does.

An LCEL chain ending in an output parser (`prompt | model | JsonOutputParser()`) answers with
a dict, a list or a pydantic model. The classic memory records such an answer as its JSON,
but `record_exchange` / `arecord_exchange` refused it with `ValidationError`, so the chain's
turn could not be recorded. Both now use the same conversion; a value with no JSON text (a
dict that contains itself, keys JSON cannot hold) or no parsed data at all (an iterator) is a
`ValidationError` with nothing stored, and the classic memory records such a value as its
plain text instead of failing the chain (a tuple key made it raise `TypeError`).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from episodex import EpisodicMemory, ValidationError
from langchain_classic.chains import LLMChain
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import BaseOutputParser, JsonOutputParser
from langchain_core.prompts import PromptTemplate
from langchain_episodex import EpisodicConversationMemory, arecord_exchange, record_exchange
from lc_fakes import RecordingChatModel
from pydantic import BaseModel

AGENT = "planner"
QUESTION = "Plan my trip to Oslo for three nights."


class Trip(BaseModel):
    """A trip the user plans."""

    city: str
    nights: int


def _recorded(memory: EpisodicMemory, user: str) -> list[str]:
    items = memory.store.read_recent(5, user_id=user, agent_id=AGENT)
    return [item["long_summary_text"] for item in items]


def _user() -> str:
    return f"user-{uuid.uuid4().hex}"


def test_record_exchange_records_a_parsed_dict_as_json(memory: EpisodicMemory) -> None:
    user = _user()
    chain = (
        PromptTemplate.from_template("{question}")
        | RecordingChatModel(responses=[AIMessage('{"city": "Oslo", "nights": 3}')], received=[])
        | JsonOutputParser()
    )
    answer = chain.invoke({"question": QUESTION})
    assert answer == {"city": "Oslo", "nights": 3}
    record_exchange(memory, QUESTION, answer, user_id=user, agent_id=AGENT, conversation_id="c1")
    assert _recorded(memory, user) == [
        f'user: {QUESTION}\nassistant: {{"city": "Oslo", "nights": 3}}'
    ]


async def test_arecord_exchange_records_a_model_and_a_list_as_json(memory: EpisodicMemory) -> None:
    user = _user()
    for question, answer in (
        (QUESTION, Trip(city="Oslo", nights=3)),
        ("And after?", ["Bergen", "Tromsø"]),
    ):
        await arecord_exchange(
            memory, question, answer, user_id=user, agent_id=AGENT, conversation_id="c1"
        )
    assert sorted(_recorded(memory, user)) == [
        'user: And after?\nassistant: ["Bergen", "Tromsø"]',
        f'user: {QUESTION}\nassistant: {{"city":"Oslo","nights":3}}',
    ]


def test_an_answer_with_no_json_text_is_a_validation_error(memory: EpisodicMemory) -> None:
    user = _user()
    looped: dict[str, Any] = {"city": "Oslo"}
    looped["self"] = looped
    for answer in (looped, {("Oslo", "Bergen"): 3}, iter(["Oslo"])):
        with pytest.raises(ValidationError, match="answer"):
            record_exchange(
                memory, QUESTION, answer, user_id=user, agent_id=AGENT, conversation_id="c1"
            )
    assert _recorded(memory, user) == []


class _PairParser(BaseOutputParser[dict[tuple[str, str], int]]):
    """Parses `a-b: n` into `{(a, b): n}`: keys JSON cannot hold."""

    def parse(self, text: str) -> dict[tuple[str, str], int]:
        pair, _, nights = text.partition(": ")
        first, _, second = pair.partition("-")
        return {(first, second): int(nights)}


@pytest.mark.filterwarnings("ignore::langchain_core._api.deprecation.LangChainDeprecationWarning")
def test_the_classic_memory_keeps_the_answer_that_has_no_json_text(
    memory: EpisodicMemory,
) -> None:
    user = _user()
    chat = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="c1", input_key="question"
    )
    chain = LLMChain(
        llm=RecordingChatModel(responses=[AIMessage("Oslo-Bergen: 3")], received=[]),
        prompt=PromptTemplate.from_template("{history}\nUser: {question}"),
        output_parser=_PairParser(),
        memory=chat,
    )
    out = chain.invoke({"question": QUESTION})
    assert out["text"] == {("Oslo", "Bergen"): 3}
    assert _recorded(memory, user) == [f"user: {QUESTION}\nassistant: {{('Oslo', 'Bergen'): 3}}"]
