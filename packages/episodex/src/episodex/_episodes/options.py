"""The options of a conversation-episode recall: one definition for the core, CLI and adapters."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, TypedDict, cast

from episodex._common.errors import ConfigurationError
from episodex._common.validation import require_int, require_share, require_weight

if TYPE_CHECKING:
    from episodex._episodes.memory import EpisodicMemory, SyncEpisodicMemory

__all__ = [
    "DEFAULT_WEIGHTS",
    "INT_MINIMUMS",
    "LEARNED",
    "STREAMS",
    "RecallOptions",
    "check_recall_options",
    "validate_recall_options",
    "weights_problem",
]

#: The five streams every recall may run (weighted by `<name>_weight`); the learned ones only
#: on a store opened with SPLADE.
STREAMS = ("short", "long", "bm25", "splade", "splade_short")
#: The streams the learned sparse encoder adds: the joined summaries, and the short one alone.
LEARNED = ("splade", "splade_short")
#: Fusion weight of each stream unless a recall says otherwise (chosen on the LoCoMo dev split
#: with leave-one-conversation-out checks; see benchmarks/README.md).
DEFAULT_WEIGHTS = {"short": 0.05, "long": 0.05, "bm25": 0.3, "splade": 0.2, "splade_short": 0.2}


class RecallOptions(TypedDict, total=False):
    """Tuning of `EpisodicMemory.recall` (and `recall_block`); every key is optional.

    Pass them as keyword arguments (`recall(..., bm25_weight=1.0)`), or keep them in a dict
    typed `RecallOptions` and spread it (`recall(..., **options)`); the adapters take such a
    dict as their `recall_options`.
    """

    previous_conversation_limit: int
    """Most episodes returned from other conversations (default 10; 0 skips that search)."""

    same_conversation_limit: int
    """Most episodes returned from the current `conversation_id` (default 5)."""

    short_weight: float
    """Fusion weight of the short-summary dense stream (default 0.05)."""

    long_weight: float
    """Fusion weight of the long-summary dense stream (default 0.05)."""

    bm25_weight: float
    """Fusion weight of the BM25 sparse stream (default 0.3)."""

    splade_weight: float
    """Fusion weight of the SPLADE learned sparse stream over both summaries (default 0.2; a
    store opened without the SPLADE streams runs it at 0 and refuses a weight above 0).

    The default weights lean on the sparse streams: on the LoCoMo development split they
    were chosen with leave-one-conversation-out checks (see `benchmarks/README.md`); a stronger
    embedder may deserve more dense weight. At least one weight must be above 0.
    """

    splade_short_weight: float
    """Fusion weight of the SPLADE stream over the short summary alone (default 0.2; a store
    opened without the SPLADE streams runs it at 0 and refuses a weight above 0)."""

    dated_weight: float
    """Fusion weight of the `dated` stream (default 0.3; 0 turns it off).

    When the query names a period outright (`on 9 May, 2023`, `in July 2022`, `summer 2021`,
    `in 2023`; English, no relative dates), the short-summary dense stream searches once more
    among the episodes whose time span meets that period, widened by 14 days each side, and
    joins the fusion as `dated`. A query naming no period has no such stream.
    """

    speaker_weight: float
    """Fusion weight of the `speaker` stream (default 0.2; 0 turns it off).

    When the query names one of an episode's `speakers` (case-folded, by the whole name or,
    for a name of several words, by one of them that is not an article, preposition or title:
    `Caroline`, `caroline's`, `user`, `Smith` for `Dr. Ann Smith`), the long-summary dense
    stream searches once more among the episodes of the speakers it names, and joins the
    fusion as `speaker`. Episodes stored without `speakers` are never in it.
    """

    speaker_bm25_weight: float
    """Fusion weight of the `speaker_bm25` stream (default 0.1; 0 turns it off): the BM25
    stream searched again among the named speakers' episodes, as `speaker` does."""

    conversation_diversity: float
    """How much the previous-conversations list favours conversations it has not shown yet
    (default 0.03, in [0, 1); 0 keeps the engine's fused order).

    The list is ordered greedily: each episode's fused score is multiplied by
    `1 - conversation_diversity` for every episode of its conversation placed before it, and
    that is the `score` it is returned with (so the list is best first by `score`). Only the
    order of the episodes fusion returned changes, never which ones.
    """

    stage1_limit: int
    """How many candidates each stream finds before fusion (default 100)."""

    rrf_k: int
    """The Reciprocal Rank Fusion constant (default 20).

    Each stream adds `weight / (rrf_k + rank)` (rank counted from 1) to the score of every hit
    it found, so a stream's weight scales its whole contribution and a larger `rrf_k` flattens
    the difference between top and lower ranks.
    """

    seen_from: int
    """First message index of the current conversation that is in the model's context.

    With `seen_until`, it names the window of messages the model already sees (a
    checkpointed thread's history, a framework's short-term memory): same-conversation
    episodes that end inside `[seen_from, seen_until)` are left out, so nothing is shown
    twice. Give either or both; the window is open at the end not given (default: nothing
    left out). Message indexes are those the episodes were stored with (`end_index`).
    """

    seen_until: int
    """End (exclusive) of the window of messages in the model's context; see `seen_from`."""

    seen_metadata: Mapping[str, str]
    """Narrows the window of `seen_from`/`seen_until` to the episodes whose metadata holds these.

    Several writers of one conversation that each count their own messages (two LangGraph
    threads sharing a conversation id) store episodes at the same positions: the window of
    one leaves out only its own episodes (those whose `metadata` has every key given here
    with its value), and the others', whose messages the model does not see, are recalled.
    Keys are plain metadata keys (no `.`); it needs `seen_from` or `seen_until`.
    """

    with_stream_ranks: bool
    """Add `streams` (each stream's rank and score) to every item (default True).

    False skips the id-only stream searches that produce it, for the lowest latency; the items
    and their order are the same. `recall_block` and the adapters' prompt blocks, which never
    show `streams`, default to False.
    """


