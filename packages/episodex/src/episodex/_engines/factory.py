"""Pick and open the engine named by `path`, `url` or `location`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from episodex._common.errors import ConfigurationError
from episodex._engines.base import Engine

__all__ = ["open_engine"]


def open_engine(
    *,
    path: str | None = None,
    url: str | None = None,
    location: str | None = None,
    api_key: str | None = None,
    prefer_grpc: bool = False,
    collection_prefix: str = "episodex_",
    timeout: float | None = None,
    client_options: Mapping[str, Any] | None = None,
) -> Engine:
    """Open the engine chosen by exactly one of `path`, `url` or `location`.

    Args:
        path: A folder for the embedded Qdrant Edge store (created if missing).
        url: A Qdrant server or cluster, e.g. `http://localhost:6333`.
        location: `:memory:` for qdrant-client's local mode.
        api_key: Qdrant API key (server only).
        prefer_grpc: Talk gRPC to the server.
        collection_prefix: Prefix of server collection names.
        timeout: Request timeout in seconds (server only).
        client_options: More keyword arguments for `qdrant_client.QdrantClient`.
    """
    chosen = [
        name for name, value in (("path", path), ("url", url), ("location", location)) if value
    ]
    if len(chosen) != 1:
        raise ConfigurationError(
            "give exactly one of path= (embedded Qdrant Edge folder), url= (Qdrant server) or "
            f"location=':memory:' (qdrant-client local mode); got {chosen or 'none'}"
        )
    if path:
        from episodex._engines.edge import EdgeEngine

        return EdgeEngine(path)
    from episodex._engines.qdrant import QdrantClientEngine

    if location is not None and location != ":memory:":
        raise ConfigurationError(
            f"location must be ':memory:', got {location!r}; use path= for a folder on disk"
        )
    return QdrantClientEngine(
        url=url,
        location=location,
        api_key=api_key,
        prefer_grpc=prefer_grpc,
        prefix=collection_prefix,
        timeout=timeout,
        options=dict(client_options or {}),
    )
