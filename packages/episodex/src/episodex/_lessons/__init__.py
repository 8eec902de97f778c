"""Step lessons: model, ranking, store, graders, transfer and the prompt block."""
