"""An OpenAI-style message mapping with content blocks is read for its text, not its repr.

LCEL and classic inputs may be `{"role": "user", "content": [{"type": "text", ...}, ...]}`.
The adapters read a message's content blocks for their text, but such a mapping's content
list was stored (and searched for) as its Python repr: `[{'type': 'text', 'text': ...}]`,
image URLs and all. Its text blocks are now read as a message's are; other blocks are left out.
"""

from __future__ import annotations

import uuid

from episodex import EpisodicMemory
from langchain_episodex import EpisodicConversationMemory, recall_episodes, record_exchange

AGENT = "assistant"
ASKED = {
    "role": "user",
    "content": [
        {"type": "text", "text": "Where is my refund "},
        {"type": "image_url", "image_url": {"url": "https://example.invalid/receipt.png"}},
        "for order 1182?",
    ],
}
ANSWERED = {"role": "assistant", "content": [{"type": "text", "text": "It was sent on Monday."}]}
RECORDED = "user: Where is my refund for order 1182?\nassistant: It was sent on Monday."


def _recorded(memory: EpisodicMemory, user: str) -> list[str]:
    return [
        e["long_summary_text"] for e in memory.store.read_recent(5, user_id=user, agent_id=AGENT)
    ]


def test_record_exchange_reads_the_text_blocks(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    record_exchange(memory, ASKED, ANSWERED, user_id=user, agent_id=AGENT, conversation_id="c1")
    assert _recorded(memory, user) == [RECORDED]


def test_the_classic_memory_reads_the_text_blocks(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    chat = EpisodicConversationMemory(
        memory=memory, user_id=user, agent_id=AGENT, conversation_id="c1"
    )
    chat.save_context({"input": ASKED}, {"output": ANSWERED})  # pyright: ignore[reportArgumentType]
    assert _recorded(memory, user) == [RECORDED]
    # And recall searches by the text, so the exchange is found again.
    block = chat.load_memory_variables({"input": ASKED})["history"]
    assert "Where is my refund for order 1182?" in block


def test_recall_episodes_searches_by_the_text_blocks(memory: EpisodicMemory) -> None:
    user = f"user-{uuid.uuid4().hex}"
    record_exchange(memory, ASKED, ANSWERED, user_id=user, agent_id=AGENT, conversation_id="c1")
    recall = recall_episodes(memory, user_id=user, agent_id=AGENT, conversation_id="c2")
    block = recall.invoke({"input": {"role": "user", "content": [{"type": "text", "text": ""}]}})
    assert block == ""  # only blank text: nothing to search by, as for a blank string
    block = recall.invoke({"input": ASKED})
    assert "order 1182" in block
    assert "image_url" not in block
