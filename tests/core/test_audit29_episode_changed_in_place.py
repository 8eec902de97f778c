"""An episode whose dicts were changed in place renders or says why, in episodex's error type.

`Episode` is frozen, but its `additional_data` and `metadata` dicts are not. A key put there
afterwards was checked again when rendering (`ValidationError`), a value was not: a number
or None in `additional_data` raised `AttributeError` from the XML escaper (`TypeError` in
the concat form), and a set in `metadata` a `TypeError` from `json`, out of `recall`,
`render_episodes` and `Episode.format` alike. Now those values are refused with
`ValidationError` naming the field, as the stores refuse them on write.
"""

from __future__ import annotations

from typing import Any

import pytest
from episodex import (
    Episode,
    RecencyMemory,
    Task,
    TaskResult,
    ValidationError,
    render_episodes,
)

FIELDS = ["instruction", "additional_data", "metadata"]


class _Held:
    """A duck-typed task store handing back the very episode objects it was given."""

    def __init__(self) -> None:
        self.episodes: list[Episode] = []

    async def write(self, episode: Episode, embedded_text: str | None = None) -> None:
        self.episodes.append(episode)

    async def read_recent(self, n: int) -> list[Episode]:
        return self.episodes[-n:][::-1]

    async def count(self) -> int:
        return len(self.episodes)

    async def search(self, query: str, k: int = 3, **kwargs: Any) -> list[Episode]:
        return self.episodes[:k]

    async def summary(self) -> str:
        return f"{len(self.episodes)} episodes"


def _changed(how: str) -> Episode:
    task = Task(instruction="Convert 3 miles to km")
    episode = Episode(
        task=task,
        result=TaskResult(task_id=task.id_, content="4.83 km"),
        additional_data={"note": "check the units"},
        metadata={"run": 1},
    )
    assert episode.additional_data is not None
    if how == "number note":
        episode.additional_data["note"] = 5  # pyright: ignore[reportArgumentType]
    elif how == "None note":
        episode.additional_data["note"] = None  # pyright: ignore[reportArgumentType]
    elif how == "set in metadata":
        episode.metadata["run"] = {1, 2}
    return episode


@pytest.mark.parametrize("how", ["number note", "None note", "set in metadata"])
async def test_a_value_changed_in_place_is_refused_on_every_rendering_path(how: str) -> None:
    episode = _changed(how)
    with pytest.raises(ValidationError, match=r"additional_data|metadata"):
        render_episodes([episode], include=FIELDS)
    for mode in ("xml", "concat"):
        with pytest.raises(ValidationError, match=r"additional_data|metadata"):
            episode.format(mode, include=FIELDS)  # pyright: ignore[reportArgumentType]
    store = _Held()
    await store.write(episode)
    with pytest.raises(ValidationError, match=r"additional_data|metadata"):
        await RecencyMemory(store, include=FIELDS).recall("convert 5 miles")


async def test_an_unchanged_episode_still_renders_its_note_and_metadata() -> None:
    episode = _changed("nothing")
    block = render_episodes([episode], include=FIELDS)
    assert "<note>check the units</note>" in block
    assert '<metadata>{"run": 1}</metadata>' in block
