"""Pieces of the `episodex` command line (the entry point is `episodex.cli`)."""
