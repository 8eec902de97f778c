"""The peers we compare recall latency with, wired to OUR embedder and BM25 so nothing downloads.

- LlamaIndex `VectorMemoryBlock` over LlamaIndex's default in-memory vector store
  (`SimpleVectorStore`). `VectorMemoryBlock` refuses a store that does not keep text, and
  `SimpleVectorStore` keeps only vectors and ids, so `TextSimpleVectorStore` adds the smallest
  thing that makes it usable: a dict of the added nodes, returned with the query result. The
  search itself is `SimpleVectorStore.query` unchanged.
- `langchain-qdrant` `QdrantVectorStore` in hybrid mode (dense + sparse prefetch, RRF) on
  qdrant-client's `:memory:` local mode, with our BM25 as its `SparseEmbeddings` (IDF modifier
  on the sparse vector, as in our collection).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from episodex._embedders.base import Embedder
from episodex._engines.sparse import Bm25Encoder
from langchain_core.embeddings import Embeddings
from langchain_qdrant import QdrantVectorStore, RetrievalMode, SparseEmbeddings, SparseVector
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import VectorMemoryBlock
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult
from qdrant_client import models

# -- LangChain ----------------------------------------------------------------------------


class LangChainEmbeddings(Embeddings):
    """Our embedder as LangChain `Embeddings`."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._inner.embed_documents(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._inner.embed_query(text).tolist()


class LangChainBm25(SparseEmbeddings):
    """Our BM25 encoder as langchain-qdrant `SparseEmbeddings`."""

    def __init__(self, bm25: Bm25Encoder) -> None:
        self._bm25 = bm25

    def embed_documents(self, texts: list[str]) -> list[SparseVector]:
        out: list[SparseVector] = []
        for t in texts:
            v = self._bm25.document(t)
            out.append(SparseVector(indices=v.indices, values=v.values))
        return out

    def embed_query(self, text: str) -> SparseVector:
        v = self._bm25.query(text)
        return SparseVector(indices=v.indices, values=v.values)


class LangChainPeer:
    """`QdrantVectorStore` (hybrid) on qdrant-client local mode; one document per episode."""

    name = "langchain-qdrant hybrid"

    def __init__(self, embedder: Embedder, bm25: Bm25Encoder) -> None:
        self.store = QdrantVectorStore.construct_instance(
            embedding=LangChainEmbeddings(embedder),
            retrieval_mode=RetrievalMode.HYBRID,
            sparse_embedding=LangChainBm25(bm25),
            client_options={"location": ":memory:"},
            collection_name="peer",
            sparse_vector_params={"modifier": models.Modifier.IDF},
        )

    def add(self, texts: Sequence[str], users: Sequence[str]) -> None:
        self.store.add_texts(
            list(texts),
            metadatas=[{"user_id": u} for u in users],
            ids=[str(uuid.uuid4()) for _ in texts],
            batch_size=256,
        )

    def recall(self, query: str, user: str, k: int = 10) -> list[str]:
        flt = models.Filter(
            must=[
                models.FieldCondition(key="metadata.user_id", match=models.MatchValue(value=user))
            ]
        )
        return [d.page_content for d in self.store.similarity_search(query, k=k, filter=flt)]

    def close(self) -> None:
        self.store.client.close()


# -- LlamaIndex ---------------------------------------------------------------------------


