"""Opening stores as a newcomer does: twice in a notebook, with no arguments, after a plain
install, with a misplaced key, with a model cache that cannot be written (issue 15)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from episodex import (
    BundledMiniLMEmbedder,
    ConfigurationError,
    EpisodicMemory,
    StoreClosedError,
    SyncEpisodicMemory,
    open_engine,
)
from episodex.testing import HashEmbedder

REPO = Path(__file__).resolve().parents[2]


def _episode(n: int) -> dict[str, str]:
    return {
        "short_summary": f"episode {n}",
        "long_summary": f"the long story of episode {n}",
        "user_id": "u",
        "agent_id": "a",
        "conversation_id": "c",
    }


async def test_the_same_path_twice_in_one_process_shares_the_store(tmp_path: Path) -> None:
    first = EpisodicMemory(tmp_path / "store", embedder=HashEmbedder())
    await first.memorize_many([_episode(1)])
    # A notebook re-running the cell: no StoreLockedError, the same episodes.
    second = EpisodicMemory(str(tmp_path / "store"), embedder=HashEmbedder())
    assert await second.count(user_id="u", agent_id="a") == 1
    await second.memorize_many([_episode(2)])
    assert await first.count(user_id="u", agent_id="a") == 2
    # Closing one handle leaves the other working; closing it twice is harmless.
    first.close()
    first.close()
    await second.memorize_many([_episode(3)])
    assert await second.count(user_id="u", agent_id="a") == 3
    with pytest.raises(StoreClosedError):
        await first.count(user_id="u", agent_id="a")
    second.close()
    # The last close released the folder: it opens again with everything in it.
    with SyncEpisodicMemory(tmp_path / "store", embedder=HashEmbedder()) as again:
        assert again.count(user_id="u", agent_id="a") == 3


_OTHER_PROCESS = textwrap.dedent(
    """
    import sys
    from episodex import EpisodicMemory, StoreLockedError
    from episodex.testing import HashEmbedder
    try:
        EpisodicMemory(sys.argv[1], embedder=HashEmbedder())
    except StoreLockedError as exc:
        print(exc)
        sys.exit(4)
    sys.exit(0)
    """
)


def test_another_process_gets_store_locked_error_naming_the_server_call(tmp_path: Path) -> None:
    with SyncEpisodicMemory(tmp_path / "store", embedder=HashEmbedder()) as mem:
        mem.memorize_many([_episode(1)])
        proc = subprocess.run(
            [sys.executable, "-c", _OTHER_PROCESS, str(tmp_path / "store")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 4, proc.stdout + proc.stderr
        assert "open in another process" in proc.stdout
        assert 'EpisodicMemory(url="http://localhost:6333")' in proc.stdout
        assert mem.count(user_id="u", agent_id="a") == 1


def test_no_arguments_open_the_default_store_in_the_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EPISODEX_PATH", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(sys, "platform", "linux")
    with SyncEpisodicMemory(embedder=HashEmbedder()) as mem:
        mem.memorize_many([_episode(1)])
    assert (tmp_path / "data" / "episodex" / "memory" / "episodes").is_dir()
    # EpisodicMemory() again finds what was stored.
    with SyncEpisodicMemory(embedder=HashEmbedder()) as mem:
        assert mem.count(user_id="u", agent_id="a") == 1


def test_the_default_store_follows_each_platform_and_the_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EPISODEX_PATH", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    expected = {
        "darwin": tmp_path / "home" / "Library" / "Application Support" / "episodex" / "memory",
        "win32": tmp_path / "local" / "episodex" / "memory",
    }
    for platform, folder in expected.items():
        monkeypatch.setattr(sys, "platform", platform)
        EpisodicMemory(embedder=HashEmbedder()).close()
        assert (folder / "episodes").is_dir(), platform
    monkeypatch.setenv("EPISODEX_PATH", str(tmp_path / "chosen"))
    EpisodicMemory(embedder=HashEmbedder()).close()
    assert (tmp_path / "chosen" / "episodes").is_dir()


def test_memory_location_works_in_a_venv_with_only_the_core(tmp_path: Path) -> None:
    uv = REPO / ".tools" / "bin" / "uv"
    venv = tmp_path / "venv"
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_PROJECT_ENVIRONMENT": str(venv)}
    env.pop("VIRTUAL_ENV", None)
    # The core's locked dependencies only (no integrations, no dev tools), then the core
    # itself as a plain (non-editable) install, all offline from uv's cache.
    for command in (
        [
            str(uv),
            "sync",
            "-q",
            "--frozen",
            "--offline",
            "--package",
            "episodex",
            "--no-dev",
            "--no-install-project",
            "--python",
            sys.executable,
        ],
        [
            str(uv),
            "pip",
            "install",
            "-q",
            "--offline",
            "--no-deps",
            "--python",
            str(venv / "bin" / "python"),
            str(REPO / "packages" / "episodex"),
        ],
        [str(uv), "pip", "check", "--python", str(venv / "bin" / "python")],
    ):
        proc = subprocess.run(
            command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    script = textwrap.dedent(
        """
        import importlib.util, numpy as np
        from episodex import EpisodicMemory, SyncEpisodicMemory
        assert importlib.util.find_spec("langchain_core") is None
        assert importlib.util.find_spec("episodex").origin.startswith(__import__("sys").prefix)
        class Tiny:
            model_id, dimension = "tiny", 4
            def embed_documents(self, texts):
                return np.ones((len(texts), 4), dtype=np.float32)
            def embed_query(self, text):
                return np.ones(4, dtype=np.float32)
        with SyncEpisodicMemory(location=":memory:", embedder=Tiny()) as mem:
            mem.memorize(short_summary="s", long_summary="l", user_id="u", agent_id="a",
                         conversation_id="c")
            print(mem.count(user_id="u", agent_id="a"))
        """
    )
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, "1"), proc.stderr


def test_no_argument_is_silently_ignored(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="only apply to a Qdrant server") as info:
        EpisodicMemory(tmp_path / "s", embedder=HashEmbedder(), api_key="sk-embedding")
    assert "OpenAICompatibleEmbedder" in str(info.value)  # where an embedding key belongs
    assert not (tmp_path / "s").exists()
    for options in (
        {"qdrant_api_key": "k"},
        {"prefer_grpc": True},
        {"timeout": 5.0},
        {"collection_prefix": "app_"},
    ):
        with pytest.raises(ConfigurationError, match="only apply to a Qdrant server"):
            EpisodicMemory(tmp_path / "s", embedder=HashEmbedder(), **options)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="location=':memory:'"):
        EpisodicMemory(location=":memory:", embedder=HashEmbedder(), qdrant_api_key="k")
    with pytest.raises(ConfigurationError, match="disagree"):
        open_engine(url="http://localhost:6333", api_key="a", qdrant_api_key="b")
    # With a server, both spellings of the Qdrant key still work (no connection is made yet).
    quiet = {"check_compatibility": False}  # no version probe: unit tests have no network
    for options in ({"api_key": "k"}, {"qdrant_api_key": "k"}):
        engine = open_engine(url="https://localhost:6333", client_options=quiet, **options)  # type: ignore[arg-type]
        assert engine.kind == "server"
        engine.close()


def test_the_bundled_models_need_no_writable_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    # Under a regular file nothing can be created, whoever runs the test (root included): the
    # models load from the installed episodex-models package and write no cache anywhere.
    for name in ("EPISODEX_HOME", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.setenv(name, str(blocker / "cache"))
    vector = BundledMiniLMEmbedder().embed_query("hello")
    assert vector.shape == (384,)
    assert not (blocker.parent / "cache").exists()
