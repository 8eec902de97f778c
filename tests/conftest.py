"""Shared fixtures: the real bundled embedder, loaded once per test session."""

from __future__ import annotations

import os

import pytest

# fastembed and huggingface_hub must never reach for the network in tests.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def embedder():
    """The bundled all-MiniLM-L6-v2 int8 model (offline)."""
    from episodex import default_embedder

    emb = default_embedder()
    emb.embed_query("warm up")
    return emb