class LlamaEmbedding(BaseEmbedding):
    """Our embedder as a LlamaIndex `BaseEmbedding`."""

    _inner: Any = PrivateAttr()

    def __init__(self, inner: Embedder, **kwargs: Any) -> None:
        super().__init__(model_name=inner.model_id, **kwargs)
        self._inner = inner

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._inner.embed_query(query).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._inner.embed_documents([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._inner.embed_documents(texts).tolist()


class TextSimpleVectorStore(SimpleVectorStore):
    """LlamaIndex's default `SimpleVectorStore`, also returning the nodes it was given."""

    stores_text: bool = True
    _nodes: dict[str, Any] = PrivateAttr(default_factory=dict)
    _last_nodes: list[Any] = PrivateAttr(default_factory=list)

    def add(self, nodes: Sequence[Any], **add_kwargs: Any) -> list[str]:
        ids = super().add(nodes, **add_kwargs)
        for node in nodes:
            self._nodes[node.node_id] = node
        return ids

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        result = super().query(query, **kwargs)
        result.nodes = [self._nodes[i] for i in result.ids or []]
        self._last_nodes = result.nodes  # what the block was given: the issue-17 harness scores it
        return result

    @property
    def last_nodes(self) -> list[Any]:
        """The nodes of the last query."""
        return self._last_nodes


class LlamaIndexPeer:
    """`VectorMemoryBlock` over the default in-memory store; one node per episode, per user."""

    name = "LlamaIndex VectorMemoryBlock"

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self.block = VectorMemoryBlock(
            vector_store=TextSimpleVectorStore(),
            embed_model=LlamaEmbedding(embedder),
            similarity_top_k=10,
        )

    def add(self, texts: Sequence[str], users: Sequence[str]) -> None:
        # Nodes shaped as VectorMemoryBlock._aput shapes them (one user message each); their
        # vectors are those of the episode text, so the table of cached vectors serves them.
        vectors = self._embedder.embed_documents(list(texts))
        nodes = []
        for text, user, vec in zip(texts, users, vectors, strict=True):
            node = TextNode(
                text=f"<message role='user'>{text}</message>", metadata={"session_id": user}
            )
            node.embedding = vec.tolist()
            nodes.append(node)
        self.block.vector_store.add(nodes)

    async def recall(self, query: str, user: str) -> str:
        # VectorMemoryBlock keeps the first session filter it ever saw in query_kwargs (it only
        # appends a session filter when none is there), so each call starts from a clean slate.
        self.block.query_kwargs = {}
        return await self.block.aget([ChatMessage(role="user", content=query)], session_id=user)

    def close(self) -> None:
        pass


# -- the shared vectors -------------------------------------------------------------------


class SharedVectors:
    """One embedder for episodex and every peer: cached document vectors, real or known queries.

    Documents are served from the table of cached vectors (`DiskVectorCache`), so a load times
    the store, not the model. Queries are embedded for real (end to end) or, with
    `known_queries` set, looked up in a table filled before the clock starts (engine + library
    work only). A text found only among the documents (mem0 embeds what it adds with
    `embed_query`) gets its cached document vector.
    """

    def __init__(
        self,
        real: Embedder,
        docs: dict[str, np.ndarray],
        queries: dict[str, np.ndarray] | None = None,
    ) -> None:
        self._real = real
        self.docs = docs
        self.queries: dict[str, np.ndarray] = {} if queries is None else queries
        self.known_queries = False

    @property
    def model_id(self) -> str:
        return self._real.model_id

    @property
    def dimension(self) -> int:
        return self._real.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self.docs]
        if missing:
            for t, v in zip(missing, self._real.embed_documents(missing), strict=True):
                self.docs[t] = v
        return np.stack([self.docs[t] for t in texts]) if texts else np.zeros((0, self.dimension))

    def embed_query(self, text: str) -> np.ndarray:
        if self.known_queries:
            vec = self.queries.get(text)
            if vec is not None:
                return vec
        vec = self.docs.get(text)
        if vec is not None:
            return vec
        return self._real.embed_query(text)


# -- the peers of issue 17 ----------------------------------------------------------------
#
# Every peer: `add(ids, texts, users)` (one document per episode: its long summary), `recall(
# query, user)` -> our ids of the 10 best documents for that user (may be a coroutine),
# `persistent` (whether `reopen()` means anything) and `close()`.


class Peer:
    name = "peer"
    persistent = False

    def add(self, ids: Sequence[str], texts: Sequence[str], users: Sequence[str]) -> None:
        raise NotImplementedError

    def recall(self, query: str, user: str) -> Any:
        raise NotImplementedError

    def finish(self) -> None:
        """After the bulk load: whatever the docs say to do before querying (indexes)."""

    def reopen(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class ChromaPeer(Peer):
    """`langchain-chroma` `Chroma` on a persistent client (`persist_directory`), as documented."""

    name = "langchain-chroma Chroma"
    persistent = True

    def __init__(self, embedder: Embedder, folder: Path) -> None:
        self._emb = LangChainEmbeddings(embedder)
        self._folder = folder
        self.reopen()

    def reopen(self) -> None:
        from langchain_chroma import Chroma

        self.store = Chroma(
            collection_name="peer",
            embedding_function=self._emb,
            persist_directory=str(self._folder),
        )

    def add(self, ids: Sequence[str], texts: Sequence[str], users: Sequence[str]) -> None:
        step = 1000  # below Chroma's largest batch
        for s in range(0, len(ids), step):
            self.store.add_texts(
                list(texts[s : s + step]),
                metadatas=[{"user_id": u} for u in users[s : s + step]],
                ids=list(ids[s : s + step]),
            )

    def recall(self, query: str, user: str) -> list[str]:
        docs = self.store.similarity_search(query, k=10, filter={"user_id": user})
        return [str(d.id) for d in docs]


class LanceDBPeer(Peer):
    """LanceDB table (vector + text + user), full-text index, hybrid query, default reranker."""

    name = "LanceDB hybrid"
    persistent = True

    def __init__(self, embedder: Embedder, folder: Path) -> None:
        self._emb = embedder
        self._folder = folder
        self.table: Any = None
        self.reopen()

    def reopen(self) -> None:
        import lancedb

        self.db = lancedb.connect(str(self._folder))
        if "peer" in self.db.table_names():
            self.table = self.db.open_table("peer")

    def add(self, ids: Sequence[str], texts: Sequence[str], users: Sequence[str]) -> None:
        vectors = self._emb.embed_documents(list(texts))
        rows = [
            {"id": i, "text": t, "user_id": u, "vector": v.tolist()}
            for i, t, u, v in zip(ids, texts, users, vectors, strict=True)
        ]
        if self.table is None:
            self.table = self.db.create_table("peer", data=rows)
        else:
            self.table.add(rows)

    def finish(self) -> None:
        # Hybrid search needs a full-text index on the text column; built once after the load.
        self.table.create_fts_index("text", replace=True)

    def recall(self, query: str, user: str) -> list[str]:
        vec = self._emb.embed_query(query)
        rows = (
            self.table.search(query_type="hybrid")
            .vector(vec.tolist())
            .text(query)
            .where(f"user_id = '{user}'", prefilter=True)
            .limit(10)
            .select(["id"])
            .to_list()
        )
        return [r["id"] for r in rows]


class LangGraphPeer(Peer):
    """LangGraph `InMemoryStore` with an index (`dims`, `embed`, `fields`), one namespace a user."""

    name = "LangGraph InMemoryStore"

    def __init__(self, embedder: Embedder, folder: Path) -> None:
        from langgraph.store.memory import InMemoryStore

        self.store = InMemoryStore(
            index={
                "dims": embedder.dimension,
                "embed": LangChainEmbeddings(embedder),
                "fields": ["text"],
            }
        )

    def add(self, ids: Sequence[str], texts: Sequence[str], users: Sequence[str]) -> None:
        # `put` one item at a time, as LangGraph documents: `batch` is internal, and with two
        # equal texts in one batch it raises "Number of embeddings (N) does not match number
        # of indices (M)" (langchain-ai/langgraph#8822, open; it embeds each distinct text once
        # and then compares against every item).
        for i, t, u in zip(ids, texts, users, strict=True):
            self.store.put((u, "memories"), i, {"text": t})

    def recall(self, query: str, user: str) -> list[str]:
        return [it.key for it in self.store.search((user, "memories"), query=query, limit=10)]


class Mem0Peer(Peer):
    """mem0 `Memory` with `infer=False` (no LLM on add) on its default local vector store.

    That default is Qdrant through qdrant-client's local mode (a folder, `on_disk` off: rebuilt
    on every open, so not persistent). The embedder is ours through mem0's `langchain` provider;
    the LLM, never called with `infer=False`, is LangChain's fake chat model so nothing reaches
    OpenAI. The history database is a file in the same folder.
    """

    name = "mem0 Memory (infer=False)"

    def __init__(self, embedder: Embedder, folder: Path) -> None:
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from mem0 import Memory

        folder.mkdir(parents=True, exist_ok=True)
        self.memory = Memory.from_config(
            {
                "embedder": {
                    "provider": "langchain",
                    "config": {"model": LangChainEmbeddings(embedder)},
                },
                "llm": {
                    "provider": "langchain",
                    "config": {"model": FakeListChatModel(responses=["{}"])},
                },
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "path": str(folder / "qdrant"),
                        "embedding_model_dims": embedder.dimension,
                    },
                },
                "history_db_path": str(folder / "history.db"),
            }
        )
        self._ours: dict[str, str] = {}

    def add(self, ids: Sequence[str], texts: Sequence[str], users: Sequence[str]) -> None:
        # One call per user with all of that user's messages; with infer=False each message
        # becomes one memory, returned in order.
        by_user: dict[str, list[tuple[str, str]]] = {}
        for i, t, u in zip(ids, texts, users, strict=True):
            by_user.setdefault(u, []).append((i, t))
        for user, items in by_user.items():
            out = self.memory.add(
                [{"role": "user", "content": t} for _, t in items], user_id=user, infer=False
            )
            for (ours, _), row in zip(items, out["results"], strict=True):
                self._ours[row["id"]] = ours

    def recall(self, query: str, user: str) -> list[str]:
        res = self.memory.search(query, top_k=10, filters={"user_id": user})
        return [self._ours[r["id"]] for r in res["results"]]

    def close(self) -> None:
        self.memory.vector_store.client.close()


