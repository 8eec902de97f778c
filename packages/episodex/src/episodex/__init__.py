"""episodex: episodic memory for LLM agents, on Qdrant, offline by default."""

from episodex._common.errors import (
    ConfigurationError,
    EmbedderMismatchError,
    EmbeddingError,
    EngineError,
    EngineUnavailableError,
    EpisodeNotFoundError,
    EpisodexError,
    GradingError,
    ImportFileError,
    NotFoundError,
    NotSupportedError,
    StorageFullError,
    StoreClosedError,
    StoreFileError,
    StoreLockedError,
    UnknownTagError,
    ValidationError,
)
from episodex._common.llm import AnyLLM, LLMCallable
from episodex._common.llm import ask as ask_llm
from episodex._common.scope import MemoryScope, resolve_scope
from episodex._common.sync import run_sync
from episodex._common.tokens import DEFAULT_ENCODING, token_counter
from episodex._common.validation import require_id
from episodex._embedders.base import Embedder
from episodex._embedders.bundled import DEFAULT_MODEL_ID, BundledMiniLMEmbedder, default_embedder
from episodex._embedders.cache import VectorCacheEmbedder
from episodex._embedders.fastembed import FastEmbedEmbedder
from episodex._embedders.openai import OpenAICompatibleEmbedder
from episodex._embedders.splade import SpladeEncoder
from episodex._engines.base import Engine
from episodex._engines.factory import EngineOptions, open_engine
from episodex._engines.sparse import Bm25Encoder
from episodex._episodes.block import format_recall
from episodex._episodes.memory import EpisodicMemory, SyncEpisodicMemory
from episodex._episodes.model import ConversationEpisode
from episodex._episodes.options import RecallOptions, validate_recall_options
from episodex._episodes.periods import named_period
from episodex._episodes.recorder import EpisodeRecorder, RecorderStats
from episodex._episodes.reindex import ReindexReport
from episodex._episodes.spans import SpanEpisode, message_line, span_episodes
from episodex._episodes.store import EpisodeStore
from episodex._episodes.transfer import ImportReport
from episodex._items.model import ItemPut, ItemRef, StoredItem
from episodex._items.store import ItemStore
from episodex._lessons.block import format_lessons
from episodex._lessons.graders import Grader, LLMGrader, ProgrammaticGrader
from episodex._lessons.memory import Attempt, StepLessonMemory, SyncStepLessonMemory
from episodex._lessons.model import EnvState, GradingResult, RetrievedLesson, StepGrade, StepMemory
from episodex._lessons.ranking import LessonOptions
from episodex._lessons.transfer import export_memories, import_memories
from episodex._tasks.block import render_episodes
from episodex._tasks.jsonl import JSONLTaskStore
from episodex._tasks.model import DEFAULT_FIELDS, EPISODE_FIELDS, Episode, Task, TaskResult
from episodex._tasks.qdrant import QdrantTaskStore
from episodex._tasks.store import (
    BaseMemoryStore,
    SearchMode,
    TaskSearchOptions,
    TaskStore,
    TornLine,
)
from episodex._tasks.strategies import (
    BaseMemory,
    HybridMemory,
    RecencyMemory,
    ReflectiveMemory,
    SimilarityMemory,
    TaskMemory,
    render_memories,
)
from episodex._working.memory import MemKey, MemoryEntry, WorkingMemory

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ENCODING",
    "DEFAULT_FIELDS",
    "DEFAULT_MODEL_ID",
    "EPISODE_FIELDS",
    "AnyLLM",
    "Attempt",
    "BaseMemory",
    "BaseMemoryStore",
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
    "LLMGrader",
    "LessonOptions",
    "MemKey",
    "MemoryEntry",
    "MemoryScope",
    "NotFoundError",
    "NotSupportedError",
    "OpenAICompatibleEmbedder",
    "ProgrammaticGrader",
    "QdrantTaskStore",
    "RecallOptions",
    "RecencyMemory",
    "RecorderStats",
    "ReflectiveMemory",
    "ReindexReport",
    "RetrievedLesson",
    "SearchMode",
    "SimilarityMemory",
    "SpanEpisode",
    "SpladeEncoder",
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
    "TaskMemory",
    "TaskResult",
    "TaskSearchOptions",
    "TaskStore",
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
