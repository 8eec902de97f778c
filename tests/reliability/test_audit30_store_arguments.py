"""Store arguments checked at construction, alike in every store: the embedder and `bm25`.

`ItemStore(engine, embedder)` took anything as its embedder (a model name failed only at its
first use, with `AttributeError`), and `ItemStore` and `EpisodicMemory` took anything as `bm25`;
now each is refused with `ConfigurationError` before a collection is made, as the task stores do.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conformance.backends import BACKENDS, drop_server_collections, engine_options
from episodex import (
    ConfigurationError,
    Engine,
    EpisodicMemory,
    ItemStore,
    QdrantTaskStore,
    open_engine,
)
from episodex.testing import HashEmbedder


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    path, options = engine_options(request.param, tmp_path)
    opened = open_engine(path=str(path) if path else None, **options)
    yield opened
    drop_server_collections(opened)
    opened.close()


def _no_collection(engine: Engine, name: str) -> bool:
    from episodex.plan import Filter

    try:
        engine.count(name, Filter())
    except Exception:
        return True
    return False


BAD_EMBEDDERS: list[Any] = [
    pytest.param("BAAI/bge-small-en-v1.5", id="model-name"),
    pytest.param(None, id="none"),
    pytest.param(object(), id="object"),
    pytest.param(HashEmbedder(dimension=0), id="zero-dimension"),
    pytest.param(HashEmbedder(model_id=""), id="empty-model-id"),
]


@pytest.mark.parametrize("embedder", BAD_EMBEDDERS)
def test_an_item_store_refuses_what_is_no_embedder(engine: Engine, embedder: Any) -> None:
    with pytest.raises(ConfigurationError, match="embedder"):
        ItemStore(engine, embedder)
    assert _no_collection(engine, "items")


@pytest.mark.parametrize("bm25", ["english", {"k": 1.2}, 1.2])
def test_every_store_refuses_what_is_no_bm25_encoder(engine: Engine, bm25: Any) -> None:
    with pytest.raises(ConfigurationError, match="bm25 must be None or a Bm25Encoder"):
        ItemStore(engine, HashEmbedder(), bm25=bm25)
    with pytest.raises(ConfigurationError, match="bm25 must be None or a Bm25Encoder"):
        EpisodicMemory(engine=engine, embedder=HashEmbedder(), bm25=bm25, splade=False)
    with pytest.raises(ConfigurationError, match="bm25 must be None or a Bm25Encoder"):
        QdrantTaskStore(engine=engine, embedder=HashEmbedder(), bm25=bm25)
    assert _no_collection(engine, "items")
    assert _no_collection(engine, "episodes")