class QdrantHybridPeer(Peer):
    """`LangChainPeer` (langchain-qdrant hybrid on local mode) with our ids in the metadata."""

    name = LangChainPeer.name

    def __init__(self, embedder: Embedder, bm25: Bm25Encoder) -> None:
        self.inner = LangChainPeer(embedder, bm25)

    def add(self, ids: Sequence[str], texts: Sequence[str], users: Sequence[str]) -> None:
        self.inner.store.add_texts(
            list(texts),
            metadatas=[{"user_id": u, "ours": i} for i, u in zip(ids, users, strict=True)],
            ids=[str(uuid.uuid4()) for _ in texts],
            batch_size=256,
        )

    def recall(self, query: str, user: str) -> list[str]:
        flt = models.Filter(
            must=[
                models.FieldCondition(key="metadata.user_id", match=models.MatchValue(value=user))
            ]
        )
        docs = self.inner.store.similarity_search(query, k=10, filter=flt)
        return [d.metadata["ours"] for d in docs]

    def close(self) -> None:
        self.inner.close()


class LlamaBlockPeer(Peer):
    """`LlamaIndexPeer` (`VectorMemoryBlock`), answering with the ids of the nodes it rendered."""

    name = LlamaIndexPeer.name

    def __init__(self, embedder: Embedder) -> None:
        self.inner = LlamaIndexPeer(embedder)
        self._embedder = embedder

    def add(self, ids: Sequence[str], texts: Sequence[str], users: Sequence[str]) -> None:
        vectors = self._embedder.embed_documents(list(texts))
        nodes = []
        for i, text, user, vec in zip(ids, texts, users, vectors, strict=True):
            node = TextNode(
                text=f"<message role='user'>{text}</message>",
                metadata={"session_id": user, "ours": i},
            )
            node.embedding = vec.tolist()
            nodes.append(node)
        self.inner.block.vector_store.add(nodes)

    async def recall(self, query: str, user: str) -> list[str]:
        await self.inner.recall(query, user)
        return [n.metadata["ours"] for n in self.inner.block.vector_store.last_nodes]
