"""A Qdrant server (or a proxy in front of it) answering 200 with what is not a Qdrant answer.

An answer of another shape (`[]`) was taken for a connection failure: tried four times with
backoff and reported as "the Qdrant server is unreachable ... check that it is running", about a
server that answered every time. A body that is not JSON, or JSON qdrant-client finds empty, was
an `EngineError` quoting only the parser ("Expecting value: line 1 column 1"). Each is now an
`EngineError` (not the `EngineUnavailableError` of an outage) saying the server's answer was not
understood, raised at the first answer.

The server here is a real socket on 127.0.0.1 that this test opens.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Generator
from contextlib import contextmanager

import pytest
from episodex import EngineError, EngineUnavailableError, EpisodicMemory
from episodex.testing import HashEmbedder


@contextmanager
def _garbage_server(body: bytes) -> Generator[tuple[int, list[int]]]:
    """A server on 127.0.0.1 answering every request `200 OK` with `body`, no Qdrant answer."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    requests: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                requests.append(1)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
                    + str(len(body)).encode()
                    + b"\r\nConnection: close\r\n\r\n"
                    + body
                )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], requests
    finally:
        listener.close()
        thread.join(5)


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
@pytest.mark.filterwarnings("ignore:Failed to obtain server version:UserWarning")
@pytest.mark.parametrize(
    "body", [b"<html><body>Welcome to nginx!</body></html>", b'{"hello": "world"}', b"[]"]
)
def test_a_server_answering_200_with_garbage_is_not_called_unreachable(body: bytes) -> None:
    with _garbage_server(body) as (port, requests):
        with pytest.raises(EngineError) as caught:
            EpisodicMemory(url=f"http://127.0.0.1:{port}", embedder=HashEmbedder(), timeout=2)
        # qdrant-client checks the server's version in a thread of its own, which warns that
        # the answer had no version: wait for it here, or its warning is raised in a later
        # test (where warnings are errors) as that test's failure.
        for thread in threading.enumerate():
            if "_check_compatibility" in thread.name:
                thread.join(10)
    assert not isinstance(caught.value, EngineUnavailableError), caught.value
    message = str(caught.value)
    assert "unreachable" not in message, message
    assert "not understood" in message, message
    assert f"http://127.0.0.1:{port}" in message
    # Asked once, not four times with backoff: the same answer would come back.
    assert len(requests) <= 2, requests
