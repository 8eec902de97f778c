"""Dense encoders: the bundled offline model, fastembed models, an OpenAI-compatible API."""
