"""`episodex demo`: a support bot's memory of two customers, recalled for a new message."""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from episodex._common.errors import ValidationError
from episodex._episodes.block import format_recall
from episodex._episodes.memory import EpisodicMemory

__all__ = ["DEMO_EPISODES", "run_demo"]

AGENT = "support-bot"
_T0 = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)


def _ep(
    user: str,
    conversation: str,
    day: int,
    short: str,
    long: str,
    *,
    flows: list[str],
    tools: list[str],
    sentiment: float,
    start: int,
    end: int,
) -> dict[str, Any]:
    begin = _T0 + timedelta(days=day)
    return {
        "user_id": user,
        "agent_id": AGENT,
        "conversation_id": conversation,
        "short_summary": short,
        "long_summary": long,
        "start_index": start,
        "end_index": end,
        "overlap": 2 if start else 0,
        "flows_activated": flows,
        "tools_invoked": tools,
        "timestamp_begin": begin,
        "timestamp_end": begin + timedelta(minutes=12),
        "average_user_sentiment": sentiment,
        "user_sentiment_variance": 0.05,
        "metadata": {"channel": "chat", "plan": "pro" if user == "alice" else "basic"},
    }


#: The demo's episodes: two customers of an online shop, several conversations each.
DEMO_EPISODES: list[dict[str, Any]] = [
    _ep(
        "alice",
        "alice-c1",
        0,
        "Alice could not log in after resetting her password.",
        "Alice reset her password but the login page kept saying 'invalid credentials'. The agent "
        "found a stale session cookie, cleared her sessions and she logged in successfully.",
        flows=["login_help"],
        tools=["clear_sessions"],
        sentiment=-0.4,
        start=0,
        end=14,
    ),
    _ep(
        "alice",
        "alice-c1",
        0,
        "Alice enabled two-factor authentication with an authenticator app.",
        "After logging in, Alice asked how to secure her account. The agent walked her through "
        "enabling 2FA with an authenticator app and saving backup codes.",
        flows=["account_security"],
        tools=["send_2fa_guide"],
        sentiment=0.5,
        start=13,
        end=24,
    ),
    _ep(
        "alice",
        "alice-c2",
        9,
        "Alice's espresso machine (order 5521) arrived with a cracked water tank.",
        "Alice reported that order 5521, an espresso machine, arrived with a cracked water tank. "
        "She sent a photo; the agent opened a damage claim and shipped a replacement tank.",
        flows=["damaged_item"],
        tools=["lookup_order", "open_damage_claim", "ship_replacement"],
        sentiment=-0.2,
        start=0,
        end=18,
    ),
    _ep(
        "alice",
        "alice-c3",
        21,
        "Alice asked to move her monthly coffee-bean subscription to the 15th.",
        "Alice wanted her bean subscription billed and shipped on the 15th instead of the 1st. "
        "The agent changed the billing date and confirmed the next shipment date.",
        flows=["subscription_change"],
        tools=["update_subscription"],
        sentiment=0.6,
        start=0,
        end=9,
    ),
    _ep(
        "bob",
        "bob-c1",
        3,
        "Bob was charged twice for order 7730.",
        "Bob saw two identical charges for order 7730 on his card. The agent confirmed a duplicate "
        "authorisation and refunded the second charge; refunds take 3-5 business days.",
        flows=["billing_dispute"],
        tools=["lookup_order", "issue_refund"],
        sentiment=-0.6,
        start=0,
        end=16,
    ),
    _ep(
        "bob",
        "bob-c2",
        12,
        "Bob asked where his refund for order 7730 was.",
        "Bob's refund had not shown up after four days. The agent checked the payment processor, "
        "shared the refund reference and explained the bank's posting delay.",
        flows=["refund_status"],
        tools=["lookup_refund"],
        sentiment=-0.3,
        start=0,
        end=10,
    ),
    _ep(
        "bob",
        "bob-c2",
        12,
        "Bob could not log in on the mobile app after an update.",
        "After the app update Bob's login failed with a spinner. The agent asked him to update to "
        "4.2.1 and reset the app cache, which fixed it.",
        flows=["login_help"],
        tools=["app_version_check"],
        sentiment=0.2,
        start=9,
        end=20,
    ),
]