RECALL_OPTION_NAMES: frozenset[str] = RecallOptions.__optional_keys__


def check_recall_options(options: Mapping[str, Any], *, where: str = "recall") -> None:
    """Raise `TypeError`, as Python does for a bad keyword, for a name `RecallOptions` lacks."""
    unknown = sorted(set(options) - RECALL_OPTION_NAMES)
    if unknown:
        raise TypeError(
            f"{where}() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
            f"its options are {', '.join(sorted(RECALL_OPTION_NAMES))}"
        )


def weights_problem(options: Mapping[str, Any], streams: Collection[str] | None) -> str | None:
    """Why a recall with `options` would run no stream, or None: the one rule of `recall`.

    Every `<stream>_weight` of `STREAMS` left at 0 (given as 0, or not a stream of the store)
    leaves a recall nothing to search, and a SPLADE weight above 0 on a store without the
    SPLADE streams is a mistake. `streams` are the store's streams (of `STREAMS`), or None when
    not known: then only what no store could run is a problem. The weights must have been
    checked (finite numbers >= 0).
    """
    if streams is not None:
        for name in LEARNED:
            if name not in streams and options.get(f"{name}_weight"):
                return (
                    f"{name}_weight is above 0 but this store has no SPLADE streams: run "
                    f"`episodex reindex` to add them, or leave {name}_weight out"
                )
    known = STREAMS if streams is None else tuple(s for s in STREAMS if s in streams)
    if not any(options.get(f"{name}_weight", DEFAULT_WEIGHTS[name]) for name in known):
        names = ", ".join(f"{name}_weight" for name in known)
        return f"{names} are all 0: give at least one a weight > 0"
    return None


