"""`EpisodicMemory`: conversation-episode memory, async, and its synchronous twin."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, Unpack

from episodex._common.budget import require_budget
from episodex._common.errors import ConfigurationError
from episodex._common.paths import default_store_path
from episodex._common.sync import SyncTwin, blocking, forward, in_thread, threaded
from episodex._common.tokens import DEFAULT_ENCODING, TokenCounter, token_counter
from episodex._embedders.base import Embedder
from episodex._embedders.resolve import resolve_embedder
from episodex._embedders.splade import SpladeEncoder, default_splade
from episodex._engines.base import Engine
from episodex._engines.factory import (
    EngineOptions,
    check_engine_options,
    open_engine,
    store_path,
)
from episodex._engines.sparse import Bm25Encoder, require_bm25
from episodex._episodes.block import format_recall
from episodex._episodes.model import ConversationEpisode
from episodex._episodes.options import RecallOptions
from episodex._episodes.reindex import ReindexReport
from episodex._episodes.reindex import reindex as reindex_store
from episodex._episodes.store import EpisodeStore

__all__ = ["EpisodicMemory", "SyncEpisodicMemory", "resolve_embedder"]

T = TypeVar("T")


class EpisodicMemory:
    """Episodic memory of conversations: hybrid recall over dense, BM25 and SPLADE streams.

    Each episode is stored with five vectors (`short` and `long` dense; `bm25` and `splade`
    sparse over both summaries, `splade_short` over the short one). Recall runs the five
    searches, fuses them with weighted Reciprocal Rank Fusion in the engine and returns matches
    from the current conversation and from previous ones separately. Every
    operation is confined to one `user_id` and one `agent_id`.

    Setup:
        `pip install episodex` brings the embedded engine and the embedding model; nothing is
        downloaded.

    Instantiate:
        ```python
        from episodex import EpisodicMemory

        mem = EpisodicMemory(path="./memory")  # embedded Qdrant Edge, in this folder
        ```

        With no place at all, `EpisodicMemory()` opens the default store: `$EPISODEX_PATH`,
        else `episodex/memory` in the user's data folder (`$XDG_DATA_HOME` or
        `~/.local/share` on Linux, `~/Library/Application Support` on macOS, `%LOCALAPPDATA%`
        on Windows). Opening a folder that is already open in this process shares it; another
        process gets `StoreLockedError` (use a Qdrant server for several processes).

        The same class runs on a Qdrant server or cluster, or in qdrant-client's in-RAM mode;
        only the constructor changes:

        ```python
        # docs: no-run (needs a running Qdrant server)
        mem = EpisodicMemory(url="http://qdrant:6333", qdrant_api_key="...",
                             collection_prefix="app_")
        mem = EpisodicMemory(location=":memory:")
        ```

    Use (async: inside an `async def`, or at the top level of a notebook):
        ```python
        pid = await mem.memorize(short_summary="Refund for order 1234",
                                 long_summary="User asked for a refund; agent issued it.",
                                 user_id="u1", agent_id="support", conversation_id="c1")
        res = await mem.recall(user_id="u1", agent_id="support", conversation_id="c2",
                               query="did I get my refund?")
        print(res["previous_conversations"][0]["short_summary_text"])  # -> Refund for order 1234
        block = await mem.recall_block(user_id="u1", agent_id="support", query="refund",
                                       max_tokens=500)  # for the system prompt
        print(block.splitlines()[0])  # -> <recalled_episodes>
        await mem.aclose()  # or: async with EpisodicMemory(...) as mem:
        ```

    Outside an event loop, use `SyncEpisodicMemory`, which has the same methods.

    Args:
        path: Folder of the embedded Qdrant Edge store (created if missing); with neither
            `url` nor `location`, None means the default store above.
        embedder: None for the bundled all-MiniLM-L6-v2 (offline), a fastembed model name, or
            any `Embedder`.
        engine: An engine you opened yourself, instead of path/url/location.
        bm25: The BM25 encoder (BM25 parameters); None for those the store was made with
            (the defaults for a new store). Others raise `EmbedderMismatchError`: a store keeps
            its settings until re-indexed (`for_reindex=True` and `reindex()`).
        splade: True for the bundled SPLADE-tiny learned sparse streams, a `SpladeEncoder`, or
            False for a store without them (the stream set is recorded in the store: a store
            made with another set must be re-indexed).
        for_reindex: Open a store built with another embedder or stream set instead of raising
            `EmbedderMismatchError`, to `reindex()` it with `embedder` and `splade`; until then
            memorizing, importing and recalling raise that error, while reading, exporting
            and forgetting work.
        **options: `EngineOptions`: `url` of a Qdrant server or cluster, `location=":memory:"`
            for qdrant-client's local mode, `qdrant_api_key`, `prefer_grpc`,
            `collection_prefix`, `timeout`, `client_options`. A server option given without
            `url` raises `ConfigurationError`.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        embedder: Embedder | str | None = None,
        engine: Engine | None = None,
        bm25: Bm25Encoder | None = None,
        splade: SpladeEncoder | bool = True,
        for_reindex: bool = False,
        **options: Unpack[EngineOptions],
    ) -> None:
        check_engine_options(options, "EpisodicMemory")
        folder = store_path(path)
        if not isinstance(splade, SpladeEncoder | bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(
                f"splade must be True, False or a SpladeEncoder, got {type(splade).__name__}"
            )
        bm25 = require_bm25(bm25)
        sparse_model = default_splade() if splade is True else splade or None
        self.embedder: Embedder = resolve_embedder(embedder)
        # Given but empty ("", an unset variable read as "") is not left out: it must not open
        # the default store instead of the one meant (open_engine refuses it by name).
        places = (folder, options.get("url"), options.get("location"))
        if engine is None:
            if all(place is None for place in places):
                folder = str(default_store_path())
            engine = open_engine(path=folder, **options)
            self._owns_engine = True
        else:
            if any(place is not None for place in places):
                raise ConfigurationError("give engine= or one of path/url/location, not both")
            self._owns_engine = False
        self.engine: Engine = engine
        try:
            self.store = EpisodeStore(
                engine, self.embedder, bm25=bm25, splade=sparse_model, for_reindex=for_reindex
            )
        except BaseException:
            if self._owns_engine:
                engine.close()
            raise

    # The operations are the store's, run in a worker thread; the store documents them.

    async def memorize(
        self,
        *,
        short_summary: str,
        long_summary: str,
        user_id: str,
        agent_id: str,
        conversation_id: str,
        start_index: int = 0,
        end_index: int | None = None,
        overlap: int = 0,
        flows_activated: Sequence[str] = (),
        tools_invoked: Sequence[str] = (),
        speakers: Sequence[str] = (),
        timestamp_begin: datetime | None = None,
        timestamp_end: datetime | None = None,
        average_user_sentiment: float | None = None,
        user_sentiment_variance: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        point_id: str | None = None,
    ) -> str:
        """Store one episode (both summaries embedded in one batch); returns its point id.

        A cancelled call (a timeout) still completes its write, and logs whether it stored
        the episode and under which point id; give `point_id` so that retrying it replaces
        instead of duplicating. Identical episodes without ids are stored as separate episodes.
        """
        episode = ConversationEpisode.parse(
            {
                "short_summary": short_summary,
                "long_summary": long_summary,
                "user_id": user_id,
                "agent_id": agent_id,
                "conversation_id": conversation_id,
                "start_index": start_index,
                "end_index": end_index,
                "overlap": overlap,
                "flows_activated": list(flows_activated)
                if isinstance(flows_activated, tuple)
                else flows_activated,
                "tools_invoked": list(tools_invoked)
                if isinstance(tools_invoked, tuple)
                else tools_invoked,
                "speakers": list(speakers) if isinstance(speakers, tuple) else speakers,
                "timestamp_begin": timestamp_begin,
                "timestamp_end": timestamp_end,
                "average_user_sentiment": average_user_sentiment,
                "user_sentiment_variance": user_sentiment_variance,
                "metadata": {} if metadata is None else metadata,
                "point_id": point_id,
            }
        )
        ids = await self.memorize_many([episode])
        return ids[0]

    memorize_many = threaded(EpisodeStore.memorize_many, via="store")
    recall = threaded(EpisodeStore.recall, via="store")
    score_ceiling = threaded(EpisodeStore.score_ceiling, via="store")

    async def recall_block(
        self,
        *,
        user_id: str,
        agent_id: str,
        query: str,
        conversation_id: str | None = None,
        max_tokens: int | None = None,
        encoding: str | TokenCounter = DEFAULT_ENCODING,
        **options: Unpack[RecallOptions],
    ) -> str:
        """Recall and render the `<recalled_episodes>` prompt block (`""` when nothing matched).

        The block never shows which streams found an episode, so unless `with_stream_ranks`
        is given the recall skips the id-only searches behind them (the same episodes, in the
        same order, for less time).
        """
        # Checked before the recall, as `format_recall` checks them: a mistake is reported
        # as one, not after the store was searched (or hidden behind an outage meanwhile).
        if require_budget(max_tokens) is not None:
            token_counter(encoding)
        result = await self.recall(
            user_id=user_id,
            agent_id=agent_id,
            query=query,
            conversation_id=conversation_id,
            **{"with_stream_ranks": False, **options},
        )
        return format_recall(result, max_tokens=max_tokens, encoding=encoding)

    count = threaded(EpisodeStore.count, via="store")
    get = threaded(EpisodeStore.get, via="store")
    read_recent = threaded(EpisodeStore.read_recent, via="store")
    forget = threaded(EpisodeStore.forget, via="store")
    export = threaded(EpisodeStore.export, via="store")
    import_ = threaded(EpisodeStore.import_, via="store")
    stats = threaded(EpisodeStore.stats, via="store")

    optimize = threaded(Engine.optimize, via="engine")

    async def reindex(
        self,
        embedder: Embedder | str | None = None,
        *,
        batch_size: int = 256,
        on_progress: Callable[[int, int], object] | None = None,
    ) -> ReindexReport:
        """Re-embed every stored episode with `embedder` (default: this memory's), from its texts.

        Resumable and safe to kill: the episodes are embedded into a staging collection while
        the old one stays the store; one atomic switch makes the new one the store. Run it
        again after an interruption and it embeds only what is missing. Afterwards this memory
        uses `embedder`, also when the caller stopped waiting (a timeout): the re-index then
        runs to its end in its thread, and its outcome is logged. Writes made meanwhile
        through this memory are carried over; other processes cannot write (the store is
        locked), and other memories of this process on the same folder should be closed first.

        Args:
            embedder: The embedder to build the store with: an `Embedder`, a fastembed model
                name, or None for this memory's own (after `for_reindex=True`, the new one).
            batch_size: Episodes embedded and written per batch.
            on_progress: Called with (episodes done, episodes in all) after each batch.

        Returns:
            How many episodes were embedded, resumed and dropped.
        """
        new = self.embedder if embedder is None else resolve_embedder(embedder)

        def run() -> ReindexReport:
            store, report = reindex_store(
                self.store, new, batch_size=batch_size, on_progress=on_progress
            )
            # Here, not after the await: a caller that gives up (a timeout) cannot stop the
            # thread, which goes on to switch the collection, and this memory must follow it.
            self.store, self.embedder = store, new
            return report

        return await in_thread(run)

    async def aclose(self) -> None:
        """Close the store (flushes the embedded engine), as `close` does.

        A write under way is waited for in a worker thread, so the event loop runs meanwhile
        (other tasks do not stall); cancelled, the close still runs to its end.
        """
        await in_thread(self.close)

    def close(self) -> None:
        """Close the store if this memory opened it; idempotent.

        A write under way (one whose caller was cancelled or timed out goes on in its thread)
        is let finish first, so it ends stored or taken back whole, never cut in half.
        """
        if self._owns_engine:
            # Closed under a running import, the engine failed the import's next batch and
            # then its take-back too, leaving the batches before stored.
            with self.store.write_lock:
                self.engine.close()

    async def __aenter__(self) -> EpisodicMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class SyncEpisodicMemory(SyncTwin):
    """The synchronous twin of `EpisodicMemory`: same constructor, same methods, no `await`.

    Give `memory=` to wrap an `EpisodicMemory` you opened (it stays yours to close); otherwise
    the twin opens one from the same arguments as `EpisodicMemory` and closes it on `close`.

    Safe to call from several threads at once. Each call runs the async method on a private
    event loop, so this also works where a loop is already running (a notebook, a web server).

    ```python
    from episodex import SyncEpisodicMemory

    with SyncEpisodicMemory("./memory") as mem:
        mem.memorize(short_summary="Refund for order 1234",
                     long_summary="User asked for a refund; agent issued it.",
                     user_id="u1", agent_id="support", conversation_id="c1")
        res = mem.recall(user_id="u1", agent_id="support", query="refund")
        print(res["previous_conversations"][0]["short_summary_text"])  # -> Refund for order 1234
    ```
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        memory: EpisodicMemory | None = None,
        embedder: Embedder | str | None = None,
        engine: Engine | None = None,
        bm25: Bm25Encoder | None = None,
        splade: SpladeEncoder | bool = True,
        for_reindex: bool = False,
        **options: Unpack[EngineOptions],
    ) -> None:
        self._owns_memory = memory is None
        if memory is None:
            memory = EpisodicMemory(
                path,
                embedder=embedder,
                engine=engine,
                bm25=bm25,
                splade=splade,
                for_reindex=for_reindex,
                **options,
            )
        self.memory = memory
        super().__init__(memory)

    # Every coroutine method of EpisodicMemory, blocking (tests/core/test_sync_twins.py).
    memorize = blocking(EpisodicMemory.memorize)
    memorize_many = blocking(EpisodicMemory.memorize_many)
    recall = blocking(EpisodicMemory.recall)
    recall_block = blocking(EpisodicMemory.recall_block)
    score_ceiling = blocking(EpisodicMemory.score_ceiling)
    count = blocking(EpisodicMemory.count)
    get = blocking(EpisodicMemory.get)
    read_recent = blocking(EpisodicMemory.read_recent)
    forget = blocking(EpisodicMemory.forget)
    export = blocking(EpisodicMemory.export)
    import_ = blocking(EpisodicMemory.import_)
    stats = blocking(EpisodicMemory.stats)
    optimize = blocking(EpisodicMemory.optimize)
    reindex = blocking(EpisodicMemory.reindex)

    store = forward[EpisodeStore]("memory", "The synchronous store under the memory.")
    engine = forward[Engine]("memory", "The vector engine.")
    embedder = forward[Embedder]("memory", "The dense embedder.")

    def close(self) -> None:
        """Stop the private loop, and close the memory if this twin opened it."""
        if self._owns_memory:
            self.memory.close()
        super().close()
