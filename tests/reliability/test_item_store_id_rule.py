"""An item is only stored for a user and agent its owner can search, list and forget by.

`ItemStore` checked an item's user and agent ids only for being non-blank text, while every
tenant read (`search`, `list_namespaces`, `count`, `forget`) applies the store's one id rule
(1 to 512 characters). An item put for a 600-character user id was stored, and then no search
or forget of that user could reach it: `forget` raised `ValidationError` and the item stayed.
A write now applies the same rule and stores nothing.
"""

from __future__ import annotations

import pytest
from episodex import EpisodicMemory, ItemPut, ItemRef, ItemStore, ValidationError
from episodex.plan import Filter
from episodex.testing import HashEmbedder


@pytest.mark.parametrize("field", ["user_id", "agent_id"])
def test_an_item_whose_tenant_no_read_accepts_is_refused(field: str) -> None:
    memory = EpisodicMemory(location=":memory:", embedder=HashEmbedder(), splade=False)
    try:
        items = ItemStore(memory.engine, memory.embedder)
        long_id = "t" * 600
        user, agent = (long_id, "a") if field == "user_id" else ("u", long_id)
        ok = ItemPut(ItemRef("u", "a", ("notes",), "fine"), {"v": 1}, text="a fine note")
        bad = ItemPut(ItemRef(user, agent, ("notes",), "k"), {"v": 2}, text="unreachable")
        with pytest.raises(ValidationError, match=rf"put 1: {field} must be at most 512"):
            items.write([ok, bad])
        assert memory.engine.count("items", Filter()) == 0  # nothing of the batch stored
        # At the limit, the item is written and its owner reaches it.
        at_limit = "t" * 512
        user, agent = (at_limit, "a") if field == "user_id" else ("u", at_limit)
        items.write([ItemPut(ItemRef(user, agent, ("notes",), "k"), {"v": 3}, text="reachable")])
        assert items.count(user_id=user, agent_id=agent) == 1
        assert items.forget(user_id=user, agent_id=agent) == 1
    finally:
        memory.close()