def validate_recall_options(
    options: Mapping[str, Any] | None,
    *,
    owner: str | None = None,
    memory: EpisodicMemory | SyncEpisodicMemory | None = None,
) -> RecallOptions:
    """The recall options an adapter was given, as a new dict; the one check every adapter uses.

    Every adapter (LangChain and LlamaIndex alike) takes exactly the keys of `RecallOptions`
    as its `recall_options`, so one dict of options works in both.

    Args:
        options: The options, or None for none.
        owner: What was given them (a class or function name), to start the error message.
        memory: The memory they will recall from, if known: the weights are then checked
            against its store's streams too (a SPLADE weight on a store without SPLADE).

    Raises:
        ConfigurationError: `options` is not a mapping, names an option recall lacks, or
            gives one a value recall refuses (a negative limit, a weight that is not a
            finite number >= 0, a `with_stream_ranks` that is not a bool), or weights that
            leave the recall no stream to run (every stream's weight 0, or a SPLADE weight
            above 0 for a store without SPLADE), which `recall` refuses at every call.
    """
    where = f"{owner}: " if owner else ""
    if options is None:
        return RecallOptions()
    if not isinstance(options, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(
            f"{where}recall_options must be a dict of RecallOptions, got {type(options).__name__}"
        )
    unknown = sorted(str(name) for name in options if name not in RECALL_OPTION_NAMES)
    if unknown:
        raise ConfigurationError(
            f"{where}unknown recall option(s) {', '.join(unknown)} in recall_options; "
            f"known: {', '.join(sorted(RECALL_OPTION_NAMES))}"
        )
    # Values are checked here too, as `recall` checks them: an adapter recalls on every turn
    # and goes on without memory when a recall fails, so a value only `recall` refused would
    # turn memory off for good, logged as an outage rather than reported as a mistake.
    for name, value in options.items():
        _check_value(str(name), value, where)
    problem = weights_problem(options, _streams_of(memory))
    if problem is not None:
        raise ConfigurationError(f"{where}{problem}")
    return cast(RecallOptions, dict(options))


def _streams_of(memory: EpisodicMemory | SyncEpisodicMemory | None) -> tuple[str, ...] | None:
    """The streams of `memory`'s store; None without a memory (or for another object)."""
    # Imported here: the memory module imports this one (through the store).
    from episodex._episodes.memory import EpisodicMemory, SyncEpisodicMemory

    if isinstance(memory, SyncEpisodicMemory):
        memory = memory.memory
    if isinstance(memory, EpisodicMemory):
        return memory.store.streams
    return None


#: The least value of each integer option; `recall` and the adapters' checks both read it.
INT_MINIMUMS = {
    "previous_conversation_limit": 0,
    "same_conversation_limit": 0,
    "stage1_limit": 1,
    "rrf_k": 1,
    "seen_from": 0,
    "seen_until": 0,
}


def _check_value(name: str, value: object, where: str) -> None:
    if name in INT_MINIMUMS:
        if name == "seen_until" and value is None:
            return  # recall reads None as "open at the end"
        require_int(f"{where}{name}", value, minimum=INT_MINIMUMS[name], error=ConfigurationError)
    elif name == "conversation_diversity":
        require_share(f"{where}{name}", value, error=ConfigurationError)
    elif name.endswith("_weight"):
        require_weight(f"{where}{name}", value, error=ConfigurationError)
    elif name == "seen_metadata":
        seen_metadata_problem(value, where, ConfigurationError)
    elif name == "with_stream_ranks" and not isinstance(value, bool):
        raise ConfigurationError(f"{where}with_stream_ranks must be True or False, got {value!r}")


def seen_metadata_problem(value: object, where: str, error: type[Exception]) -> None:
    """Raise `error` unless `value` is a `seen_metadata`: plain metadata keys to strings."""
    if not isinstance(value, Mapping):
        raise error(
            f"{where}seen_metadata must be a dict of metadata keys to strings, got {value!r}"
        )
    for key, wanted in cast(Mapping[object, object], value).items():
        if not isinstance(key, str) or not key or "." in key or not isinstance(wanted, str):
            raise error(
                f"{where}seen_metadata must map plain metadata keys (no '.') to strings, got "
                f"{key!r}: {wanted!r}"
            )
