"""Working memory: one run's tagged scratch entries."""
