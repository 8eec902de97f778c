"""Run episodex against a Qdrant server or cluster instead of the embedded store.

Only the constructor changes; every method and every result is the same as on the embedded
default. This script reads its configuration from the environment and, when `QDRANT_URL` is
set, stores one episode for a throwaway user, recalls it and forgets it again. Without
`QDRANT_URL` it prints how to configure it and exits without connecting.

    docker run -p 6333:6333 -p 6334:6334 qdrant/qdrant
    QDRANT_URL=http://localhost:6333 python examples/qdrant_server.py

Configuration (all optional except the URL):

    QDRANT_URL                http://localhost:6333, or https://<cluster>.cloud.qdrant.io:6333
    QDRANT_API_KEY            the server's API key (Qdrant Cloud always needs one)
    QDRANT_PREFER_GRPC        1 to talk gRPC (port 6334) instead of REST
    QDRANT_COLLECTION_PREFIX  prefix of episodex's collection names (default `episodex_`)
    QDRANT_TIMEOUT            request timeout in seconds

Pointing at a cluster: give the URL of any node of a self-hosted distributed cluster, or of
the load balancer in front of it, or your Qdrant Cloud cluster URL with its API key. The
cluster routes each request to the shards that hold the data, so the client needs no list of
nodes. episodex creates its collection (`<prefix>episodes`) with the cluster's default shard
and replica settings and with `user_id` as the tenant key; change sharding or replication with
Qdrant's own collection and cluster APIs. Use a different `collection_prefix` per application
or environment sharing one cluster, and the same embedder everywhere: a store remembers the
embedder it was created with and refuses another one.

Transient failures (connection refused, timeouts, 429 and 5xx answers) are retried with
backoff; after that `EngineUnavailableError` is raised, as this script shows when the URL
points nowhere.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from typing import Any

from episodex import EngineUnavailableError, EpisodicMemory


def settings_from_env() -> dict[str, Any] | None:
    url = os.environ.get("QDRANT_URL", "").strip()
    if not url:
        return None
    timeout = os.environ.get("QDRANT_TIMEOUT")
    return {
        "url": url,
        "api_key": os.environ.get("QDRANT_API_KEY") or None,
        "prefer_grpc": os.environ.get("QDRANT_PREFER_GRPC", "") in ("1", "true", "yes"),
        "collection_prefix": os.environ.get("QDRANT_COLLECTION_PREFIX", "episodex_"),
        "timeout": float(timeout) if timeout else None,
    }


async def round_trip(settings: dict[str, Any]) -> None:
    user = f"example-{uuid.uuid4().hex[:8]}"  # a throwaway user: nothing else is touched
    async with EpisodicMemory(**settings) as mem:
        print(f"connected: engine kind {mem.engine.kind!r}")
        await mem.memorize(
            short_summary="Asked how to reach the Qdrant server",
            long_summary="The user configured QDRANT_URL and ran the server example.",
            user_id=user,
            agent_id="example",
            conversation_id="c1",
        )
        result = await mem.recall(user_id=user, agent_id="example", query="Qdrant server")
        print(f"recalled: {result['previous_conversations'][0]['short_summary_text']!r}")
        deleted = await mem.forget(user_id=user, agent_id="example", everything=True)
        print(f"cleaned up: forgot {deleted} episode of user {user}")


def main() -> int:
    settings = settings_from_env()
    if settings is None:
        print("QDRANT_URL is not set: did not connect to any server.")
        print("Set it to run this example, for instance:")
        print("  QDRANT_URL=http://localhost:6333 python examples/qdrant_server.py")
        print("In code:")
        print('  EpisodicMemory(url="https://<cluster>.cloud.qdrant.io:6333", api_key="...",')
        print('                 prefer_grpc=True, collection_prefix="myapp_", timeout=10)')
        return 0
    shown = {k: ("***" if k == "api_key" and v else v) for k, v in settings.items()}
    print(f"settings: {shown}")
    try:
        asyncio.run(round_trip(settings))
    except EngineUnavailableError as exc:
        print(f"could not reach {settings['url']}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
