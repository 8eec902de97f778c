"""The package surface: exports, namespace layout, LLM adapter, tokenizer, README snippets."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import llama_index.memory.episodex as package
import pytest
from episodex import ConfigurationError, token_counter
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.llms import MockLLM
from llama_index.memory.episodex import from_llama_index, offline_tokenizer

ROOT = Path(__file__).resolve().parents[3]
DIST = ROOT / "integrations" / "llama-index"


def test_exports_are_exactly_the_documented_names() -> None:
    assert sorted(package.__all__) == [
        "EpisodicMemoryBlock",
        "EpisodicRetriever",
        "LessonSource",
        "LessonsMemoryBlock",
        "SUMMARY_PROMPT",
        "create_memory_search_tool",
        "from_llama_index",
        "offline_tokenizer",
    ]
    for name in package.__all__:
        assert getattr(package, name) is not None


def test_namespace_packages_have_no_init() -> None:
    src = DIST / "src" / "llama_index"
    assert not (src / "__init__.py").exists()
    assert not (src / "memory" / "__init__.py").exists()
    assert (src / "memory" / "episodex" / "py.typed").exists()


async def test_from_llama_index_sends_the_prompt_as_a_user_message(make_llm: type) -> None:
    llm = make_llm(reply="Check the units first.")
    ask = from_llama_index(llm, system_prompt="Answer in one sentence.")
    assert await ask("What went wrong?") == "Check the units first."
    [system, user] = llm.calls[-1]
    assert (system.role, system.content) == (MessageRole.SYSTEM, "Answer in one sentence.")
    assert (user.role, user.content) == (MessageRole.USER, "What went wrong?")


async def test_from_llama_index_takes_completion_models_too() -> None:
    ask = from_llama_index(MockLLM(max_tokens=3))
    assert await ask("Summarise this.") == "text text text"


def test_from_llama_index_refuses_what_is_not_an_llm() -> None:
    with pytest.raises(ConfigurationError, match="needs a LlamaIndex LLM"):
        from_llama_index("gpt-4o-mini")  # type: ignore[arg-type]


def test_offline_tokenizer_counts_like_episodex() -> None:
    text = "Refund for order 1234 — issued <|endoftext|> on Monday."
    tokens = offline_tokenizer()(text)
    assert isinstance(tokens, list) and all(isinstance(t, int) for t in tokens)
    assert len(tokens) == token_counter()(text)


@pytest.mark.slow
def test_readme_snippets_run(tmp_path: Path) -> None:
    readme = (DIST / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)
    assert len(blocks) == 5
    script = tmp_path / "readme_snippets.py"
    script.write_text("\n\n".join(blocks), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QDRANT_", "OPENAI_"))}
    env.update(HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr
    out = proc.stdout
    # Quick start: Thursday's system message carries Monday's episodes, then the question.
    assert re.search(r"^system: <memory>\n<episodes>\n<recalled_episodes>\n", out, flags=re.M)
    assert "<summary>My kettle from order 1182 arrived with a cracked lid.</summary>" in out
    assert 'conversation="monday"' in out
    assert "user: What happened with my kettle?" in out
    # Tool: the block of Alice's episodes. Retriever: scored hits from Monday; summariser: one
    # episode recorded on Friday.
    assert out.rstrip().endswith("\n<recalled_episodes>\n1")
    assert re.search(
        r"^0\.\d{3} monday Please send my future orders to 12 Elm Street\.$", out, flags=re.M
    )
    # Retriever with relative scores: the best hit passes a 0.5 similarity cutoff.
    assert re.search(r"^(0\.[5-9]\d|1\.00) Please send my future orders", out, flags=re.M)
    assert out.rstrip().endswith("\n1")
