"""BM25 sparse vectors, computed in process by Qdrant Edge's tokenizer (stemming, stopwords).

The same vectors go to the embedded engine and to a server; the collection applies the IDF
modifier, so only term frequencies are computed here and nothing is downloaded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import qdrant_edge as qe

from episodex._common.errors import ConfigurationError
from episodex._common.validation import is_finite
from episodex._engines.plan import SparseVec

__all__ = ["Bm25Encoder", "require_bm25"]


class Bm25Encoder:
    """English BM25 with Snowball stemming and stopwords.

    Args:
        k: Term-frequency saturation.
        b: Length normalisation.
        avg_len: Expected document length in tokens (summaries are short).
    """

    def __init__(self, *, k: float = 1.2, b: float = 0.75, avg_len: float = 64.0) -> None:
        # Checked here, not where the tokenizer is first built: that is inside a store's first
        # write (or its opening), after the store has recorded these settings.
        checks: tuple[tuple[str, float, str, Callable[[float], bool]], ...] = (
            ("k", k, ">= 0", lambda v: v >= 0),
            ("b", b, "in [0, 1]", lambda v: 0 <= v <= 1),
            ("avg_len", avg_len, "> 0", lambda v: v > 0),
        )
        for name, value, span, within in checks:
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)  # pyright: ignore[reportUnnecessaryIsInstance]
                or not is_finite(value)
                or not within(value)
            ):
                raise ConfigurationError(
                    f"BM25 {name} must be a finite number {span}, got {value!r}"
                )
        self.config = {"k": k, "b": b, "avg_len": avg_len, "language": "english"}
        self._local = threading.local()

    def _model(self) -> qe.Bm25:
        # One model per thread: the binding's thread-safety is not documented.
        model = getattr(self._local, "model", None)
        if model is None:
            model = qe.Bm25(qe.Bm25Config(**self.config))  # type: ignore[arg-type]
            self._local.model = model
        return model

    def document(self, text: str) -> SparseVec:
        """Term-frequency weights of a stored text."""
        vec = self._model().embed_document(text)
        return SparseVec(list(vec.indices), list(vec.values))

    def query(self, text: str) -> SparseVec:
        """Unit weights of each distinct query term (empty for a query of only stopwords)."""
        vec = self._model().embed_query(text)
        return SparseVec(list(vec.indices), list(vec.values))


def require_bm25(value: object) -> Bm25Encoder | None:
    """The `bm25` option of a store: None (the collection's settings) or a `Bm25Encoder`.

    Raises:
        ConfigurationError: It is something else.
    """
    if value is not None and not isinstance(value, Bm25Encoder):
        raise ConfigurationError(
            f"bm25 must be None or a Bm25Encoder (e.g. Bm25Encoder(k=1.2)), got {value!r}"
        )
    return value
