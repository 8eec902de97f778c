"""An episode changed in place after it was made is checked again when a task store writes it.

`Episode` is frozen, but its `metadata` and `additional_data` are plain dicts a caller can still
change (`episode.metadata["score"] = ...`). The stores took any `Episode` as valid:

- `JSONLTaskStore` appended the line, then failed indexing it (an `additional_data` value that
  is not text: a raw `TypeError`; a key that is not an element name: `ValidationError`), so the
  call raised with the record already in the file; and a value out of the store's range (an
  integer over 64 bits) was written without error. Either way the next opening met a line that
  does not validate and raised `StoreFileError`: the store no longer opened.
- a NaN was written as `null`, a value changed without a word.
- `QdrantTaskStore` failed with the raw `TypeError`.

Now every store validates the episode again before anything is written: `ValidationError`, and
the store (file and index) as it was.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from episodex import (
    Episode,
    JSONLTaskStore,
    QdrantTaskStore,
    Task,
    TaskStore,
    ValidationError,
)
from episodex.testing import HashEmbedder


def _additional_not_text(e: Episode) -> None:
    assert e.additional_data is not None
    e.additional_data["note"] = 42  # type: ignore[assignment]


def _additional_bad_key(e: Episode) -> None:
    assert e.additional_data is not None
    e.additional_data["</task>"] = "forged"


def _metadata_nan(e: Episode) -> None:
    e.metadata["score"] = math.nan


def _metadata_too_big(e: Episode) -> None:
    e.metadata["big"] = 2**70


def _metadata_datetime(e: Episode) -> None:
    e.metadata["when"] = datetime(2024, 1, 1, tzinfo=UTC)


MUTATIONS: dict[str, Callable[[Episode], None]] = {
    "additional value not text": _additional_not_text,
    "additional key not a name": _additional_bad_key,
    "metadata NaN": _metadata_nan,
    "metadata int over 64 bits": _metadata_too_big,
    "metadata datetime": _metadata_datetime,
}


def _mutated(name: str) -> Episode:
    episode = Episode(
        id_="changed",
        task=Task(instruction="convert 3 miles to km"),
        additional_data={"note": "fine"},
        metadata={"user": "u1"},
    )
    MUTATIONS[name](episode)
    return episode


@pytest.fixture(params=["jsonl", "memory"])
def kind(request: pytest.FixtureRequest) -> Iterator[str]:
    yield str(request.param)


def _open(kind: str, folder: Path) -> TaskStore:
    if kind == "jsonl":
        return JSONLTaskStore(folder)
    return QdrantTaskStore(location=":memory:", embedder=HashEmbedder())


def _close(store: TaskStore) -> None:
    assert isinstance(store, JSONLTaskStore | QdrantTaskStore)
    store.close()


@pytest.mark.parametrize("mutation", list(MUTATIONS))
async def test_a_write_of_an_episode_changed_in_place_is_refused_whole(
    tmp_path: Path, kind: str, mutation: str
) -> None:
    store = _open(kind, tmp_path)
    try:
        kept = Episode(id_="kept", task=Task(instruction="translate good morning"))
        await store.write(kept)
        file_before = store.path.read_bytes() if isinstance(store, JSONLTaskStore) else b""
        with pytest.raises(ValidationError):
            await store.write(_mutated(mutation))
        assert [e.id_ for e in await store.read_recent(5)] == ["kept"]
        if isinstance(store, JSONLTaskStore):
            assert store.path.read_bytes() == file_before
            store.close()
            reopened = JSONLTaskStore(tmp_path)  # raised StoreFileError: a bad line
            assert [e.id_ for e in await reopened.read_recent(5)] == ["kept"]
            reopened.close()
    finally:
        _close(store)


async def test_an_update_of_an_episode_changed_in_place_is_refused_whole(tmp_path: Path) -> None:
    with JSONLTaskStore(tmp_path) as store:
        episode = Episode(
            id_="changed", task=Task(instruction="convert miles"), additional_data={"n": "1"}
        )
        await store.write(episode)
        before = store.path.read_bytes()
        _additional_bad_key(episode)
        with pytest.raises(ValidationError):
            await store.update(episode)
        assert store.path.read_bytes() == before
    with JSONLTaskStore(tmp_path) as reopened:
        assert [e.additional_data for e in await reopened.read_recent(5)] == [{"n": "1"}]
