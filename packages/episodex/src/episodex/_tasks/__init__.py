"""Task episodes: model, stores (JSONL, Qdrant) and memory strategies."""
