"""The conversation episode: what `memorize` accepts, how it is stored, how it comes back."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Self

from pydantic import (
    Field,
    StrictFloat,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from episodex._common.model import (
    FrozenModel,
    JsonObject,
    NonBlankId,
    NonBlankText,
    UtcDatetime,
    UuidStr,
    to_utc,
)
from episodex._common.validation import is_finite

__all__ = ["ConversationEpisode", "payload_to_item", "query_speaker_terms", "speaker_keys"]

#: Bumped when the stored payload changes shape.
SCHEMA_VERSION = 1


NonNegative = Annotated[StrictInt, Field(ge=0)]
#: Most speakers one episode can name.
MAX_SPEAKERS = 64
_WORD = re.compile(r"\w+")
# The range of each sentiment field, and how a message says it.
_RANGES = {
    "average_user_sentiment": (-1.0, 1.0, "in [-1, 1]"),
    "user_sentiment_variance": (0.0, math.inf, ">= 0"),
}


def _now() -> datetime:
    return datetime.now(UTC)


class ConversationEpisode(FrozenModel):
    """A stretch of one conversation, summarised twice, with what happened in it.

    Only the summaries and the three ids are required.
    """

    record_name = "episode"

    short_summary: NonBlankText
    """One or two sentences: what the stretch was about."""
    long_summary: NonBlankText
    """A paragraph: what was asked, done and decided."""
    user_id: NonBlankId
    """The end user; every read and write is confined to one user and one agent."""
    agent_id: NonBlankId
    """The agent (bot) the user talked to."""
    conversation_id: NonBlankId
    """The conversation the stretch belongs to."""
    start_index: NonNegative = 0
    """Index of the first message summarised."""
    end_index: NonNegative | None = None
    """Index of the last message summarised (defaults to `start_index`)."""
    overlap: NonNegative = 0
    """Messages shared with the previous episode of the conversation."""
    flows_activated: list[NonBlankId] = Field(default_factory=list[str])
    """Named flows (intents, playbooks) the agent ran."""
    tools_invoked: list[NonBlankId] = Field(default_factory=list[str])
    """Tools the agent called."""
    speakers: list[NonBlankId] = Field(default_factory=list[str], max_length=MAX_SPEAKERS)
    """Who spoke in the stretch, by the names a question would use (`"Caroline"`, `"user"`).

    A recall whose query names one of them (any word of it, in any case) searches once more
    among that speaker's episodes (the `speaker` streams of `RecallOptions`).
    """
    timestamp_begin: UtcDatetime | None = None
    """When the stretch began (default: now; naive times are UTC)."""
    timestamp_end: UtcDatetime | None = None
    """When it ended (default: `timestamp_begin` or now)."""
    average_user_sentiment: StrictFloat | StrictInt | None = None
    """Mean user sentiment in [-1, 1]."""
    user_sentiment_variance: StrictFloat | StrictInt | None = None
    """Variance of the user sentiment, at least 0."""
    metadata: JsonObject = Field(default_factory=dict[str, Any])
    """Any JSON object; returned verbatim."""
    point_id: UuidStr | None = None
    """A UUID to store under (default: a new one); writing an existing id replaces it."""

    @field_validator("average_user_sentiment", "user_sentiment_variance")
    @classmethod
    def _finite(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is None:
            return None
        low, high, allowed = _RANGES[info.field_name or ""]
        if not is_finite(value) or not low <= value <= high:
            raise ValueError(f"must be a finite number {allowed}, got {value!r}")
        return float(value)

    @field_validator("timestamp_begin", "timestamp_end")
    @classmethod
    def _readable(cls, value: datetime | None) -> datetime | None:
        # Stored as epoch seconds (a float): the last microseconds of year 9999 round up to a
        # float in year 10000, which no read (recall, get, stats, export) could turn back into
        # a time, so the one episode would fail every read of its user's memory.
        if value is not None:
            try:
                datetime.fromtimestamp(to_utc(value).timestamp(), UTC)
            except (OverflowError, ValueError, OSError):
                raise ValueError(
                    f"{value.isoformat()} is too close to the end of year 9999: stored as epoch "
                    "seconds, it would read back as year 10000; give an earlier time"
                ) from None
        return value

    @model_validator(mode="after")
    def _ranges(self) -> Self:
        if self.end_index is not None and self.end_index < self.start_index:
            raise ValueError(
                f"end_index ({self.end_index}) is before start_index ({self.start_index})"
            )
        if (
            self.timestamp_begin is not None
            and self.timestamp_end is not None
            and to_utc(self.timestamp_end) < to_utc(self.timestamp_begin)
        ):
            raise ValueError("timestamp_end is before timestamp_begin")
        return self

    def to_payload(self, *, created_at: float | None = None) -> dict[str, Any]:
        """The stored payload: times as UTC epoch seconds, so they index and order as floats."""
        begin = to_utc(self.timestamp_begin) if self.timestamp_begin else None
        end = to_utc(self.timestamp_end) if self.timestamp_end else None
        now = _now()
        begin = begin or end or now
        end = end or begin
        return {
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "conversation_id": self.conversation_id,
            "short_summary_text": self.short_summary,
            "long_summary_text": self.long_summary,
            "start_index": self.start_index,
            "end_index": self.start_index if self.end_index is None else self.end_index,
            "overlap": self.overlap,
            "flows_activated": list(self.flows_activated),
            "tools_invoked": list(self.tools_invoked),
            "speakers": list(self.speakers),
            SPEAKER_KEYS: speaker_keys(self.speakers),
            "timestamp_begin": begin.timestamp(),
            "timestamp_end": end.timestamp(),
            "average_user_sentiment": self.average_user_sentiment,
            "user_sentiment_variance": self.user_sentiment_variance,
            "metadata": self.metadata,
            "created_at": created_at if created_at is not None else now.timestamp(),
            "schema": SCHEMA_VERSION,
        }


#: The indexed payload field a speaker stream filters on: the speakers' words, case-folded.
#: Derived from `speakers`, so it is neither returned nor exported.
SPEAKER_KEYS = "speaker_keys"


#: Words that never name a speaker on their own, though they may be part of a name ("The Bot").
_NOT_NAMES = frozenset(
    "a an and al at by da de del der di du el for from in la le mr mrs ms dr of on or st the "
    "to van von with".split()
)
#: The longest name, in words, a query is searched for (longer names match by their words).
_MAX_NAME_WORDS = 3


def _words(text: str) -> list[str]:
    """The words of `text`, case-folded: how speakers and queries meet."""
    # Normalised first: a decomposed "José" (e, then a combining accent) would otherwise
    # lose its accent, which is no word character, and never meet the composed one. Case
    # folding can undo the normalisation of a few letters, hence the second pass.
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return _WORD.findall(folded)


def speaker_keys(speakers: Iterable[str]) -> list[str]:
    """How a query can name these speakers (the keys a speaker stream filters on).

    Each whole name, case-folded, its words joined by one space, and each word of a longer
    name that is not an article, preposition or title.
    """
    keys: list[str] = []
    for name in speakers:
        words = _words(name)
        if words:
            keys.append(" ".join(words))
        if len(words) > 1:
            keys.extend(w for w in words if w not in _NOT_NAMES)
    return list(dict.fromkeys(keys))


def query_speaker_terms(query: str, *, limit: int = 192) -> list[str]:
    """The runs of one to three words of `query`, case-folded (at most `limit`, the first).

    What `speaker_keys` are matched against.
    """
    words = _words(query)
    terms = (
        " ".join(words[i : i + n])
        for i in range(len(words))
        for n in range(1, _MAX_NAME_WORDS + 1)
        if i + n <= len(words)
    )
    return list(dict.fromkeys(terms))[:limit]


def payload_to_item(
    point_id: str, payload: Mapping[str, Any], score: float | None = None
) -> dict[str, Any]:
    """A stored payload as the dict users get back: ids, texts, fields, datetimes."""
    item: dict[str, Any] = {"point_id": point_id}
    if score is not None:
        item["score"] = score
    for key, value in payload.items():
        if key in ("timestamp_begin", "timestamp_end", "created_at") and isinstance(
            value, int | float
        ):
            item[key] = datetime.fromtimestamp(value, UTC)
        elif key not in ("schema", SPEAKER_KEYS):
            item[key] = value
    return item
