"""The bundled models load the files their model id names, or raise `EmbeddingError`.

A store records only the model id, so vectors of other files under that id would be mixed
into it without a word. The files are checked when they are loaded (not only once per process
by `episodex_models.model_path`), and against the digests the core's model ids stand for (not
only against the installed package's own manifest, which a rebuilt package rewrites).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import episodex_models
import numpy as np
import pytest
from episodex import BundledMiniLMEmbedder, EmbeddingError, SpladeEncoder

TEXT = "The Refund for ORDER 1182 was approved after the Manager called back."


def _copy_of_the_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """`episodex_models` imported from a copy under `tmp_path`, for the loader to use."""
    copy = tmp_path / "episodex_models"
    shutil.copytree(Path(episodex_models.__file__).parent, copy)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "episodex_models")
    module = importlib.import_module("episodex_models")
    assert Path(str(module.__file__)).parent == copy
    return module


def _cased(tokenizer: Path) -> None:
    """Turn the tokenizer's lowercasing off: still a valid tokenizer, other word pieces."""
    data = json.loads(tokenizer.read_text(encoding="utf-8"))
    data["normalizer"]["lowercase"] = False
    tokenizer.write_text(json.dumps(data), encoding="utf-8")


def test_a_tokenizer_changed_after_the_packages_check_is_refused_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = _copy_of_the_models(tmp_path, monkeypatch)
    expected = SpladeEncoder().query(TEXT)
    folder = models.model_path("splade-tiny")  # checked: the check is not made again
    _cased(folder / "tokenizer.json")
    with pytest.raises(EmbeddingError, match=r"tokenizer\.json.*sha256"):
        SpladeEncoder().query(TEXT)
    (folder / "tokenizer.json").write_bytes(
        (Path(episodex_models.__file__).parent / "splade-tiny" / "tokenizer.json").read_bytes()
    )
    assert SpladeEncoder().query(TEXT) == expected  # the right file loads again


def test_a_model_file_truncated_after_the_packages_check_is_refused_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = _copy_of_the_models(tmp_path, monkeypatch)
    graph = models.model_path("all-MiniLM-L6-v2") / "model.onnx"
    graph.write_bytes(graph.read_bytes()[: 1 << 20])
    with pytest.raises(EmbeddingError, match=r"model\.onnx.*sha256.*reinstall episodex-models"):
        BundledMiniLMEmbedder().embed_query(TEXT)


def test_a_rebuilt_package_with_other_files_is_refused_under_the_same_model_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A package rebuilt with other files and a manifest to match passes its own check, but
    # its vectors are not the ones the recorded model id stands for.
    models = _copy_of_the_models(tmp_path, monkeypatch)
    root = Path(str(models.__file__)).parent
    tokenizer = root / "splade-tiny" / "tokenizer.json"
    _cased(tokenizer)
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    manifest["models"]["splade-tiny"]["files"]["tokenizer.json"] = hashlib.sha256(
        tokenizer.read_bytes()
    ).hexdigest()
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    models.model_path("splade-tiny")  # the package's own check passes
    encoder = SpladeEncoder()
    with pytest.raises(EmbeddingError, match=encoder.model_id):
        encoder.query(TEXT)


def test_a_manifest_that_cannot_be_read_is_an_embedding_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = _copy_of_the_models(tmp_path, monkeypatch)
    manifest = Path(str(models.__file__)).parent / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:100])
    with pytest.raises(EmbeddingError, match=r"manifest\.json"):
        BundledMiniLMEmbedder.model_folder()
    with pytest.raises(EmbeddingError, match=r"manifest\.json"):
        SpladeEncoder().query(TEXT)


def test_the_shipped_files_still_load_and_give_the_same_vectors() -> None:
    dense = BundledMiniLMEmbedder()
    assert np.array_equal(dense.embed_query(TEXT), BundledMiniLMEmbedder().embed_query(TEXT))
    assert SpladeEncoder().query(TEXT) == SpladeEncoder().query(TEXT)
