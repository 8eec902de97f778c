"""The one id rule every adapter uses: explicit > runtime context > configurable > thread id."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from episodex import ConfigurationError, MemoryScope, ValidationError, resolve_scope


@dataclass
class AppContext:
    user_id: str | None = None
    agent_id: str | None = None


def test_each_id_comes_from_the_first_source_that_names_it() -> None:
    scope = resolve_scope(
        explicit={"agent_id": "bot", "user_id": None},
        context=AppContext(user_id="ctx-user", agent_id="ctx-bot"),
        configurable={"user_id": "cfg-user", "agent_id": "cfg-bot", "conversation_id": "cfg-c"},
        thread_id="thread-1",
    )
    assert scope == MemoryScope(user_id="ctx-user", agent_id="bot", conversation_id="cfg-c")


def test_thread_id_is_the_last_resort_for_the_conversation_only() -> None:
    scope = resolve_scope(configurable={"user_id": "u", "agent_id": "a"}, thread_id="t-9")
    assert scope.conversation_id == "t-9"
    assert resolve_scope(explicit={"user_id": "u", "agent_id": "a"}).conversation_id is None
    with pytest.raises(ConfigurationError, match="no user_id"):
        resolve_scope(explicit={"agent_id": "a"}, thread_id="t-9")


def test_a_bad_winning_id_is_a_typed_error_naming_its_source() -> None:
    with pytest.raises(ValidationError, match="user_id from the runtime context"):
        resolve_scope(context={"user_id": "  "}, configurable={"user_id": "u", "agent_id": "a"})
    with pytest.raises(ConfigurationError, match="no agent_id: pass agent_id= or put it in X"):
        resolve_scope(explicit={"user_id": "u"}, where="X")
