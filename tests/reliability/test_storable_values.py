"""Issue 14, items 1, 4 and 6: what passes validation is what the engines store, unchanged.

Every conversion that can fail (UTC, UTF-8, 64-bit integers, JSON nesting) happens in the
up-front check, so a batch is all-or-nothing and `import_(errors="skip")` skips exactly the bad
lines; nothing accepted can brick the embedded store or come back changed.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    EnvState,
    Episode,
    SyncEpisodicMemory,
    Task,
    TaskResult,
    ValidationError,
)
from episodex.testing import HashEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Slow: property tests over every storable value, on disk; `pytest -m "not slow"` leaves it out.
pytestmark = pytest.mark.slow


def _nest(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"k": value}
    return value


BASE: dict[str, Any] = {
    "short_summary": "s",
    "long_summary": "l",
    "user_id": "u",
    "agent_id": "a",
    "conversation_id": "c",
}

BAD: dict[str, dict[str, Any]] = {
    "utc overflow at the start": {"timestamp_begin": "0001-01-01T00:00+05:00"},
    "utc overflow at the end": {"timestamp_end": "9999-12-31T23:30-05:00"},
    "lone surrogate in a summary": {"short_summary": "refund \ud800 please"},
    "lone surrogate in metadata": {"metadata": {"note": "\udc00"}},
    "lone surrogate in a metadata key": {"metadata": {"\udc00": 1}},
    "lone surrogate in a tool name": {"tools_invoked": ["refund\ud800"]},
    "integer beyond 64 bits in metadata": {"metadata": {"n": 2**70}},
    "index beyond 64 bits": {"start_index": 2**64, "end_index": 2**64},
    "metadata nested 122 levels": {"metadata": _nest(122)},
    "metadata nested 3000 levels": {"metadata": _nest(3000)},
}


def _memory(backend: str, tmp_path: Path) -> SyncEpisodicMemory:
    if backend == "edge":
        return SyncEpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    return SyncEpisodicMemory(location=":memory:", embedder=HashEmbedder())


@pytest.fixture(params=["edge", "memory"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_batch_with_one_bad_episode_writes_nothing(
    backend: str, tmp_path: Path, case: str
) -> None:
    mem = _memory(backend, tmp_path)
    try:
        batch = [{**BASE, "short_summary": f"good {i}"} for i in range(300)]
        batch.append({**BASE, **BAD[case]})
        with pytest.raises(ValidationError, match="episode 300"):
            mem.memorize_many(batch)
        assert mem.count(user_id="u", agent_id="a") == 0
    finally:
        mem.close()


def _export_lines(n: int) -> list[str]:
    return [json.dumps({**BASE, "short_summary": f"good {i}", "point_id": None}) for i in range(n)]


def _bad_line(case: str) -> str:
    # json.dumps writes lone surrogates as \\u escapes, exactly as a file would carry them;
    # nesting is written out by hand, as json.dumps itself cannot go 3,000 levels deep.
    fields = dict(BAD[case])
    nested = fields.pop("metadata", None)
    line = json.dumps({**BASE, **fields})
    if nested is not None and "k" in nested:
        levels = 1
        while nested.get("k") is not None:
            nested, levels = nested["k"], levels + 1
        return line[:-1] + ', "metadata": ' + '{"k": ' * (levels - 1) + "{}" + "}" * levels
    return json.dumps({**BASE, **BAD[case]})


@pytest.mark.parametrize("case", sorted(BAD))
def test_strict_import_is_all_or_nothing_across_batches(
    backend: str, tmp_path: Path, case: str
) -> None:
    lines = _export_lines(600)
    lines.insert(550, _bad_line(case))  # after two full batches of 256
    mem = _memory(backend, tmp_path)
    try:
        with pytest.raises(ValidationError, match="line 551"):
            mem.import_(io.StringIO("\n".join(lines)))
        assert mem.count(user_id="u", agent_id="a") == 0
        report = mem.import_(io.StringIO("\n".join(lines)), errors="skip")
        assert len(report.imported) == 600
        assert [n for n, _ in report.skipped] == [551]
        assert mem.count(user_id="u", agent_id="a") == 600
    finally:
        mem.close()


def test_the_embedded_store_still_opens_after_refused_deep_metadata(tmp_path: Path) -> None:
    mem = SyncEpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    deepest: dict[str, Any] = {**BASE, "metadata": _nest(32)}
    mem.memorize(**deepest)
    for levels in (33, 122, 3000):
        with pytest.raises(ValidationError, match="nested deeper than 32"):
            mem.memorize(**{**BASE, "metadata": _nest(levels)})  # pyright: ignore[reportArgumentType]
    mem.close()
    mem = SyncEpisodicMemory(path=tmp_path / "store", embedder=HashEmbedder())
    try:
        [item] = mem.read_recent(1, user_id="u", agent_id="a")
        assert item["metadata"] == _nest(32)
    finally:
        mem.close()


def test_task_and_lesson_json_fields_have_the_same_bounds() -> None:
    task = Task(id_="t", instruction="do it")
    result = TaskResult(task_id="t", content="done")
    with pytest.raises(ValidationError, match="nested deeper"):
        Episode(task=task, result=result, metadata=_nest(122))
    with pytest.raises(ValidationError, match="64-bit"):
        Episode(task=task, result=result, metadata={"n": -(2**64)})
    with pytest.raises(ValidationError, match="surrogate"):
        Episode(task=task, result=result, rollout="step \ud800")
    with pytest.raises(ValidationError, match="nested deeper"):
        EnvState.parse({"url": "/x", "extra": _nest(3000)})
    with pytest.raises(ValidationError, match="surrogate"):
        EnvState.parse({"url": "/x", "elements": ["[1] button \udfff"]})


def _same(got: object, want: object) -> bool:
    """Equal, except that a float may differ in its last bit.

    Qdrant Edge parses stored floats without round-trip precision (seen: 1.0616715777511071e64
    read back as ...072e64); integers, texts and structure must be exact.
    """
    if isinstance(want, float) and isinstance(got, float):
        return math.isclose(got, want, rel_tol=4e-16, abs_tol=0.0)
    if isinstance(want, dict) and isinstance(got, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(want, list) and isinstance(got, list):
        return len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want, strict=True))  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return type(got) is type(want) and got == want


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=25,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(metadata=st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_every_accepted_metadata_survives_reopen_and_export_unchanged(
    tmp_path_factory: pytest.TempPathFactory, metadata: dict[str, Any]
) -> None:
    folder = tmp_path_factory.mktemp("roundtrip")
    episode: dict[str, Any] = {
        **BASE,
        "metadata": metadata,
        "start_index": 2**63 - 2,
        "end_index": 2**63 - 1,
    }
    mem = SyncEpisodicMemory(path=folder, embedder=HashEmbedder())
    try:
        try:
            mem.memorize(**episode)
        except ValidationError:
            return  # refused up front: nothing written, nothing to compare
        mem.close()
        mem = SyncEpisodicMemory(path=folder, embedder=HashEmbedder())
        [item] = mem.read_recent(1, user_id="u", agent_id="a")
        assert _same(item["metadata"], json.loads(json.dumps(metadata)))
        assert (item["start_index"], item["end_index"]) == (2**63 - 2, 2**63 - 1)
        exported = io.StringIO()
        mem.export(exported, user_id="u", agent_id="a")
        mem.forget(user_id="u", agent_id="a", everything=True)
        report = mem.import_(io.StringIO(exported.getvalue()))
        assert len(report.imported) == 1
        [again] = mem.read_recent(1, user_id="u", agent_id="a")
        assert _same(again["metadata"], item["metadata"])
    finally:
        mem.close()
