"""The model id an OpenAI-compatible embedder records, and two servers with one model name.

`openai-compatible:<model>` names no server, so a store made through one server passed the
embedder check of another answering to the same name with vectors of the same length, whatever
model it ran. `model_id=` records an id naming the model itself; the default is unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from episodex import (
    ConfigurationError,
    EmbedderMismatchError,
    ItemStore,
    OpenAICompatibleEmbedder,
    open_engine,
)


def _server(url: str, model_id: str | None = None) -> OpenAICompatibleEmbedder:
    # Nothing is embedded here: opening a store reads only the id and the dimension.
    return OpenAICompatibleEmbedder(base_url=url, model="embed", dimension=384, model_id=model_id)


def test_an_explicit_model_id_tells_two_servers_with_one_model_name_apart(
    tmp_path: Path,
) -> None:
    engine = open_engine(path=str(tmp_path / "store"))
    bge = _server("http://tei-1:8080/v1", model_id="tei:BAAI/bge-small-en-v1.5")
    assert bge.model_id == "tei:BAAI/bge-small-en-v1.5"
    ItemStore(engine, bge)
    minilm = _server("http://tei-2:8080/v1", model_id="tei:all-MiniLM-L6-v2")
    with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2"):
        ItemStore(engine, minilm)
    # The same model behind another address opens it.
    ItemStore(engine, _server("http://10.0.0.7:8080/v1", model_id="tei:BAAI/bge-small-en-v1.5"))
    engine.close()


def test_the_default_model_id_is_unchanged() -> None:
    plain = OpenAICompatibleEmbedder(base_url="http://tei-1:8080/v1", model="embed", dimension=8)
    assert plain.model_id == "openai-compatible:embed"


@pytest.mark.parametrize("bad", ["", "  ", 7])
def test_a_model_id_that_is_no_text_is_refused(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="model_id"):
        _server("http://tei-1:8080/v1", model_id=bad)  # type: ignore[arg-type]
