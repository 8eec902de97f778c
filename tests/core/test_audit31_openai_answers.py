"""Embedders given what they cannot use, first an endpoint answering 200 with something else.

An OpenAI-compatible endpoint answered 200 with something that is not the embeddings asked for.

A proxy's HTML error page, a body cut short, `data` missing, vectors of different lengths or
of strings raised raw `JSONDecodeError`, `KeyError`, `TypeError` or `ValueError` out of the
embedder, which no caller expects from an embedding call. Worse, an answer whose `index`
fields repeat one text and leave another out had the right shape, so the vectors were stored
under the wrong texts. Each is an `EmbeddingError` now, and nothing is stored. The settings no
request can run with (`batch_size` 0, `max_retries` -1, `timeout` 0, a `dimension` that is not
a positive integer) are refused when the embedder is made, as is a `base_url` that is not http(s), which was
retried for 3.5 s before failing as "unreachable".
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from episodex import (
    ConfigurationError,
    EmbeddingError,
    EpisodicMemory,
    FastEmbedEmbedder,
    OpenAICompatibleEmbedder,
    VectorCacheEmbedder,
)
from episodex.testing import HashEmbedder

DIM = 4


def _vector(i: int) -> list[float]:
    return [float(i + 1), 0.0, 0.0, 1.0]


def _good(n: int) -> Any:
    return {"data": [{"index": i, "embedding": _vector(i)} for i in range(n)]}


# What the server answers (with status 200) to a request for n texts.
Answer = Callable[[int], bytes]
BAD_ANSWERS: dict[str, Answer] = {
    "html page": lambda n: b"<html><body>Gateway login</body></html>",
    "cut short": lambda n: json.dumps(_good(n)).encode()[:-7],
    "no data": lambda n: json.dumps({"object": "list"}).encode(),
    "data not a list": lambda n: json.dumps({"data": "none"}).encode(),
    "item not an object": lambda n: json.dumps({"data": [[1, 2, 3, 4]] * n}).encode(),
    "no embedding": lambda n: json.dumps({"data": [{"index": i} for i in range(n)]}).encode(),
    "ragged vectors": lambda n: json.dumps(
        {"data": [{"index": i, "embedding": [1.0] * (DIM + i)} for i in range(n)]}
    ).encode(),
    "strings for numbers": lambda n: json.dumps(
        {"data": [{"index": i, "embedding": ["a"] * DIM} for i in range(n)]}
    ).encode(),
    "index repeated": lambda n: json.dumps(
        {"data": [{"index": 0, "embedding": _vector(i)} for i in range(n)]}
    ).encode(),
    "index out of range": lambda n: json.dumps(
        {"data": [{"index": i + 1, "embedding": _vector(i)} for i in range(n)]}
    ).encode(),
    "index not a number": lambda n: json.dumps(
        {"data": [{"index": str(i), "embedding": _vector(i)} for i in range(n)]}
    ).encode(),
    "some indexes missing": lambda n: json.dumps(
        {
            "data": [
                {"embedding": _vector(i)} if i else {"index": 0, "embedding": _vector(0)}
                for i in range(n)
            ]
        }
    ).encode(),
    "base64 string": lambda n: json.dumps(
        {"data": [{"index": i, "embedding": "AACAPwAAAAA="} for i in range(n)]}
    ).encode(),
}


class _Handler(BaseHTTPRequestHandler):
    answer: Answer | None = None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        n = len(body["input"])
        answer = type(self).answer
        payload = json.dumps(_good(n)).encode() if answer is None else answer(n)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.answer = None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()
    _Handler.answer = None


def _embedder(url: str, **kwargs: Any) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder(base_url=url, model="m", dimension=DIM, **kwargs)


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
@pytest.mark.parametrize("kind", sorted(BAD_ANSWERS))
def test_an_answer_that_is_not_the_embeddings_is_an_embedding_error(server: str, kind: str) -> None:
    emb = _embedder(server)
    _Handler.answer = BAD_ANSWERS[kind]
    with pytest.raises(EmbeddingError):
        emb.embed_documents(["one", "two", "three"])
    if kind not in ("index repeated", "some indexes missing", "ragged vectors"):  # right for one
        with pytest.raises(EmbeddingError):
            emb.embed_query("one")


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_answers_in_any_order_or_without_indexes_map_to_their_texts(server: str) -> None:
    emb = _embedder(server)
    _Handler.answer = lambda n: json.dumps({"data": list(reversed(_good(n)["data"]))}).encode()
    assert emb.embed_documents(["a", "b", "c"])[:, 0].tolist() == [1.0, 2.0, 3.0]
    # A server that leaves every `index` out answers in the order asked.
    _Handler.answer = lambda n: json.dumps(
        {"data": [{"embedding": _vector(i)} for i in range(n)]}
    ).encode()
    assert emb.embed_documents(["a", "b", "c"])[:, 0].tolist() == [1.0, 2.0, 3.0]


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
async def test_a_repeated_index_stores_nothing(server: str, tmp_path: Path) -> None:
    async with EpisodicMemory(path=tmp_path / "s", embedder=_embedder(server)) as mem:
        await mem.memorize(
            user_id="u",
            agent_id="a",
            conversation_id="c",
            short_summary="kept",
            long_summary="kept long",
        )
        _Handler.answer = BAD_ANSWERS["index repeated"]
        with pytest.raises(EmbeddingError):
            await mem.memorize(
                user_id="u",
                agent_id="a",
                conversation_id="c",
                short_summary="lost",
                long_summary="lost long",
            )
        _Handler.answer = None
        assert await mem.count(user_id="u", agent_id="a") == 1


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("batch_size", 0),
        ("batch_size", -3),
        ("batch_size", 2.5),
        ("max_retries", -1),
        ("max_retries", 1.5),
        ("timeout", 0),
        ("timeout", -1.0),
        ("timeout", float("nan")),
        ("dimension", "384"),
        ("dimension", 384.0),
        ("dimension", True),
        ("model", ""),
        ("model", 3),
        ("base_url", ""),
        ("base_url", "localhost:8000/v1"),
        ("base_url", "ftp://example.com/v1"),
    ],
)
def test_settings_no_request_can_run_with_are_refused(setting: str, value: object) -> None:
    kwargs: dict[str, Any] = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "dimension": DIM}
    kwargs[setting] = value
    with pytest.raises(ConfigurationError, match=setting):
        OpenAICompatibleEmbedder(**kwargs)


@pytest.mark.parametrize(
    "vector",
    [np.ones(5, dtype=np.float32), np.full(DIM, np.nan), np.array(["a"] * DIM), [[1.0] * DIM]],
    ids=["other length", "nan", "strings", "a matrix"],
)
def test_a_vector_cache_refuses_a_table_vector_no_store_could_take(vector: object) -> None:
    inner = HashEmbedder(dimension=DIM)
    with pytest.raises(ConfigurationError, match="'bad text'"):
        VectorCacheEmbedder(inner, {"good text": np.ones(DIM), "bad text": vector})  # pyright: ignore[reportArgumentType]
    cache = VectorCacheEmbedder(inner, {"good text": np.ones(DIM, dtype=np.float32)})
    assert cache.embed_documents(["good text"]).tolist() == [[1.0] * DIM]


@pytest.mark.parametrize("batch_size", [0, -1, 2.5, True])
def test_a_fastembed_batch_size_no_run_can_use_is_refused(batch_size: object) -> None:
    with pytest.raises(ConfigurationError, match="batch_size"):
        FastEmbedEmbedder("BAAI/bge-small-en-v1.5", batch_size=batch_size)  # pyright: ignore[reportArgumentType]


def test_every_embedder_embeds_no_texts_as_no_rows_of_its_length() -> None:
    # Nothing is loaded for no texts, so the fastembed model is never downloaded here.
    for emb in (FastEmbedEmbedder("BAAI/bge-small-en-v1.5"), HashEmbedder(dimension=DIM)):
        assert emb.embed_documents([]).shape == (0, emb.dimension)
