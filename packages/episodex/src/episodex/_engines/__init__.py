"""Vector engines: the engine protocol, the query plan, collection helpers, Qdrant Edge and qdrant-client."""
