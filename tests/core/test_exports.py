"""The public surface of each package is exactly what is documented, and all of it is documented.

The lists below are the source of truth for what each package exports. Adding, removing or
renaming a public name means changing its package's `__all__` and the list here together (and
the README if the name appears there), so the public API never changes by accident.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

EPISODEX = [
    "DEFAULT_ENCODING",
    "DEFAULT_MODEL_ID",
    "DEFAULT_FIELDS",
    "EPISODE_FIELDS",
    "BaseMemory",
    "BaseMemoryStore",
    "TaskMemory",
    "TaskStore",
    "Bm25Encoder",
    "BundledMiniLMEmbedder",
    "ConfigurationError",
    "ConversationEpisode",
    "Embedder",
    "EmbedderMismatchError",
    "EmbeddingError",
    "Engine",
    "EngineError",
    "EngineOptions",
    "EngineUnavailableError",
    "EnvState",
    "Episode",
    "EpisodeNotFoundError",
    "EpisodeRecorder",
    "EpisodeStore",
    "EpisodexError",
    "EpisodicMemory",
    "FastEmbedEmbedder",
    "Grader",
    "GradingError",
    "GradingResult",
    "HybridMemory",
    "ImportFileError",
    "ImportReport",
    "ItemPut",
    "ItemRef",
    "ItemStore",
    "JSONLTaskStore",
    "LLMCallable",
    "AnyLLM",
    "LLMGrader",
    "LessonOptions",
    "Attempt",
    "MemKey",
    "MemoryEntry",
    "MemoryScope",
    "NotFoundError",
    "NotSupportedError",
    "OpenAICompatibleEmbedder",
    "ProgrammaticGrader",
    "QdrantTaskStore",
    "RecallOptions",
    "RecorderStats",
    "ReindexReport",
    "SpanEpisode",
    "SpladeEncoder",
    "RecencyMemory",
    "ReflectiveMemory",
    "RetrievedLesson",
    "SearchMode",
    "SimilarityMemory",
    "StepGrade",
    "StepLessonMemory",
    "StepMemory",
    "StorageFullError",
    "StoreClosedError",
    "StoreFileError",
    "StoreLockedError",
    "StoredItem",
    "SyncEpisodicMemory",
    "SyncStepLessonMemory",
    "Task",
    "TaskResult",
    "TaskSearchOptions",
    "TornLine",
    "UnknownTagError",
    "ValidationError",
    "VectorCacheEmbedder",
    "WorkingMemory",
    "__version__",
    "ask_llm",
    "default_embedder",
    "export_memories",
    "format_lessons",
    "format_recall",
    "import_memories",
    "message_line",
    "named_period",
    "open_engine",
    "render_episodes",
    "render_memories",
    "require_id",
    "resolve_scope",
    "run_sync",
    "span_episodes",
    "token_counter",
    "validate_recall_options",
]

LANGCHAIN_EPISODEX = [
    "EpisodexStore",
    "EpisodicContext",
    "EpisodicConversationMemory",
    "EpisodicMemory",
    "EpisodicMemoryMiddleware",
    "EpisodicRetriever",
    "LessonSource",
    "TaskEpisodeRetriever",
    "__version__",
    "arecord_exchange",
    "create_memory_search_tool",
    "from_langchain",
    "recall_episodes",
    "record_exchange",
]

LLAMA_INDEX_MEMORY_EPISODEX = [
    "SUMMARY_PROMPT",
    "EpisodicMemoryBlock",
    "EpisodicRetriever",
    "LessonSource",
    "LessonsMemoryBlock",
    "create_memory_search_tool",
    "from_llama_index",
    "offline_tokenizer",
]

EPISODEX_TESTING = ["FailingEngine", "HashEmbedder", "StallingModel"]

EPISODEX_PLAN = [
    "CollectionSpec",
    "Condition",
    "Filter",
    "Fused",
    "HasId",
    "Hit",
    "Match",
    "MatchAny",
    "MatchExcept",
    "Point",
    "Range",
    "Search",
    "SparseVec",
    "Stream",
]

DOCUMENTED = {
    "episodex": EPISODEX,
    "episodex.testing": EPISODEX_TESTING,
    "episodex.plan": EPISODEX_PLAN,
    "langchain_episodex": LANGCHAIN_EPISODEX,
    "llama_index.memory.episodex": LLAMA_INDEX_MEMORY_EPISODEX,
}
DISTRIBUTIONS = {
    "episodex": "episodex",
    "episodex.testing": "episodex",
    "episodex.plan": "episodex",
    "langchain_episodex": "langchain-episodex",
    "llama_index.memory.episodex": "llama-index-memory-episodex",
}
ROOT = Path(__file__).resolve().parents[2]
PYPROJECTS = {
    "episodex": ROOT / "packages" / "episodex" / "pyproject.toml",
    "langchain-episodex": ROOT / "integrations" / "langchain" / "pyproject.toml",
    "llama-index-memory-episodex": ROOT / "integrations" / "llama-index" / "pyproject.toml",
}
PACKAGES = list(DOCUMENTED)


def exports(package: str) -> list[str]:
    return list(getattr(importlib.import_module(package), "__all__", []))


def undocumented(obj: Any) -> list[str]:
    """The parts of a class or function that lack a docstring: itself, and public members it defines."""
    missing = [] if (obj.__doc__ or "").strip() else ["(itself)"]
    if inspect.isclass(obj):
        for name, value in vars(obj).items():
            if name.startswith("_"):
                continue
            target = value.__func__ if isinstance(value, classmethod | staticmethod) else value
            if (inspect.isroutine(target) or isinstance(target, property)) and not (
                target.__doc__ or ""
            ).strip():
                missing.append(name)
    return missing


@pytest.mark.parametrize("package", PACKAGES)
def test_exports_are_exactly_the_documented_list(package: str) -> None:
    names = exports(package)
    assert len(names) == len(set(names)), f"{package}.__all__ lists a name twice"
    assert sorted(names) == sorted(DOCUMENTED[package]), (
        f"{package}.__all__ differs from the documented list in tests/core/test_exports.py: "
        f"added {sorted(set(names) - set(DOCUMENTED[package]))}, "
        f"removed {sorted(set(DOCUMENTED[package]) - set(names))}"
    )


@pytest.mark.parametrize("package", PACKAGES)
def test_every_export_imports_by_name(package: str) -> None:
    for name in exports(package):
        namespace: dict[str, Any] = {}
        exec(f"from {package} import {name}", namespace)
        assert namespace[name] is getattr(importlib.import_module(package), name)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_class_and_function_is_documented(package: str) -> None:
    module = importlib.import_module(package)
    assert (module.__doc__ or "").strip(), f"{package} has no module docstring"
    gaps = {}
    for name in exports(package):
        obj = getattr(module, name)
        if inspect.isclass(obj) or inspect.isroutine(obj):
            missing = undocumented(obj)
            if missing:
                gaps[name] = missing
    assert not gaps, f"{package}: these lack a docstring: {gaps}"


@pytest.mark.parametrize("package", PACKAGES)
def test_exported_constants_are_immutable(package: str) -> None:
    # A module-level list or dict can be changed by any importer, for every other importer.
    module = importlib.import_module(package)
    for name in exports(package):
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isroutine(obj)):
            assert not isinstance(obj, list | dict | set), f"{package}.{name} is mutable"


@pytest.mark.parametrize("package", PACKAGES)
def test_version_matches_the_installed_distribution(package: str) -> None:
    # The installed metadata, the source's pyproject.toml and `__version__` (where exported)
    # must agree, so a release bumps all of them together.
    module = importlib.import_module(package)
    version = importlib.metadata.version(DISTRIBUTIONS[package])
    with PYPROJECTS[DISTRIBUTIONS[package]].open("rb") as f:
        assert version == tomllib.load(f)["project"]["version"]
    if "__version__" in exports(package):
        assert module.__version__ == version


def test_the_core_imports_no_framework() -> None:
    # Data flows adapter -> core, never back: importing episodex must not pull in a framework.
    code = (
        "import sys, episodex; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('langchain', 'langchain_core', "
        "'langchain_classic', 'llama_index', 'langgraph')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
