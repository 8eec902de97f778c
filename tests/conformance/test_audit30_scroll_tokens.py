"""A scroll offset that is no page token of the engine is refused with `ValidationError`, alike.

`Engine.scroll` (public: `memory.engine`, `open_engine`) hands back the offset of the next page,
and takes it again. Before, a token of the other engine kind, or any other string, raised a raw
`ValueError` (or `TypeError`) on Qdrant Edge, while qdrant-client answered as if it were a
token: from the first point ("12345", an embedded engine's token), or an empty last page
("abc"), so a caller paging to the end stopped early without a word. Now both engines refuse
it with `ValidationError` before reading, and still page through their own tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodex import Engine, ValidationError
from episodex.plan import CollectionSpec, Filter, Point

from .backends import BACKENDS, loaded_engine

SPEC = CollectionSpec(name="pages", dense={"a": 2})
IDS = [f"00000000-0000-4000-8000-{i:012d}" for i in range(5)]
EDGE_TOKEN = "9412181336371976040"  # a Qdrant Edge offset
CLIENT_TOKEN = "81173569-bbb6-5f7d-b44c-1f1cb8b32280"  # a qdrant-client offset
NOT_TOKENS = ["abc", "", "-1", "1.5", "0x10", " 7", "18446744073709551616", "١٢"]


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    points = [Point(i, {"a": [1.0, 0.0]}, {}, {"n": n}) for n, i in enumerate(IDS)]
    with loaded_engine(request.param, tmp_path, SPEC, points) as eng:
        yield eng


def test_an_engines_own_tokens_page_through_everything(engine: Engine) -> None:
    seen: list[str] = []
    offset: str | None = None
    while True:
        hits, offset = engine.scroll(SPEC.name, Filter(), limit=2, offset=offset)
        seen += [h.id for h in hits]
        if offset is None:
            break
    assert sorted(seen) == IDS


def test_an_offset_that_is_no_token_is_refused_alike(engine: Engine) -> None:
    other = CLIENT_TOKEN if engine.kind == "edge" else EDGE_TOKEN
    for bad in [other, *NOT_TOKENS]:
        with pytest.raises(ValidationError, match="page token"):
            engine.scroll(SPEC.name, Filter(), limit=2, offset=bad)
    assert engine.count(SPEC.name, Filter()) == len(IDS)
