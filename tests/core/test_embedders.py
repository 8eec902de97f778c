from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from episodex import (
    DEFAULT_MODEL_ID,
    BundledMiniLMEmbedder,
    ConfigurationError,
    Embedder,
    EmbeddingError,
    FastEmbedEmbedder,
    OpenAICompatibleEmbedder,
    VectorCacheEmbedder,
)


def test_bundled_model_is_offline_normalised_and_semantic(embedder: Embedder) -> None:
    assert embedder.model_id == DEFAULT_MODEL_ID and embedder.dimension == 384
    docs = embedder.embed_documents(
        ["I forgot my password", "Reset my login credentials", "The cat sat on the mat"]
    )
    assert docs.shape == (3, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-3)
    sims = docs @ docs.T
    assert sims[0, 1] > sims[0, 2] + 0.2
    q = embedder.embed_query("I forgot my password")
    assert q.shape == (384,) and float(q @ docs[0]) > 0.99


def test_embedding_is_deterministic_and_batch_independent(embedder: Embedder) -> None:
    one = embedder.embed_documents(["refund for order 1234"])[0]
    batch = embedder.embed_documents(["something else entirely", "refund for order 1234"])[1]
    assert np.allclose(one, batch, atol=1e-4)


def test_long_text_is_clipped_before_tokenizing(embedder: Embedder) -> None:
    huge = "word " * 400_000  # 2 MB
    vec = embedder.embed_documents([huge])
    assert vec.shape == (1, 384) and np.isfinite(vec).all()


def test_model_folder_is_verified_by_hash() -> None:
    folder = BundledMiniLMEmbedder.model_folder()
    assert (folder / "model.onnx").exists() and (folder / "tokenizer.json").exists()


def test_unknown_fastembed_model_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="no text model"):
        FastEmbedEmbedder("no-such/model")


def test_fastembed_by_name_knows_its_dimension() -> None:
    emb = FastEmbedEmbedder("BAAI/bge-small-en-v1.5")  # lazy: nothing is loaded or downloaded here
    assert emb.model_id == "BAAI/bge-small-en-v1.5" and emb.dimension == 384


def test_vector_cache_serves_known_texts_and_embeds_the_rest(embedder: Embedder) -> None:
    table = {"cached text": np.ones(384, dtype=np.float32)}
    cache = VectorCacheEmbedder(embedder, table)
    out = cache.embed_documents(["cached text", "fresh text"])
    assert np.array_equal(out[0], np.ones(384)) and cache.hits == 1 and cache.misses == 1
    assert np.allclose(out[1], embedder.embed_documents(["fresh text"])[0], atol=1e-5)
    assert cache.model_id == embedder.model_id


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    """A real OpenAI-compatible /embeddings endpoint on loopback, backed by the bundled model."""

    model = None
    fail_first = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if type(self).fail_first > 0:
            type(self).fail_first -= 1
            self.send_response(503)
            self.end_headers()
            return
        if self.headers.get("Authorization") != "Bearer sk-test":
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b'{"error": "bad key"}')
            return
        vectors = type(self).model.embed_documents(body["input"])  # pyright: ignore[reportAttributeAccessIssue]
        data = [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
        payload = json.dumps({"data": list(reversed(data)), "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        pass


@pytest.fixture
def api_server(embedder: Embedder):
    _EmbeddingsHandler.model = embedder  # pyright: ignore[reportAttributeAccessIssue]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_openai_compatible_embedder_against_a_loopback_server(
    api_server,  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
    embedder: Embedder,  # pyright: ignore[reportUnknownParameterType]
) -> None:
    emb = OpenAICompatibleEmbedder(
        base_url=api_server, model="m", dimension=384, api_key="sk-test", batch_size=2
    )
    out = emb.embed_documents(["a", "b", "c"])
    assert out.shape == (3, 384)
    assert np.allclose(out, embedder.embed_documents(["a", "b", "c"]), atol=1e-5)
    assert emb.model_id == "openai-compatible:m"
    _EmbeddingsHandler.fail_first = 1  # one 503, then success: retried
    fast = OpenAICompatibleEmbedder(
        base_url=api_server, model="m", dimension=384, api_key="sk-test", max_retries=2
    )
    assert fast.embed_query("a").shape == (384,)
    with pytest.raises(EmbeddingError, match="401"):
        OpenAICompatibleEmbedder(
            base_url=api_server, model="m", dimension=384, api_key="wrong"
        ).embed_query("a")
    with pytest.raises(EmbeddingError, match="shape"):
        OpenAICompatibleEmbedder(
            base_url=api_server, model="m", dimension=12, api_key="sk-test"
        ).embed_query("a")
