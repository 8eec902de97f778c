"""Shared basics every layer may import: errors, validation, tokens, the sync bridge."""
