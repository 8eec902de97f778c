"""Any fastembed text model by name, run locally (the bundled model is in `bundled.py`).

Every embedder is synchronous and thread-safe; the memory classes call it from a worker thread
so an event loop never waits on a matrix multiply.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from episodex._common.errors import ConfigurationError, EmbeddingError
from episodex._common.validation import require_int
from episodex._embedders.base import Matrix, clip_texts

if TYPE_CHECKING:
    from fastembed import TextEmbedding

__all__ = ["FastEmbedEmbedder"]


class _FastEmbedModel:
    """A lazily loaded fastembed `TextEmbedding`, shared by the threads of one embedder."""

    def __init__(self, factory: Callable[[], TextEmbedding]) -> None:
        self._factory = factory
        self._model: TextEmbedding | None = None
        self._lock = threading.Lock()

    def get(self) -> TextEmbedding:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    try:
                        self._model = self._factory()
                    except (EmbeddingError, ConfigurationError):
                        raise
                    except Exception as exc:
                        raise EmbeddingError(f"could not load the embedding model: {exc}") from exc
        return self._model

    def documents(self, texts: Sequence[str], batch_size: int, dimension: int) -> Matrix:
        if not texts:
            return np.zeros((0, dimension), dtype=np.float32)
        model = self.get()
        try:
            rows = list(model.embed(clip_texts(texts), batch_size=batch_size))
        except Exception as exc:
            raise EmbeddingError(f"embedding failed: {exc}") from exc
        return np.asarray(rows, dtype=np.float32)

    def query(self, text: str) -> Matrix:
        model = self.get()
        try:
            return np.asarray(next(iter(model.query_embed(clip_texts([text])))), dtype=np.float32)
        except Exception as exc:
            raise EmbeddingError(f"embedding failed: {exc}") from exc


class FastEmbedEmbedder:
    """Any fastembed text model by name.

    fastembed downloads the model on first use where the machine has a network; pass
    `specific_model_path` to load a folder you already have.

    Args:
        model_name: A name from `fastembed.TextEmbedding.list_supported_models()`.
        batch_size: Texts per ONNX run when embedding documents.
        **kwargs: Passed to `fastembed.TextEmbedding` (cache_dir, threads, specific_model_path...).
    """

    def __init__(self, model_name: str, *, batch_size: int = 64, **kwargs: Any) -> None:
        from fastembed import TextEmbedding

        # Refused here, not by fastembed at the first write as an `EmbeddingError`.
        require_int("batch_size", batch_size, minimum=1, error=ConfigurationError)
        models = {m["model"]: m for m in TextEmbedding.list_supported_models()}
        if model_name not in models:
            raise ConfigurationError(
                f"fastembed has no text model named {model_name!r}; see "
                "fastembed.TextEmbedding.list_supported_models()"
            )
        self._name = model_name
        self._dim = int(models[model_name]["dim"])
        self._batch_size = batch_size
        self._model = _FastEmbedModel(lambda: TextEmbedding(model_name, **kwargs))

    @property
    def model_id(self) -> str:
        """The fastembed model name."""
        return self._name

    @property
    def dimension(self) -> int:
        """The model's vector length."""
        return self._dim

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed texts for storage."""
        return self._model.documents(texts, self._batch_size, self._dim)

    def embed_query(self, text: str) -> Matrix:
        """Embed a query."""
        return self._model.query(text)
