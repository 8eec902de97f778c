"""Each operation is defined once; the async memory and the sync twins are derived from it."""

from __future__ import annotations

import inspect
import io
import json

import pytest
from episodex import (
    Embedder,
    EpisodeStore,
    EpisodicMemory,
    ImportReport,
    StepLessonMemory,
    SyncEpisodicMemory,
    SyncStepLessonMemory,
    run_sync,
)

#: Store methods the memory does not expose (iteration and ownership checks are the store's).
STORE_ONLY = {"iter_episodes", "foreign_ids", "vectors", "write_all", "write_batches"}


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    """Public operations of a class as seen on an instance: name -> signature without self."""
    found: dict[str, inspect.Signature] = {}
    for name in dir(cls):
        if name.startswith("_") and name != "import_":
            continue
        value = inspect.getattr_static(cls, name)
        if isinstance(value, property | classmethod | staticmethod):
            continue
        if inspect.isfunction(value):
            signature = inspect.signature(value)
            found[name] = signature.replace(parameters=list(signature.parameters.values())[1:])
        elif hasattr(value, "__get__") and hasattr(value, "__signature__"):
            found[name] = value.__signature__
    return found


def coroutine_methods(cls: type) -> set[str]:
    return {
        name
        for name in public_methods(cls)
        if inspect.iscoroutinefunction(inspect.getattr_static(cls, name))
        or type(inspect.getattr_static(cls, name)).__name__ == "threaded"
    }


def test_every_store_operation_is_on_the_memory_with_its_signature() -> None:
    store, memory = public_methods(EpisodeStore), public_methods(EpisodicMemory)
    for name in set(store) - STORE_ONLY:
        assert name in memory, f"EpisodicMemory lacks EpisodeStore.{name}"
        assert memory[name] == store[name], f"EpisodicMemory.{name} drifted from the store's"


@pytest.mark.parametrize(
    ("async_cls", "sync_cls"),
    [(EpisodicMemory, SyncEpisodicMemory), (StepLessonMemory, SyncStepLessonMemory)],
)
def test_every_coroutine_method_has_a_sync_twin_with_its_signature(
    async_cls: type, sync_cls: type
) -> None:
    asynchronous, synchronous = public_methods(async_cls), public_methods(sync_cls)
    names = coroutine_methods(async_cls) - {"aclose"}  # a twin closes with `close`
    assert {"recall", "import_", "memorize", "optimize"} <= names or {
        "init_episode",
        "lessons_block",
    } <= names
    for name in names:
        assert name in synchronous, f"{sync_cls.__name__} lacks {name}"
        assert synchronous[name] == asynchronous[name], f"{sync_cls.__name__}.{name} drifted"


def test_derived_methods_carry_name_docstring_and_signature(embedder: Embedder) -> None:
    with SyncEpisodicMemory(location=":memory:", embedder=embedder) as mem:
        for method in (mem.recall, mem.memory.recall, mem.import_, mem.memory.import_):
            assert method.__name__ in ("recall", "import_")
            assert method.__doc__ == getattr(EpisodeStore, method.__name__).__doc__
            assert "self" not in inspect.signature(method).parameters
        assert "on_progress" in inspect.signature(mem.import_).parameters
        assert mem.store is mem.memory.store and mem.engine is mem.memory.engine
        assert mem.embedder is mem.memory.embedder


def _lines(n: int) -> str:
    return "".join(
        json.dumps(
            {
                "short_summary": f"short {i}",
                "long_summary": f"long {i}",
                "user_id": "u",
                "agent_id": "a",
                "conversation_id": "c",
            }
        )
        + "\n"
        for i in range(n)
    )


@pytest.mark.slow
async def test_import_reports_progress_through_the_memory(embedder: Embedder) -> None:
    # The async memory once lost `on_progress`; both flavours now take it from the store.
    seen: list[int] = []
    async with EpisodicMemory(location=":memory:", embedder=embedder) as mem:
        report = await mem.import_(io.StringIO(_lines(300)), on_progress=seen.append)
        assert isinstance(report, ImportReport) and len(report.imported) == 300
    assert seen == [256, 300]
    seen.clear()
    with SyncEpisodicMemory(location=":memory:", embedder=embedder) as sync:
        assert len(sync.import_(io.StringIO(_lines(3)), on_progress=seen.append).imported) == 3
        assert sync.count(user_id="u", agent_id="a") == 3
    assert seen == [3]


def test_a_twin_has_no_catch_all_attribute(embedder: Embedder) -> None:
    # Without `__getattr__`, a typo fails here and in pyright, instead of returning Any.
    assert "__getattr__" not in vars(SyncEpisodicMemory)
    with SyncEpisodicMemory(location=":memory:", embedder=embedder) as mem:
        with pytest.raises(AttributeError):
            mem.recal  # pyright: ignore[reportAttributeAccessIssue]  # noqa: B018


def _answer() -> int:
    return 42


async def _coroutine() -> int:
    return _answer()


def test_run_sync_runs_a_coroutine_outside_a_loop() -> None:
    assert run_sync(_coroutine()) == 42


async def test_run_sync_runs_a_coroutine_inside_a_running_loop() -> None:
    # A running loop cannot be re-entered: the coroutine runs on a fresh loop in a thread.
    assert run_sync(_coroutine()) == 42


def test_a_twin_forwards_every_public_attribute(embedder: Embedder) -> None:
    with SyncEpisodicMemory(location=":memory:", embedder=embedder) as mem:
        for name in (n for n in vars(mem.memory) if not n.startswith("_")):
            assert getattr(mem, name) is getattr(mem.memory, name), name
        lessons = SyncStepLessonMemory(StepLessonMemory.from_memory(mem.memory))
        try:
            inner = lessons.lessons
            names = [n for n in vars(inner) if not n.startswith("_")]
            names += [n for n, v in vars(StepLessonMemory).items() if isinstance(v, property)]
            for name in names:
                assert getattr(lessons, name) == getattr(inner, name), name
            lessons.init_episode("s", user_id="u", agent_id="a")
            # The attempt is the twin's thread's: seen from its context, not from any other.
            assert lessons.episode is lessons.in_thread_context(lambda: inner.episode)
            assert lessons.episode is not None and inner.episode is None
        finally:
            lessons.close()


def test_the_twin_constructor_takes_every_memory_argument() -> None:
    memory = inspect.signature(EpisodicMemory.__init__).parameters
    twin = inspect.signature(SyncEpisodicMemory.__init__).parameters
    for name, parameter in memory.items():
        assert name in twin, f"SyncEpisodicMemory() lacks {name}"
        assert twin[name].kind == parameter.kind and twin[name].default == parameter.default
        assert twin[name].annotation == parameter.annotation, name
