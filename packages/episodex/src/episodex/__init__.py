"""episodex: episodic memory for LLM agents, on Qdrant, offline by default."""

from episodex._conversation import ConversationEpisode
from episodex._embedders import (
    DEFAULT_MODEL_ID,
    BundledMiniLMEmbedder,
    Embedder,
    FastEmbedEmbedder,
    OpenAICompatibleEmbedder,
    VectorCacheEmbedder,
    default_embedder,
)
from episodex._engine import Engine, open_engine
from episodex._episodic import EpisodeStore, ImportReport
from episodex._errors import (
    ConfigurationError,
    EmbedderMismatchError,
    EmbeddingError,
    EngineError,
    EngineUnavailableError,
    EpisodeNotFoundError,
    EpisodexError,
    ImportFileError,
    NotFoundError,
    StoreLockedError,
    UnknownTagError,
    ValidationError,
)
from episodex._format import format_recall
from episodex._memory import EpisodicMemory, SyncEpisodicMemory
from episodex._sparse import Bm25Encoder
from episodex._tokens import DEFAULT_ENCODING, token_counter

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ENCODING",
    "DEFAULT_MODEL_ID",
    "Bm25Encoder",
    "BundledMiniLMEmbedder",
    "ConfigurationError",
    "ConversationEpisode",
    "Embedder",
    "EmbedderMismatchError",
    "EmbeddingError",
    "Engine",
    "EngineError",
    "EngineUnavailableError",
    "EpisodeNotFoundError",
    "EpisodeStore",
    "EpisodexError",
    "EpisodicMemory",
    "FastEmbedEmbedder",
    "ImportFileError",
    "ImportReport",
    "NotFoundError",
    "OpenAICompatibleEmbedder",
    "StoreLockedError",
    "SyncEpisodicMemory",
    "UnknownTagError",
    "ValidationError",
    "VectorCacheEmbedder",
    "__version__",
    "default_embedder",
    "format_recall",
    "open_engine",
    "token_counter",
]
