"""Conversation episodes: model, store, prompt block and the `EpisodicMemory` facade."""
