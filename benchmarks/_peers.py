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
from typing import Any

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

    def add(self, nodes: Sequence[Any], **add_kwargs: Any) -> list[str]:
        ids = super().add(nodes, **add_kwargs)
        for node in nodes:
            self._nodes[node.node_id] = node
        return ids

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        result = super().query(query, **kwargs)
        result.nodes = [self._nodes[i] for i in result.ids or []]
        return result


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
