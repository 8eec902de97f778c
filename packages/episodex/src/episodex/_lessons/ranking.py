"""Lesson ranking as pure functions: page overlap (Jaccard), state similarity, dedupe, final pick."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, TypedDict

import numpy as np

from episodex._common.errors import ValidationError
from episodex._common.validation import is_real, require_int, require_weight
from episodex._lessons.model import (
    EnvState,
    RetrievedLesson,
    StepMemory,
    action_parts,
    element_set,
)

__all__ = ["LessonOptions", "check_unit", "jaccard", "rank_lessons"]


class LessonOptions(TypedDict, total=False):
    """Options of lesson retrieval (`retrieve_memories`, `lessons_block`); every key optional.

    Each left out takes the value the `StepLessonMemory` was built with.
    """

    env_threshold: float
    """Minimum Jaccard overlap of page elements between a lesson's page and the current one."""

    top_k: int
    """How many candidates are kept after the page match."""

    env_weight: float
    """Weight of the page match in the re-rank."""

    state_weight: float
    """Weight of the internal-state cosine similarity in the re-rank."""

    final_k: int
    """How many lessons are returned."""


def check_unit(name: str, value: object) -> float:
    """A number in [0, 1], or `ValidationError` naming the argument."""
    if not is_real(value) or not 0.0 <= float(value) <= 1.0:
        raise ValidationError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def jaccard(a: EnvState, b: EnvState) -> float:
    """Overlap of two states' elements; two pages without elements match when their paths do."""
    sa, sb = element_set(a), element_set(b)
    union = sa | sb
    if not union:
        return 1.0 if a.path == b.path else 0.0
    return len(sa & sb) / len(union)


def _dedupe_key(memory: StepMemory) -> tuple[str, str, str]:
    parts = action_parts(memory.action)
    target = memory.action_element_text or parts.target or ""
    return (
        parts.verb.casefold(),
        " ".join(target.split()).casefold(),
        " ".join((parts.value or "").split()).casefold(),
    )


def _unit(vec: np.ndarray) -> np.ndarray | None:
    """`vec` scaled to length 1, or None when it has no direction (all zeros).

    Scaled by its largest number first: a vector of huge numbers (an imported one no model
    made, 1e200 each) overflowed its length to infinity, and its cosine was NaN, which
    ranked it anywhere and showed as "0%" in the block.
    """
    top = float(np.max(np.abs(vec))) if vec.size else 0.0
    if not top > 0 or not np.isfinite(top):
        return None
    scaled = vec / top
    return scaled / float(np.linalg.norm(scaled))


def rank_lessons(
    candidates: Iterable[StepMemory],
    current_env: EnvState,
    state_vector: Sequence[float] | np.ndarray[Any, Any],
    *,
    env_threshold: float = 0.7,
    top_k: int = 10,
    env_weight: float = 0.65,
    state_weight: float = 0.35,
    final_k: int = 2,
) -> list[RetrievedLesson]:
    """Pick the lessons for the current state from graded candidate steps.

    Jaccard overlap of page elements first (dropping those under `env_threshold`, keeping the
    `top_k` best), then a re-rank by `env_weight * env + state_weight * cosine(states)`,
    duplicates (same action, target and value) dropped, and `final_k` returned, with at least
    one AVOID and one REPEAT when both exist and `final_k >= 2`. Best first.
    """
    env_threshold = check_unit("env_threshold", env_threshold)
    top_k = require_int("top_k", top_k, minimum=1)
    final_k = require_int("final_k", final_k, minimum=0)
    env_weight = require_weight("env_weight", env_weight)
    state_weight = require_weight("state_weight", state_weight)
    if not math.isfinite(env_weight + state_weight):
        # Each finite, but a score of both overflowed to infinity and every lesson tied.
        raise ValidationError(
            f"env_weight + state_weight must be a finite number, got {env_weight!r} + "
            f"{state_weight!r}; scale both down (only their ratio matters to the order)"
        )
    query = _unit(np.asarray(state_vector, dtype=np.float64))

    scored: list[tuple[float, StepMemory]] = []
    for memory in candidates:
        if not memory.graded:
            continue
        env = jaccard(memory.env_pre, current_env)
        if env >= env_threshold:
            scored.append((env, memory))
    # The point id last: candidates come in the engine's scan order, which two reads of the
    # same data need not share, and equal lessons must not swap places between them.
    scored.sort(key=lambda pair: (-pair[0], -pair[1].rep, pair[1].step_num, pair[1].id))
    ranked: list[RetrievedLesson] = []
    for env, memory in scored[:top_k]:
        state = 0.0
        if memory.internal_state_embedding is not None and query is not None:
            vec = _unit(np.asarray(memory.internal_state_embedding, dtype=np.float64))
            if vec is not None and vec.shape == query.shape:
                state = float(np.clip(vec @ query, -1.0, 1.0))
        ranked.append(RetrievedLesson(memory, env, state, env_weight * env + state_weight * state))
    ranked.sort(
        key=lambda r: (-r.score, -r.env_score, -r.memory.rep, r.memory.step_num, r.memory.id)
    )

    unique: list[RetrievedLesson] = []
    seen: set[tuple[str, str, str]] = set()
    for lesson in ranked:
        key = _dedupe_key(lesson.memory)
        if key not in seen:
            seen.add(key)
            unique.append(lesson)

    chosen: list[RetrievedLesson] = []
    if final_k >= 2:
        for kind in ("REPEAT", "AVOID"):
            best = next((r for r in unique if r.kind == kind), None)
            if best is not None:
                chosen.append(best)
    for lesson in unique:
        if len(chosen) >= final_k:
            break
        if lesson not in chosen:
            chosen.append(lesson)
    chosen = chosen[:final_k]
    chosen.sort(key=lambda r: unique.index(r))
    return chosen
