"""Namespaced JSON items: long-term key-value memory with hybrid search (LangGraph's store)."""
