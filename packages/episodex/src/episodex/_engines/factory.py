"""Pick and open the engine named by `path`, `url` or `location`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, TypedDict, Unpack, cast

from episodex._common.errors import ConfigurationError
from episodex._engines.base import Engine

__all__ = ["EngineOptions", "check_engine_options", "open_engine", "store_path"]


class EngineOptions(TypedDict, total=False):
    """Where a memory's engine is and how to reach it (besides the embedded store's `path`).

    The memories and stores that open their own engine take these keywords and pass them on
    to `open_engine`.
    """

    url: str | None
    """A Qdrant server or cluster, e.g. `http://localhost:6333`."""

    location: str | None
    """`:memory:` for qdrant-client's local mode."""

    qdrant_api_key: str | None
    """The Qdrant server's API key (server only; an embedding API's key goes to its embedder)."""

    api_key: str | None
    """The former name of `qdrant_api_key`, still accepted with `url=`."""

    prefer_grpc: bool
    """Talk gRPC to the server (default False)."""

    collection_prefix: str
    """Prefix of server collection names (default `episodex_`)."""

    timeout: float | None
    """Seconds each server request may take (server only), rounded up to whole seconds; None
    for qdrant-client's 5. Transient failures are tried 4 times, so a server that never
    answers raises `EngineUnavailableError` after about 4 * timeout + 1.4 seconds."""

    client_options: Mapping[str, Any] | None
    """More keyword arguments for `qdrant_client.QdrantClient`."""

    min_free_bytes: int
    """Embedded store only: bytes kept free on its disk (default 128 MiB). A write, an
    optimize or an open that would leave less raises `StorageFullError` instead of letting
    the memory-mapped files hit a full disk."""
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


def store_path(path: object) -> str | None:
    """`path=` as the text of a folder path; None when left out.

    Anything but text or an `os.PathLike` naming text is refused: `str()` of another object
    (an open memory passed where a path goes, a number) would name a new folder after it and
    open an empty store there, silently.
    """
    if path is None:
        return None
    if isinstance(path, str):
        return path
    if isinstance(path, os.PathLike):
        named = os.fspath(cast("os.PathLike[str] | os.PathLike[bytes]", path))
        if isinstance(named, str):
            return named
    raise ConfigurationError(
        f"path= must be a folder path (str or os.PathLike), got {type(path).__name__}; to use an "
        "open memory, pass it as memory="
    )


def open_engine(*, path: str | None = None, **options: Unpack[EngineOptions]) -> Engine:
    """Open the engine chosen by exactly one of `path`, `url` or `location`.

    Args:
        path: A folder for the embedded Qdrant Edge store (created if missing).
        **options: `EngineOptions`: `url`, `location` and how to reach a server.
    """
    check_engine_options(options, "open_engine")
    url, location = options.get("url"), options.get("location")
    key = _qdrant_api_key(options)
    for name, value in (("path", path), ("url", url), ("location", location)):
        if isinstance(value, str) and not value.strip():
            # Empty is not "left out": a caller's unset variable must not pick another store.
            raise ConfigurationError(f"{name}= is empty; give the store's {name} or leave it out")
    chosen = [
        name for name, value in (("path", path), ("url", url), ("location", location)) if value
    ]
    if len(chosen) != 1:
        raise ConfigurationError(
            "give exactly one of path= (embedded Qdrant Edge folder), url= (Qdrant server) or "
            f"location=':memory:' (qdrant-client local mode); got {chosen or 'none'}"
        )
    _refuse_unused(options, path=bool(path), api_key=key)
    if path:
        from episodex._engines.edge import EdgeEngine
        from episodex._engines.space import DEFAULT_MIN_FREE_BYTES

        return EdgeEngine(
            path,
            min_free_bytes=options.get("min_free_bytes", DEFAULT_MIN_FREE_BYTES),
            quantize=options.get("quantize", False),
        )
    if "min_free_bytes" in options:
        raise ConfigurationError(
            "min_free_bytes is for the embedded store (path=); a Qdrant server manages its disk"
        )
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
        api_key=key,
        prefer_grpc=options.get("prefer_grpc", False),
        prefix=options.get("collection_prefix", "episodex_"),
        timeout=options.get("timeout"),
        options=dict(options.get("client_options") or {}),
    )


def _qdrant_api_key(options: Mapping[str, Any]) -> str | None:
    new, old = options.get("qdrant_api_key"), options.get("api_key")
    if new is not None and old is not None and new != old:
        raise ConfigurationError(
            "qdrant_api_key= and api_key= disagree; give the Qdrant key once, as qdrant_api_key="
        )
    return new if new is not None else old


def _refuse_unused(options: Mapping[str, Any], *, path: bool, api_key: str | None) -> None:
    """Refuse a server option given where no server is: an option must never be ignored."""
    if options.get("url"):
        return
    # A timeout of any value is a server's (0 too: by truth it went unnoticed); prefer_grpc
    # False is what no server does anyway.
    unused = [name for name in ("prefer_grpc",) if options.get(name)]
    unused += [name for name in ("timeout",) if options.get(name) is not None]
    if api_key is not None:
        unused.insert(0, "qdrant_api_key" if options.get("qdrant_api_key") else "api_key")
    if path:
        unused += [n for n in ("collection_prefix", "client_options") if options.get(n)]
    if unused:
        where = "an embedded store (path=)" if path else "location=':memory:'"
        hint = (
            "; an embedding API's key belongs to its embedder, e.g. "
            "OpenAICompatibleEmbedder(..., api_key=...)"
            if api_key is not None
            else ""
        )
        raise ConfigurationError(
            f"{', '.join(unused)} only apply to a Qdrant server (url=), not to {where}; "
            f"remove them{hint}"
        )
