"""Every Python snippet of integrations/langchain/README.md runs, in order, as written."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

# Slow: runs the adapter README blocks; `pytest -m "not slow"` leaves it out.
pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[3] / "integrations" / "langchain" / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_has_the_three_shapes() -> None:
    joined = "\n".join(SNIPPETS)
    for name in (
        "EpisodicMemoryMiddleware",
        "recall_episodes",
        "ConversationChain",
        "EpisodicRetriever",
        "create_memory_search_tool",
    ):
        assert name in joined


def test_snippets_run_and_remember(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # the snippets store in ./memory
    outputs = []
    with warnings.catch_warnings():
        # The classic snippet silences LangChain's deprecation of classic chains itself;
        # this keeps its global filter from leaking into the rest of the test session.
        warnings.simplefilter("error")
        for snippet in SNIPPETS:
            exec(compile(snippet, str(README), "exec"), {"__name__": "readme"})
            outputs.append(capsys.readouterr().out)
    agent_out, lcel_out, classic_out, retriever_out, tool_out = outputs[:5]
    store_out = next(out for out in outputs if "[('alice', 'facts')]" in out)
    assert store_out.splitlines() == ["diet", "['diet']", "[('alice', 'facts')]"]
    assert "<summary>I am vegetarian.</summary>" in agent_out
    assert lcel_out.strip() == "An aisle seat, as usual."
    assert classic_out.strip() == "Yes, on Monday."
    lines = retriever_out.strip().splitlines()
    assert len(lines) == 2 and "Refund order 1182, it broke." in retriever_out
    assert tool_out.startswith("<recalled_episodes>")
    assert "user: Refund order 1182, it broke." in tool_out
