"""The sparse vector type, shared by the engines (which store it) and the encoders (which make it).

It lives below both layers so that an encoder never imports an engine module.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SparseVec"]


@dataclass(frozen=True, slots=True)
class SparseVec:
    """A sparse vector: parallel lists of dimension indices and weights."""

    indices: list[int]
    values: list[float]
