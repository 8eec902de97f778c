"""A server collection whose making was cut off gets the payload indexes it lacks when opened.

`ensure_collection` makes a server collection in several requests: the collection, then one per
payload index. Cut off after the first (a crash, or a timeout the retry then read as "it
exists"), the collection was opened as it was from then on, and only missing keyword indexes
were added. A Qdrant server orders by a key only with its range index, so every ordered read
(`read_recent`, by `timestamp_end`) of such a store failed for good. Every missing index of the
spec (tenant, keyword, float, integer) is now created when the collection is opened.
"""

from __future__ import annotations

from typing import Any

import pytest
from episodex._engines.plan import CollectionSpec
from episodex._engines.qdrant import QdrantClientEngine
from qdrant_client import models

from ._support import QDRANT_API_KEY, QDRANT_URL, server_prefix

SPEC = CollectionSpec(
    name="episodes",
    dense={"short": 4},
    tenant_key="user_id",
    keywords=("agent_id",),
    floats=("timestamp_end",),
    integers=("end_index",),
)
ALL_KEYS = {"user_id", "agent_id", "timestamp_end", "end_index"}


def _cut_off(engine: QdrantClientEngine) -> None:
    """What a making cut off after its first request leaves: the collection, no index."""
    engine.client.create_collection(
        f"{engine._prefix}{SPEC.name}",  # pyright: ignore[reportPrivateUsage]
        vectors_config={"short": models.VectorParams(size=4, distance=models.Distance.COSINE)},
    )


def _engine(where: str) -> QdrantClientEngine:
    if where == "server":
        return QdrantClientEngine(
            url=QDRANT_URL, location=None, api_key=QDRANT_API_KEY, prefix=server_prefix()
        )
    # qdrant-client's local mode, taken through the server paths. It refuses payload indexes
    # (they have no effect there), so the test records what a server would be asked instead.
    engine = QdrantClientEngine(url=None, location=":memory:")
    engine._kind = "server"  # pyright: ignore[reportPrivateUsage]
    return engine


@pytest.mark.parametrize("where", ["local", *(["server"] if QDRANT_URL else [])])
def test_opening_a_cut_off_server_collection_creates_every_missing_index(where: str) -> None:
    engine = _engine(where)
    name = f"{engine._prefix}{SPEC.name}"  # pyright: ignore[reportPrivateUsage]
    asked: list[tuple[str, Any]] = []
    create = engine.client.create_payload_index

    def recorded(collection_name: str, field_name: str, field_schema: Any, **kw: Any) -> Any:
        asked.append((field_name, field_schema))
        if where == "server":
            return create(collection_name, field_name, field_schema, **kw)
        return None

    engine.client.create_payload_index = recorded  # type: ignore[method-assign]
    try:
        _cut_off(engine)
        engine.ensure_collection(SPEC)
        assert {key for key, _ in asked} == ALL_KEYS
        schemas = dict(asked)
        assert schemas["timestamp_end"] == models.PayloadSchemaType.FLOAT
        assert schemas["end_index"] == models.PayloadSchemaType.INTEGER
        assert isinstance(schemas["user_id"], models.KeywordIndexParams)
        assert schemas["user_id"].is_tenant
        if where == "server":
            assert ALL_KEYS <= set(engine.client.get_collection(name).payload_schema or {})
            asked.clear()
            engine.ensure_collection(SPEC)  # indexed: nothing more is asked
            assert asked == []
    finally:
        if where == "server":
            engine.client.delete_collection(name)
        engine.close()
