"""Recalled episodes as LangChain `Document`s, and back into the `<recalled_episodes>` block."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from episodex import format_recall
from langchain_core.documents import Document

__all__ = ["SECTIONS", "episode_document", "render_documents"]

SECTIONS = ("same_conversation", "previous_conversations")

# Stored fields copied into a document's metadata, under these names.
_FIELDS = {
    "score": "score",
    "section": "section",
    "conversation_id": "conversation_id",
    "user_id": "user_id",
    "agent_id": "agent_id",
    "long_summary_text": "long_summary",
    "tools_invoked": "tools_invoked",
    "flows_activated": "flows_activated",
    "timestamp_begin": "timestamp_begin",
    "timestamp_end": "timestamp_end",
    "start_index": "start_index",
    "end_index": "end_index",
    "streams": "streams",
}


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | tuple | dict) and not value)


def episode_document(item: Mapping[str, Any], section: str) -> Document:
    """One recalled episode as a `Document`: the short summary as content, the rest as metadata.

    Fields with nothing in them (None, `[]`, `""`) are left out, so neither a prompt that
    renders metadata nor a reader of it meets noise.
    """
    values = {**item, "section": section}
    metadata: dict[str, Any] = {"id": item["point_id"]}
    for field, name in _FIELDS.items():
        value = values.get(field)
        if not _empty(value):
            metadata[name] = list(value) if isinstance(value, tuple) else _plain(value)  # pyright: ignore[reportUnknownArgumentType]
    return Document(
        id=item["point_id"], page_content=str(item.get("short_summary_text", "")), metadata=metadata
    )


def _item(doc: Document) -> dict[str, Any]:
    meta = doc.metadata
    when = meta.get("timestamp_end")
    return {
        "point_id": meta.get("id", doc.id),
        "conversation_id": meta.get("conversation_id", ""),
        "timestamp_end": datetime.fromisoformat(when) if isinstance(when, str) else when,
        "score": float(meta.get("score", 0.0)),
        "short_summary_text": doc.page_content,
        "long_summary_text": meta.get("long_summary", ""),
        "tools_invoked": meta.get("tools_invoked", []),
    }


def render_documents(docs: Sequence[Document], *, max_tokens: int | None = None) -> str:
    """The `<recalled_episodes>` block of recalled documents, as the core renders a recall."""
    result: dict[str, list[dict[str, Any]]] = {section: [] for section in SECTIONS}
    for doc in docs:
        result.setdefault(str(doc.metadata.get("section", SECTIONS[1])), []).append(_item(doc))
    return format_recall(result, max_tokens=max_tokens)
