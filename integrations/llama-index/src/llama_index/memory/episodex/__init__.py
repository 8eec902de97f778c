"""LlamaIndex memory blocks and retriever backed by episodex episodic memory.

```python
from episodex import EpisodicMemory
from llama_index.core.memory import Memory
from llama_index.memory.episodex import EpisodicMemoryBlock, offline_tokenizer

block = EpisodicMemoryBlock(memory=EpisodicMemory(path="./memory"), user_id="u1", agent_id="bot")
memory = Memory.from_defaults(memory_blocks=[block], tokenizer_fn=offline_tokenizer())
```
"""

from llama_index.memory.episodex._episodes_block import SUMMARY_PROMPT, EpisodicMemoryBlock
from llama_index.memory.episodex._lessons_block import LessonsMemoryBlock, LessonSource
from llama_index.memory.episodex._llm import from_llama_index, offline_tokenizer
from llama_index.memory.episodex._retriever import EpisodicRetriever
from llama_index.memory.episodex._tool import create_memory_search_tool

__all__ = [
    "SUMMARY_PROMPT",
    "EpisodicMemoryBlock",
    "EpisodicRetriever",
    "LessonSource",
    "LessonsMemoryBlock",
    "create_memory_search_tool",
    "from_llama_index",
    "offline_tokenizer",
]
