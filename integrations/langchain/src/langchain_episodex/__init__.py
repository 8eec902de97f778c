"""langchain-episodex."""
