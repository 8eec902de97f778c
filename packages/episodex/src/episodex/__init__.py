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
    GradingError,
    ImportFileError,
    NotFoundError,
    StoreFileError,
    StoreLockedError,
    UnknownTagError,
    ValidationError,
)
from episodex._format import format_recall
from episodex._graders import Grader, LLMGrader, ProgrammaticGrader
from episodex._lessons import LessonEpisode, StepLessonMemory, SyncStepLessonMemory
from episodex._lessons_export import export_memories, format_lessons, import_memories
from episodex._lessons_model import EnvState, GradingResult, RetrievedLesson, StepGrade, StepMemory
from episodex._llm import LLMCallable
from episodex._memory import EpisodicMemory, SyncEpisodicMemory
from episodex._sparse import Bm25Encoder
from episodex._strategies import (
    BaseMemory,
    HybridMemory,
    RecencyMemory,
    ReflectiveMemory,
    SimilarityMemory,
    render_episodes,
    render_memories,
)
from episodex._task_store_jsonl import JSONLMemoryStore
from episodex._task_store_qdrant import QdrantMemoryStore
from episodex._task_stores import BaseMemoryStore, TornLine
from episodex._tasks import Episode, Task, TaskResult
from episodex._tokens import DEFAULT_ENCODING, token_counter
from episodex._working_memory import MemKey, MemoryEntry, WorkingMemory

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ENCODING",
    "DEFAULT_MODEL_ID",
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
    "EngineUnavailableError",
    "EnvState",
    "Episode",
    "EpisodeNotFoundError",
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
    "JSONLMemoryStore",
    "LLMCallable",
    "LLMGrader",
    "LessonEpisode",
    "MemKey",
    "MemoryEntry",
    "NotFoundError",
    "OpenAICompatibleEmbedder",
    "ProgrammaticGrader",
    "QdrantMemoryStore",
    "RecencyMemory",
    "ReflectiveMemory",
    "RetrievedLesson",
    "SimilarityMemory",
    "StepGrade",
    "StepLessonMemory",
    "StepMemory",
    "StoreFileError",
    "StoreLockedError",
    "SyncEpisodicMemory",
    "SyncStepLessonMemory",
    "Task",
    "TaskResult",
    "TornLine",
    "UnknownTagError",
    "ValidationError",
    "VectorCacheEmbedder",
    "WorkingMemory",
    "__version__",
    "default_embedder",
    "export_memories",
    "format_lessons",
    "format_recall",
    "import_memories",
    "open_engine",
    "render_episodes",
    "render_memories",
    "token_counter",
]
