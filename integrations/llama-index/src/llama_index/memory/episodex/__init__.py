"""llama-index-memory-episodex."""
