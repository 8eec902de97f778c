"""A Qdrant server (`url=`) that cannot be reached, never answers or answers an error.

`timeout=0.5` reached qdrant-client as `int(0.5) == 0`: every request failed at once, against a
server that answered in a millisecond, as "unreachable". A url qdrant-client cannot parse raised
its own `ValueError` (or urllib3's `LocationParseError`), some of them showing the whole url with
its password or query. And no error named the server it could not reach. Now the timeout is
rounded up to whole seconds (and refused unless a positive number), a bad url is a
`ConfigurationError`, and errors name the url without its credentials or the API key.

The servers here are real sockets on 127.0.0.1 that this test opens: a closed port, one that
accepts and never answers, one that answers every request with HTTP 500.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import Any

import pytest
from episodex import (
    ConfigurationError,
    EngineError,
    EngineUnavailableError,
    EpisodicMemory,
    QdrantTaskStore,
    open_engine,
)
from episodex.testing import HashEmbedder

pytestmark = [
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
    # qdrant-client's version check (a background thread) warns that it got no version, and
    # its client warns that an API key travels over http.
    pytest.mark.filterwarnings("ignore:Failed to obtain server version:UserWarning"),
    pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection:UserWarning"),
]

SECRET = "s3cr3t-password"
KEY = "key-0123456789-secret"


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answer(status: bytes, headers: bytes = b"") -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        _read_request(conn)
        body = b'{"status":{"error":"boom"}}'
        conn.sendall(
            b"HTTP/1.1 "
            + status
            + b"\r\nContent-Type: application/json\r\n"
            + headers
            + b"Content-Length: "
            + str(len(body)).encode()
            + b"\r\nConnection: close\r\n\r\n"
            + body
        )

    return answer


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


_answer_500 = _answer(b"500 Internal Server Error")


@contextmanager
def server(answer: Callable[[socket.socket], None] | None) -> Generator[int]:
    """A server on 127.0.0.1 answering each connection with `answer` (None: never answers)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            if answer is not None:
                try:
                    answer(conn)
                except OSError:
                    pass
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()
        thread.join(5)
        for conn in held:
            conn.close()


def test_a_fractional_timeout_is_rounded_up_not_cut_to_zero() -> None:
    with server(_answer_500) as port:
        with pytest.raises(EngineError) as caught:
            EpisodicMemory(url=f"http://127.0.0.1:{port}", embedder=HashEmbedder(), timeout=0.5)
    # The server's own answer, not a request given up on before it was sent.
    assert not isinstance(caught.value, EngineUnavailableError), caught.value
    assert "500" in str(caught.value)
    assert f"http://127.0.0.1:{port}" in str(caught.value)


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), "5", True])
def test_a_timeout_that_is_not_a_positive_number_is_refused(timeout: Any) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(ConfigurationError, match="timeout must be a positive number"):
        open_engine(url=url, timeout=timeout)
    with pytest.raises(ConfigurationError, match="timeout must be a positive number"):
        QdrantTaskStore(url=url, embedder=HashEmbedder(), timeout=timeout)


def test_a_server_that_never_answers_ends_in_a_typed_error_within_the_timeout() -> None:
    with server(None) as port:
        start = time.perf_counter()
        with pytest.raises(EngineUnavailableError) as caught:
            EpisodicMemory(url=f"http://127.0.0.1:{port}", embedder=HashEmbedder(), timeout=1)
        elapsed = time.perf_counter() - start
    # Four attempts of 1 s and 0.2 + 0.4 + 0.8 s of backoff, not a hang.
    assert 4.0 <= elapsed < 12.0, elapsed
    assert f"Qdrant server at http://127.0.0.1:{port} is unreachable" in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        f"http://admin:{SECRET}@127.0.0.1:notaport",
        f"ftp://admin:{SECRET}@127.0.0.1:6333",
        f"http://admin:{SECRET}@[::1",
    ],
)
def test_a_bad_url_is_a_configuration_error_without_its_credentials(url: str) -> None:
    with pytest.raises(ConfigurationError, match="is not a Qdrant server URL") as caught:
        EpisodicMemory(url=url, embedder=HashEmbedder(), qdrant_api_key=KEY)
    assert SECRET not in str(caught.value)
    assert KEY not in str(caught.value)
    assert "admin:" not in str(caught.value)
    assert "***@127.0.0.1" in str(caught.value) or "***@[::1" in str(caught.value)


def test_a_url_refused_for_its_path_does_not_show_its_query() -> None:
    # qdrant-client's message quotes the whole url when a path meets a `prefix` option.
    url = f"http://127.0.0.1:6333/qdrant?api-key={SECRET}"
    with pytest.raises(ConfigurationError) as caught:
        open_engine(url=url, client_options={"prefix": "other"})
    assert SECRET not in str(caught.value)
    assert "http://127.0.0.1:6333/qdrant?***" in str(caught.value)


def test_an_unreachable_server_is_named_without_its_credentials() -> None:
    port = _closed_port()
    url = f"http://admin:{SECRET}@127.0.0.1:{port}"
    with pytest.raises(EngineUnavailableError) as caught:
        EpisodicMemory(url=url, embedder=HashEmbedder(), qdrant_api_key=KEY, timeout=1)
    message = str(caught.value)
    assert f"Qdrant server at http://***@127.0.0.1:{port} is unreachable" in message
    assert SECRET not in message and KEY not in message


def test_a_busy_server_that_says_when_to_come_back_is_retried() -> None:
    # qdrant-client raises its own ResourceExhaustedResponse, not UnexpectedResponse, for a
    # 429 with Retry-After: it was an EngineError at the first answer, never tried again.
    with server(_answer(b"429 Too Many Requests", b"Retry-After: 1\r\n")) as port:
        start = time.perf_counter()
        with pytest.raises(EngineUnavailableError, match="unreachable after 4 attempts"):
            EpisodicMemory(url=f"http://127.0.0.1:{port}", embedder=HashEmbedder(), timeout=2)
    assert time.perf_counter() - start >= 1.4  # the backoff between the four attempts
