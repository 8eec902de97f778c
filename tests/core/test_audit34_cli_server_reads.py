"""`episodex --url` read commands create nothing on a server without the episodes collection.

On an embedded store, `stats`, `recall`, `export`, `forget` and `reindex` at a folder without
a store exit 3 ("no store") and create nothing. With `--url` they opened the store, and so
created the episodes collection (and its payload indexes) on the server, then answered from it
as from an empty store: a mistyped URL or prefix left an empty collection behind and looked
like a user with no episodes. They now exit 3 there too, and create nothing.

The server is qdrant-client's local mode (`:memory:`), taken through the server paths: the
client the engine makes for `--url` is that one.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from typing import Any

import pytest
from episodex._engines import qdrant as qdrant_engine
from episodex.cli import main
from qdrant_client import QdrantClient

URL = ["--url", "http://127.0.0.1:9"]
IDS = ["--user", "u", "--agent", "a"]


class _Server(QdrantClient):
    """One `:memory:` client standing for the server: every engine made for `--url` uses it."""

    def close(self, grpc_grace: float | None = None, **kwargs: Any) -> None:
        pass  # each command closes its engine; the "server" outlives it


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Generator[_Server]:
    shared = _Server(location=":memory:")

    def client(*args: Any, **kwargs: Any) -> QdrantClient:
        assert kwargs.get("url") == URL[1], kwargs
        return shared

    monkeypatch.setattr(qdrant_engine, "QdrantClient", client)
    yield shared
    QdrantClient.close(shared)


READS = [
    ["stats", *IDS],
    ["recall", *IDS, "refund"],
    ["recall", *IDS, "--block", "refund"],
    ["export", *IDS],
    ["forget", *IDS, "--all"],
    ["forget", *IDS, "--point", "00000000-0000-0000-0000-000000000001"],
    ["reindex"],
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("command", READS, ids=lambda c: " ".join(c[:1] + c[-1:]))
def test_a_read_on_a_server_without_the_store_exits_3_and_creates_nothing(
    server: _Server, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    assert main([*URL, *command]) == 3
    captured = capsys.readouterr()
    assert captured.err.startswith("episodex: not found: "), captured.err
    assert "--url" in captured.err and "Traceback" not in captured.err
    assert captured.out == ""
    assert server.get_collections().collections == []


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_reads_on_a_server_with_the_store_still_answer(
    server: _Server, capsys: pytest.CaptureFixture[str]
) -> None:
    add = ["add", *IDS, "--conversation", "c", "--short", "refund asked", "--long", "a refund"]
    assert main([*URL, *add]) == 0
    capsys.readouterr()
    assert main([*URL, "--json", "stats", *IDS]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 1
    assert main([*URL, "export", *IDS]) == 0
    assert json.loads(capsys.readouterr().out)["short_summary"] == "refund asked"
    # Another user of a store that exists is an empty answer, not "no store".
    assert main([*URL, "--json", "stats", "--user", "v", "--agent", "a"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 0
