"""langchain-episodex: episodex episodic memory for LangChain."""

from langchain_episodex._classic import EpisodicMemory
from langchain_episodex._context import EpisodicContext
from langchain_episodex._llm import from_langchain
from langchain_episodex._retrievers import EpisodicRetriever
from langchain_episodex._task_retriever import TaskEpisodeRetriever

__all__ = ["EpisodicContext", "EpisodicMemory", "EpisodicRetriever", "TaskEpisodeRetriever", "from_langchain"]
