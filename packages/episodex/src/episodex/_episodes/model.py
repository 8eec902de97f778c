"""The conversation episode: what `memorize` accepts, how it is stored, how it comes back."""

from __future__ import annotations

import json
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
from episodex._common.unreadable import readable_time, report_unreadable
from episodex._common.validation import is_finite, is_integer, is_real

__all__ = [
    "ConversationEpisode",
    "missing_default",
    "payload_problem",
    "payload_to_item",
    "query_speaker_terms",
    "readable",
    "speaker_keys",
    "stored_texts",
]

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

    @field_validator(
        "start_index",
        "end_index",
        "overlap",
        "average_user_sentiment",
        "user_sentiment_variance",
        mode="before",
    )
    @classmethod
    def _python_number(cls, value: object) -> object:
        # A numpy int64 or float32 (any `numbers.Integral` / `numbers.Real` but bool) is taken
        # as the int or float it equals; the strict checks still refuse bools and text.
        if isinstance(value, bool | int | float):
            return value
        if is_integer(value):
            return int(value)
        if is_real(value):
            return float(value)
        return value

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


#: The stored fields every episode has, and those an older payload may lack (read as `memorize`
#: defaults them: `end_index` as `start_index`).
_TEXTS = ("user_id", "agent_id", "conversation_id", "short_summary_text", "long_summary_text")
_TIMES = ("timestamp_begin", "timestamp_end")
_DEFAULTS: dict[str, Any] = {
    "start_index": 0,
    "overlap": 0,
    "flows_activated": [],
    "tools_invoked": [],
    "speakers": [],
    "average_user_sentiment": None,
    "user_sentiment_variance": None,
    "metadata": {},
}


def _field_problem(key: str, value: Any) -> str | None:
    """Why a stored field's value cannot be read back as an episode's field, or None."""
    if key in _TEXTS:
        return None if isinstance(value, str) else "is not a string"
    if key in ("start_index", "end_index", "overlap"):
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return None if ok else "is not a count"
    if key in ("flows_activated", "tools_invoked", "speakers"):
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)  # pyright: ignore[reportUnknownVariableType]
        return None if ok else "is not a list of names"
    if key in (*_TIMES, "created_at"):
        return None if readable_time(value) is not None else "is no time a datetime holds"
    if key in ("average_user_sentiment", "user_sentiment_variance"):
        ok = value is None or (
            isinstance(value, int | float) and not isinstance(value, bool) and is_finite(value)
        )
        return None if ok else "is not a finite number"
    if key == "metadata":
        return None if isinstance(value, dict) else "is not a JSON object"
    return None


def payload_problem(payload: Mapping[str, Any], fields: Iterable[str] | None = None) -> str | None:
    """Why a stored episode cannot be read back (`"timestamp_end is ..."`), or None.

    A point written by another program or an older release may hold a field of the wrong type,
    a time no `datetime` holds or lack a field; `memorize` never stores such a point. Only
    `fields` are looked at when given (a read that asked for those alone). A field with a
    `memorize` default may be missing (`missing_default` gives it).
    """
    for key in (
        (*_TEXTS, *_TIMES, *_DEFAULTS, "end_index", "created_at") if fields is None else fields
    ):
        if key not in payload:
            if key in _TEXTS or key in _TIMES:
                return f"{key} is missing"
            continue
        problem = _field_problem(key, payload[key])
        if problem is not None:
            return f"{key} {problem} ({_shown(payload[key])})"
    return None


def readable(
    point_id: str, payload: Mapping[str, Any], fields: Iterable[str] | None = None
) -> bool:
    """Whether a stored episode can be read back (see `payload_problem`); if not, it is reported.

    Reported once per point (`report_unreadable`), so a read that leaves it out every turn
    does not log it every turn.
    """
    problem = payload_problem(payload, fields)
    if problem is not None:
        report_unreadable("episode", point_id, problem)
    return problem is None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def payload_to_item(
    point_id: str, payload: Mapping[str, Any], score: float | None = None
) -> dict[str, Any]:
    """A stored payload as the dict users get back: ids, texts, fields, datetimes.

    The payload must be readable (`payload_problem` gives None); a field an older payload lacks
    stays missing (`missing_default` gives what `memorize` would have stored).
    """
    item: dict[str, Any] = {"point_id": point_id}
    if score is not None:
        item["score"] = score
    for key, value in payload.items():
        if key in (*_TIMES, "created_at") and isinstance(value, int | float):
            item[key] = datetime.fromtimestamp(value, UTC)
        elif key not in ("schema", SPEAKER_KEYS):
            item[key] = value
    return item


def missing_default(payload: Mapping[str, Any], key: str) -> Any:
    """What `memorize` stores for a field a readable payload of an older release lacks."""
    if key == "end_index":
        return payload.get("start_index", 0)
    default = _DEFAULTS[key]
    return default.copy() if isinstance(default, list | dict) else default


def stored_texts(payload: Mapping[str, Any]) -> tuple[str, str]:
    """The `(short, long)` summary texts a stored episode's vectors are made again from.

    What a re-index and a take-back embed. A point another program or an older release wrote
    may hold a summary that is no string (taken as its JSON text) or none (taken as the other
    summary, or empty): its vectors are made all the same and its payload carried over as
    stored, so nothing is lost; reads leave it out (`payload_problem`) until it is replaced.
    """
    short, long = (
        _as_text(payload.get(key)) for key in ("short_summary_text", "long_summary_text")
    )
    return (short or long or "", long or short or "")


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