_QUERY = "I reset my password again and now I can't sign in"
_NEW_CONVERSATION = "alice-c4"


def _streams(item: dict[str, Any]) -> str:
    return (
        ", ".join(f"{name} #{info['rank']}" for name, info in item.get("streams", {}).items())
        or "-"
    )


async def run_demo(path: str | Path | None = None, *, out: TextIO) -> int:
    """Run the demo on the embedded store at `path` (a temporary folder by default)."""
    if path is not None:
        _require_new_folder(Path(path))
    with tempfile.TemporaryDirectory(prefix="episodex-demo-") as tmp:
        folder = Path(path) if path is not None else Path(tmp) / "memory"
        return await _run(folder, out)


def _require_new_folder(folder: Path) -> None:
    # The demo's episodes are of made-up users: written into a store (the user's own, or one
    # an earlier demo kept), they would join a real user's of the same name, and every rerun
    # would double them.
    if folder.is_dir() and any(folder.iterdir()):
        raise ValidationError(
            f"{folder} is not empty; give demo --keep a new or empty folder, so its made-up "
            "episodes go into a store of their own"
        )


async def _run(folder: Path, out: TextIO) -> int:
    w = out.write
    async with EpisodicMemory(path=folder) as mem:
        w(f"episodex demo: embedded Qdrant Edge store in {folder}\n")
        w(
            f"embedder: {mem.embedder.model_id} ({mem.embedder.dimension} dimensions, bundled, offline)\n\n"
        )
        t0 = time.perf_counter()
        ids = await mem.memorize_many(DEMO_EPISODES)
        elapsed = time.perf_counter() - t0
        users = sorted({e["user_id"] for e in DEMO_EPISODES})
        w(
            f"memorized {len(ids)} support episodes for {len(users)} users ({', '.join(users)}) "
            f"in {elapsed:.2f} s\n\n"
        )

        w(f'alice opens a new conversation ({_NEW_CONVERSATION}) and writes: "{_QUERY}"\n')
        t0 = time.perf_counter()
        res = await mem.recall(
            user_id="alice", agent_id=AGENT, conversation_id=_NEW_CONVERSATION, query=_QUERY
        )
        w(
            f"recall took {(time.perf_counter() - t0) * 1000:.1f} ms "
            "(query embedding + short, long and BM25 searches fused by weighted RRF)\n\n"
        )
        for key, title in (
            ("same_conversation", "same conversation"),
            ("previous_conversations", "previous conversations"),
        ):
            items = res[key]
            w(f"{title}: {len(items)} episode(s)\n")
            for rank, item in enumerate(items, start=1):
                w(
                    f"  {rank}. score {item['score']:.4f}  [{_streams(item)}]  {item['conversation_id']}  "
                    f"{item['timestamp_end']:%Y-%m-%d}  {item['short_summary_text']}\n"
                )
        w("\nprompt block for the model (best 3, max 400 tokens):\n")
        top = {
            "same_conversation": res["same_conversation"],
            "previous_conversations": res["previous_conversations"][:3],
        }
        w(format_recall(top, max_tokens=400) + "\n\n")

        bob = await mem.recall(user_id="bob", agent_id=AGENT, query=_QUERY)
        leaked = [i for i in bob["previous_conversations"] if i["user_id"] != "bob"]
        w(
            f"bob asks the same thing: {len(bob['previous_conversations'])} episode(s), all his own "
            f"({len(leaked)} from other users)\n"
        )
        stats = await mem.stats(user_id="alice", agent_id=AGENT)
        w(
            f"alice: {stats['episodes']} episodes in {stats['conversations']} conversations, top flows "
            f"{[f for f, _ in stats['top_flows'][:3]]}, sentiment mean {stats['sentiment_mean']:+.2f} "
            f"({stats['sentiment_direction']})\n"
        )
        return 0 if not leaked and res["previous_conversations"] else 1
