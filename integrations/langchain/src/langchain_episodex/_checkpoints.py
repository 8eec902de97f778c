"""The line of runs a LangGraph thread's first run belongs to, read from its checkpointer.

A thread's runs carry their line (`thread_root`) in the run state of the checkpoint, from run
to run, so a fork shares it with the branch it left. A fork at the checkpoint before the
thread's first question has no run state to carry it: its first run looks at the thread's
earlier checkpoints in the same checkpointer instead. A thread id used again on a new
checkpointer (a restarted `InMemorySaver`, a deleted thread) has none, and begins a new line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.config import get_config
from langgraph.constants import CONFIG_KEY_CHECKPOINTER

logger = logging.getLogger("langchain_episodex")

# LangGraph hands each node its graph's checkpointer under this configurable key (exported
# by `langgraph.constants`); read defensively: without it the run begins a new line.
_CHECKPOINTER_KEY: str = CONFIG_KEY_CHECKPOINTER

#: The thread's newest checkpoints looked at: a fork's own run has written only a few yet.
_LOOKED_AT = 64


def _where() -> tuple[BaseCheckpointSaver[Any], RunnableConfig] | None:
    try:
        configurable: Mapping[str, Any] = get_config().get("configurable") or {}
    except RuntimeError:  # outside a LangGraph run
        return None
    saver = configurable.get(_CHECKPOINTER_KEY)
    thread = configurable.get("thread_id")
    if not isinstance(saver, BaseCheckpointSaver) or thread is None:
        return None
    # The node's namespace ends with its own task; the graph's checkpoints are in the rest.
    namespace = str(configurable.get("checkpoint_ns") or "")
    graph = namespace.rpartition("|")[0]
    config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": graph}}
    return saver, config


def _root(checkpoint: CheckpointTuple, run_key: str) -> str | None:
    run = checkpoint.checkpoint.get("channel_values", {}).get(run_key)
    root = run.get("thread_root") if isinstance(run, Mapping) else None
    return root if isinstance(root, str) and root else None


def thread_root(run_key: str) -> str | None:
    """The line of the thread's earlier runs in its checkpointer; None for a new thread."""
    where = _where()
    if where is None:
        return None
    saver, config = where
    try:
        for checkpoint in saver.list(config, limit=_LOOKED_AT):
            root = _root(checkpoint, run_key)
            if root is not None:
                return root
    except Exception:
        logger.warning("could not read the thread's earlier checkpoints", exc_info=True)
    return None


async def athread_root(run_key: str) -> str | None:
    """`thread_root`, reading an async checkpointer without blocking the event loop."""
    where = _where()
    if where is None:
        return None
    saver, config = where
    try:
        async for checkpoint in saver.alist(config, limit=_LOOKED_AT):
            root = _root(checkpoint, run_key)
            if root is not None:
                return root
    except Exception:
        logger.warning("could not read the thread's earlier checkpoints", exc_info=True)
    return None
