"""Pick and open the engine named by `path`, `url` or `location`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, Unpack

from episodex._common.errors import ConfigurationError
from episodex._engines.base import Engine

__all__ = ["EngineOptions", "check_engine_options", "open_engine"]


class EngineOptions(TypedDict, total=False):
    """Where a memory's engine is and how to reach it (besides the embedded store's `path`).

    The memories and stores that open their own engine take these keywords and pass them on
    to `open_engine`.
    """

    url: str | None
    """A Qdrant server or cluster, e.g. `http://localhost:6333`."""

    location: str | None
    """`:memory:` for qdrant-client's local mode."""

    api_key: str | None
    """Qdrant API key (server only)."""

    prefer_grpc: bool
    """Talk gRPC to the server (default False)."""

    collection_prefix: str
    """Prefix of server collection names (default `episodex_`)."""

    timeout: float | None
    """Request timeout in seconds (server only)."""

    client_options: Mapping[str, Any] | None
    """More keyword arguments for `qdrant_client.QdrantClient`."""

    quantize: bool
    """Embedded store only: keep int8 copies of the dense vectors in memory (default False).

    The full float32 vectors stay on disk (memory-mapped, read only to rescore the best
    candidates), so a large store holds about a quarter of the vector bytes in memory instead of
    all of them; in exchange the store opens more slowly (the int8 copies are loaded) and scores
    are rescored approximations on the first pass. Only segments large enough to be indexed are
    quantized (about 10,000 points per segment), so small stores behave as unquantized ones.
    It is chosen when the store's collections are created and recorded in the store: opening a
    store created without it with `quantize=True` raises `ConfigurationError`; a quantized store
    opens quantized either way.
    """


def check_engine_options(options: Mapping[str, object], where: str) -> None:
    """Raise `TypeError`, as Python does for a bad keyword, for a name `EngineOptions` lacks."""
    unknown = sorted(set(options) - EngineOptions.__optional_keys__)
    if unknown:
        raise TypeError(f"{where}() got unexpected keyword argument(s) {unknown}")


def open_engine(*, path: str | None = None, **options: Unpack[EngineOptions]) -> Engine:
    """Open the engine chosen by exactly one of `path`, `url` or `location`.

    Args:
        path: A folder for the embedded Qdrant Edge store (created if missing).
        **options: `EngineOptions`: `url`, `location` and how to reach a server.
    """
    check_engine_options(options, "open_engine")
    url, location = options.get("url"), options.get("location")
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

        return EdgeEngine(path, quantize=options.get("quantize", False))
    from episodex._engines.qdrant import QdrantClientEngine

    if options.get("quantize"):
        raise ConfigurationError(
            "quantize= applies to the embedded store (path=); set a server collection's "
            "quantization on the server"
        )
    if location is not None and location != ":memory:":
        raise ConfigurationError(
            f"location must be ':memory:', got {location!r}; use path= for a folder on disk"
        )
    return QdrantClientEngine(
        url=url,
        location=location,
        api_key=options.get("api_key"),
        prefer_grpc=options.get("prefer_grpc", False),
        prefix=options.get("collection_prefix", "episodex_"),
        timeout=options.get("timeout"),
        options=dict(options.get("client_options") or {}),
    )
