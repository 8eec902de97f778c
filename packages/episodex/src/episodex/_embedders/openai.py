"""An OpenAI-compatible `/embeddings` endpoint as a dense embedder."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from episodex._common.errors import ConfigurationError, EmbeddingError
from episodex._common.validation import is_finite, require_int
from episodex._embedders.base import Matrix, clip_texts

__all__ = ["OpenAICompatibleEmbedder"]


class OpenAICompatibleEmbedder:
    """An OpenAI-compatible `/embeddings` endpoint (OpenAI, Azure, vLLM, Ollama, TEI...).

    Transient failures (connection errors, 429 and 5xx answers) are retried with exponential
    backoff; anything else raises `EmbeddingError` at once. Needs the `openai` extra (httpx).

    Args:
        base_url: The API root, e.g. `https://api.openai.com/v1`.
        model: The embedding model name.
        dimension: The length of the vectors the model returns.
        api_key: Sent as a bearer token when given.
        timeout: Seconds per HTTP request (above 0), or None for no limit.
        max_retries: Extra attempts for transient failures.
        batch_size: Texts per request.
        model_id: The id recorded in the stores it writes, instead of
            `openai-compatible:<model>`. That default names no server: two servers answering
            to one model name with vectors of one length pass a store's embedder check even
            when they run different models (a server that serves whatever model it was started
            with, such as TEI or llama.cpp, takes any name). Give an id naming the model itself
            (`"tei:BAAI/bge-small-en-v1.5"`) to have a store refuse the other.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dimension: int,
        api_key: str | None = None,
        timeout: float | None = 30.0,
        max_retries: int = 3,
        batch_size: int = 128,
        model_id: str | None = None,
    ) -> None:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - the extra is installed in the workspace
            raise ImportError(
                'OpenAICompatibleEmbedder needs httpx: pip install "episodex[openai]"'
            ) from exc
        # Settings no request can run with are refused here, not at the first embedding.
        for name, value in (("base_url", base_url), ("model", model)):
            if not isinstance(value, str) or not value.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigurationError(f"{name} must be a non-empty string, got {value!r}")
        if not base_url.strip().lower().startswith(("http://", "https://")):
            raise ConfigurationError(
                f"base_url must start with http:// or https://, got {base_url!r}"
            )
        require_int("dimension", dimension, minimum=1, error=ConfigurationError)
        require_int("batch_size", batch_size, minimum=1, error=ConfigurationError)
        require_int("max_retries", max_retries, minimum=0, error=ConfigurationError)
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)  # pyright: ignore[reportUnnecessaryIsInstance]
            or not is_finite(timeout)
            or timeout <= 0
        ):
            raise ConfigurationError(
                f"timeout must be a number of seconds above 0, or None, got {timeout!r}"
            )
        if model_id is not None and (not isinstance(model_id, str) or not model_id.strip()):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(
                f"model_id must be None or a non-empty string, got {model_id!r}"
            )
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)
        self._model_name = model
        self._model_id = model_id if model_id is not None else f"openai-compatible:{model}"
        self._dim = dimension
        self._retries = max_retries
        self._batch_size = batch_size

    @property
    def model_id(self) -> str:
        """The `model_id` given, else `openai-compatible:<model>`."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """The configured vector length."""
        return self._dim

    def _post(self, texts: list[str]) -> Matrix:
        import httpx

        delay = 0.5
        for attempt in range(self._retries + 1):
            try:
                resp = self._client.post(
                    "/embeddings", json={"model": self._model_name, "input": texts}
                )
            except httpx.TransportError as exc:
                if attempt == self._retries:
                    raise EmbeddingError(f"embedding API unreachable: {exc}") from exc
            except httpx.HTTPError as exc:  # too many redirects, an undecodable body
                raise EmbeddingError(f"embedding API request failed: {exc}") from exc
            else:
                if resp.status_code == 200:
                    return self._vectors(resp.content, len(texts))
                transient = resp.status_code == 429 or resp.status_code >= 500
                if not transient or attempt == self._retries:
                    raise EmbeddingError(
                        f"embedding API answered {resp.status_code}: {resp.text[:200]}"
                    )
            time.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _vectors(self, body: bytes, count: int) -> Matrix:
        """The `count` vectors of a 200 answer, each at its text's place, or `EmbeddingError`.

        A proxy's error page, a body cut short or an answer of another shape is an embedding
        failure, not a raw parse error; so is an answer whose `index` fields repeat one text
        and leave out another, which has the right shape but would store vectors under the
        wrong texts. A server that gives no `index` at all answers in the order asked.
        """
        try:
            data = json.loads(body)["data"]
            if not isinstance(data, list):
                raise TypeError("`data` is not a list")
            items: list[dict[str, Any]] = [dict(d) for d in data]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
            indexed = ["index" in d for d in items]
            if all(indexed):
                places = [d["index"] for d in items]
                if any(isinstance(p, bool) or not isinstance(p, int) for p in places):
                    raise TypeError("an `index` is not an integer")
                if sorted(places) != list(range(len(items))):
                    raise ValueError(f"the `index` fields are {sorted(places)[:10]}")
                items.sort(key=lambda d: d["index"])
            elif any(indexed):
                raise ValueError("some items have an `index` and some do not")
            out = np.asarray([d["embedding"] for d in items], dtype=np.float32)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise EmbeddingError(
                f"embedding API answered 200 with something other than {count} embeddings "
                f"({type(exc).__name__}: {str(exc)[:200]}); body starts {body[:80]!r}"
            ) from None
        if out.shape != (count, self._dim):
            raise EmbeddingError(
                f"embedding API returned shape {out.shape}, expected "
                f"({count}, {self._dim}): check `dimension`"
            )
        return out

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed texts for storage, `batch_size` per request."""
        clipped = clip_texts(texts)
        if not clipped:
            return np.zeros((0, self._dim), dtype=np.float32)
        parts = [
            self._post(clipped[i : i + self._batch_size])
            for i in range(0, len(clipped), self._batch_size)
        ]
        return np.concatenate(parts)

    def embed_query(self, text: str) -> Matrix:
        """Embed a query."""
        return self._post(clip_texts([text]))[0]
