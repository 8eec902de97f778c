"""Re-indexing a store with another embedder (issue 16, item 3): from the stored texts,
resumable, nothing lost when killed midway, and an old store says to run it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from episodex import (
    EmbedderMismatchError,
    EpisodicMemory,
    ReindexReport,
    SyncEpisodicMemory,
)
from episodex.cli import main
from episodex.testing import HashEmbedder


def old() -> HashEmbedder:
    return HashEmbedder(dimension=32, model_id="test/old")


def new() -> HashEmbedder:
    return HashEmbedder(dimension=48, model_id="test/new")


def _episodes(n: int, tag: str = "episode") -> list[dict[str, Any]]:
    return [
        {
            "short_summary": f"{tag} {i} about order {i}",
            "long_summary": f"the user asked about order {i}; the agent answered {tag}",
            "user_id": "u",
            "agent_id": "a",
            "conversation_id": f"c{i % 7}",
            "metadata": {"i": i},
        }
        for i in range(n)
    ]


def _export(mem: SyncEpisodicMemory) -> list[dict[str, Any]]:
    import io

    out = io.StringIO()
    mem.export(out, user_id="u", agent_id="a")
    return sorted((json.loads(line) for line in out.getvalue().splitlines()), key=str)


def test_reindex_re_embeds_everything_with_the_new_embedder(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with SyncEpisodicMemory(path, embedder=old()) as mem:
        mem.memorize_many(_episodes(300))
        before = _export(mem)
    # The new embedder alone: refused, with what to do.
    with pytest.raises(EmbedderMismatchError, match="reindex") as info:
        EpisodicMemory(path, embedder=new())
    assert "for_reindex=True" in str(info.value) and "episodex --path" in str(info.value)
    with SyncEpisodicMemory(path, embedder=new(), for_reindex=True) as mem:
        # Until re-indexed: reading works, vectors do not.
        assert mem.count(user_id="u", agent_id="a") == 300
        with pytest.raises(EmbedderMismatchError):
            mem.recall(user_id="u", agent_id="a", query="order 5")
        with pytest.raises(EmbedderMismatchError):
            mem.memorize_many(_episodes(1, "late"))
        seen: list[tuple[int, int]] = []
        report = mem.reindex(batch_size=64, on_progress=lambda d, t: seen.append((d, t)))
        assert isinstance(report, ReindexReport)
        assert report.as_dict() == {
            "previous_embedder": "test/old",
            "embedder": "test/new",
            "episodes": 300,
            "embedded": 300,
            "resumed": 0,
            "removed": 0,
        }
        assert seen[-1] == (300, 300) and len(seen) == 5
        assert _export(mem) == before  # every field, every id, unchanged
        hits = mem.recall(user_id="u", agent_id="a", query="order 5")
        assert {"i": 5} in [h["metadata"] for h in hits["previous_conversations"]]
    # Built with the new embedder now: it opens plainly; the old one is refused.
    with SyncEpisodicMemory(path, embedder=new()) as mem:
        assert _export(mem) == before
    with pytest.raises(EmbedderMismatchError):
        EpisodicMemory(path, embedder=old())
    # Only the serving collection is left on disk.
    assert sorted(p.name for p in path.iterdir() if p.is_dir()) == [
        next(p.name for p in path.iterdir() if p.name.startswith("episodes_reindex_"))
    ]


async def test_reindex_on_qdrant_client_memory_mode() -> None:
    mem = EpisodicMemory(location=":memory:", embedder=old())
    await mem.memorize_many(_episodes(50))
    report = await mem.reindex(new())
    assert (report.episodes, report.embedded) == (50, 50)
    assert mem.embedder.model_id == "test/new"
    res = await mem.recall(user_id="u", agent_id="a", query="order 7")
    assert {"i": 7} in [h["metadata"] for h in res["previous_conversations"]]
    # Twice: the second switch moves the alias the first one made.
    again = await mem.reindex(HashEmbedder(dimension=16, model_id="test/third"))
    assert again.episodes == 50 and await mem.count(user_id="u", agent_id="a") == 50
    mem.close()


def test_writes_and_forgets_during_a_reindex_are_carried_over(tmp_path: Path) -> None:
    with SyncEpisodicMemory(tmp_path / "s", embedder=old()) as mem:
        ids = mem.memorize_many(_episodes(200))
        done: list[int] = []

        def meanwhile(n: int, total: int) -> None:
            if n == total:  # all copied, before the switch: one new episode, one forgotten
                mem.store.memorize_many(_episodes(1, "late"))
                mem.store.forget(user_id="u", agent_id="a", point_id=ids[-1])
            done.append(n)

        report = mem.reindex(new(), batch_size=50, on_progress=meanwhile)
        # The forget deleted the staged copy itself, so the re-index had none to drop.
        assert report.episodes == 200 and report.removed == 0
        assert mem.count(user_id="u", agent_id="a") == 200
        found = mem.recall(user_id="u", agent_id="a", query="late")["previous_conversations"]
        assert found[0]["short_summary_text"] == "late 0 about order 0"
        assert ids[-1] not in {r["point_id"] for r in _export(mem)}


_REINDEXER = textwrap.dedent(
    """
    import sys, time
    from episodex import SyncEpisodicMemory
    from episodex.testing import HashEmbedder

    def progress(done, total):
        print("progress", done, total, flush=True)
        time.sleep(0.05)  # slow enough for the parent to kill it midway

    with SyncEpisodicMemory(sys.argv[1], embedder=HashEmbedder(dimension=48, model_id="test/new"),
                            for_reindex=True) as mem:
        report = mem.reindex(batch_size=50, on_progress=progress)
        print("done", report.embedded, report.resumed, flush=True)
    """
)


@pytest.mark.timeout(600)
def test_a_reindex_killed_midway_loses_nothing_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with SyncEpisodicMemory(path, embedder=old()) as mem:
        mem.memorize_many(_episodes(1500))
        before = _export(mem)
    killed_at = 0
    with subprocess.Popen(
        [sys.executable, "-c", _REINDEXER, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None
        for line in child.stdout:
            words = line.split()
            if words[0] == "progress" and int(words[1]) >= 500:
                os.kill(child.pid, signal.SIGKILL)  # midway: 1,000 episodes still to go
                killed_at = int(words[1])
                break
        child.wait(timeout=120)
    assert child.returncode == -signal.SIGKILL and 500 <= killed_at < 1500
    # The old collection is still the store, whole, with its own embedder.
    with SyncEpisodicMemory(path, embedder=old()) as mem:
        assert _export(mem) == before
        hits = mem.recall(user_id="u", agent_id="a", query="order 12")["previous_conversations"]
        assert {"i": 12} in [h["metadata"] for h in hits]
    # Run again: it finishes, embedding only what the killed run had not.
    with SyncEpisodicMemory(path, embedder=new(), for_reindex=True) as mem:
        report = mem.reindex(batch_size=50)
        assert report.resumed >= killed_at - 50 and report.resumed + report.embedded == 1500
        assert report.episodes == 1500
        assert _export(mem) == before


def test_the_cli_reindexes_with_a_progress_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "store"
    with SyncEpisodicMemory(path, embedder=old()) as mem:
        mem.memorize_many(_episodes(20))
    # Opened with the default embedder, the old store says to re-index (exit 2).
    code = main(["--path", str(path), "recall", "--user", "u", "--agent", "a", "order 3"])
    err = capsys.readouterr().err
    assert code == 2 and "episodex --path" in err and "reindex" in err
    code = main(["--path", str(path), "reindex", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["episodes"] == report["embedded"] == 20
    assert report["previous_embedder"] == "test/old" and report["embedder"] != "test/old"
    code = main(["--path", str(path), "--json", "recall", "--user", "u", "--agent", "a", "order 3"])
    out, _ = capsys.readouterr()
    assert code == 0 and json.loads(out)["previous_conversations"]


def test_ctrl_c_during_a_cli_reindex_says_how_to_finish_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Interrupted, `episodex reindex` exited 130 with only a log line saying the re-index
    # "was cancelled by its caller, then failed: StoreClosedError", as if something broke.
    path = tmp_path / "store"
    with SyncEpisodicMemory(path, embedder=old()) as mem:
        mem.memorize_many(_episodes(300))
        before = _export(mem)
    reindex = EpisodicMemory.reindex

    async def interrupted(self: EpisodicMemory, **kwargs: Any) -> Any:
        def ctrl_c(done: int, total: int) -> None:
            if done:
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C once the first batch is embedded

        kwargs["on_progress"] = ctrl_c
        return await reindex(self, **kwargs)

    monkeypatch.setattr(EpisodicMemory, "reindex", interrupted)
    code = main(["--path", str(path), "reindex", "--batch-size", "50"])
    err = capsys.readouterr().err
    assert code == 130
    assert "re-index stopped with nothing lost" in err and "`episodex reindex` again" in err
    monkeypatch.undo()
    # Nothing lost, and the next run finishes it.
    assert main(["--path", str(path), "reindex", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["episodes"] == 300
    with SyncEpisodicMemory(path) as mem:
        assert _export(mem) == before
