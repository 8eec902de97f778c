"""A support bot that remembers each customer across conversations.

Two customers talk to the same support agent over a few weeks. After each stretch of a
conversation the bot stores an *episode*: a one-line summary, a paragraph, the flows it ran,
the tools it called and the customer's mood. When a new message arrives, the bot recalls what
happened earlier in this conversation and in previous ones, renders it as a prompt block, and
looks at the customer's history (flows, tools, sentiment trend).

The summaries here are written by hand so the script runs offline and prints the same thing
every time; in a real bot your LLM writes them at the end of each stretch.

    python examples/support_bot.py                 # a temporary store, deleted at the end
    python examples/support_bot.py --path ./memory # keep the store in ./memory

Running it twice on the same `--path` does not duplicate anything: each episode has a fixed
id, and writing an existing id replaces it.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

from episodex import EpisodicMemory, format_recall, token_counter

AGENT = "support"

# (user, conversation, when, short summary, long summary, flows, tools, mean sentiment)
EPISODES = [
    (
        "alice",
        "alice-0302",
        "2025-03-02 09:10",
        "Late delivery of order 1182 (espresso machine)",
        "Order 1182 was five days late. The agent tracked the parcel, found it stuck at the "
        "Leeds depot and booked a redelivery for Friday.",
        ["order_status"],
        ["track_parcel", "book_redelivery"],
        -0.6,
    ),
    (
        "alice",
        "alice-0320",
        "2025-03-20 18:42",
        "Refund for the cracked blender jar (order 1207)",
        "The blender from order 1207 arrived with a cracked jar. Alice sent a photo; the agent "
        "opened a return and issued a refund of 49.99 EUR to her Visa card, 3-5 business days.",
        ["returns", "refund"],
        ["lookup_order", "create_return", "issue_refund"],
        -0.3,
    ),
    (
        "alice",
        "alice-0320",
        "2025-03-20 18:55",
        "Alice keeps the blender base as a spare",
        "Alice asked whether she must send back the whole blender. The agent said only the jar "
        "has to go back; she keeps the base.",
        ["returns"],
        [],
        0.1,
    ),
    (
        "alice",
        "alice-0408",
        "2025-04-08 10:01",
        "Alice is checking her card statement",
        "Alice opened a new chat while looking at her card statement. The agent verified her "
        "identity before discussing payments.",
        ["account_verification"],
        ["verify_identity"],
        0.2,
    ),
    (
        "bob",
        "bob-0305",
        "2025-03-05 14:00",
        "Bob upgraded to the Family plan",
        "Bob moved from the Solo plan to the Family plan (4 seats); the price difference is "
        "prorated on the next invoice.",
        ["billing", "plan_change"],
        ["change_plan"],
        0.6,
    ),
    (
        "bob",
        "bob-0318",
        "2025-03-18 21:30",
        "Two-factor codes not arriving by SMS",
        "Bob's SMS codes did not arrive. The agent resent one, then switched his two-factor "
        "method to the authenticator app.",
        ["account_access", "two_factor"],
        ["resend_2fa", "switch_2fa_to_app"],
        -0.1,
    ),
    (
        "bob",
        "bob-0402",
        "2025-04-02 07:45",
        "Bob locked out after too many password attempts",
        "Bob was locked out after five failed logins. The agent unlocked the account and sent a "
        "password reset link; Bob was annoyed to lose twenty minutes.",
        ["account_access"],
        ["unlock_account", "send_reset_link"],
        -0.5,
    ),
]


def episode_id(user: str, when: str) -> str:
    """A fixed id per episode, so re-running the script replaces instead of duplicating."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"episodex-example:{user}:{when}"))


async def remember_history(mem: EpisodicMemory) -> None:
    for user, conversation, when, short, long, flows, tools, sentiment in EPISODES:
        at = datetime.strptime(when, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
        await mem.memorize(
            short_summary=short,
            long_summary=long,
            user_id=user,
            agent_id=AGENT,
            conversation_id=conversation,
            flows_activated=flows,
            tools_invoked=tools,
            timestamp_begin=at,
            timestamp_end=at,
            average_user_sentiment=sentiment,
            point_id=episode_id(user, when),
        )
    print(f"stored {len(EPISODES)} episodes for 2 customers")


async def answer(mem: EpisodicMemory, *, user: str, conversation: str, message: str) -> None:
    print(f"\n{user} writes in {conversation}: {message!r}")
    result = await mem.recall(
        user_id=user, agent_id=AGENT, conversation_id=conversation, query=message
    )
    for side in ("same_conversation", "previous_conversations"):
        print(f"  {side}:")
        for item in result[side][:3]:
            print(
                f"    {item['score']:.3f}  [{item['conversation_id']}] {item['short_summary_text']}"
            )

    # The block that goes into the system prompt, cut to a token budget (lowest scores go first).
    block = format_recall(result, max_tokens=350)
    recalled = sum(len(side) for side in result.values())
    print(
        f"\nprompt block: {block.count('<episode ')} of {recalled} recalled episodes fit in "
        f"350 tokens ({token_counter()(block)} used)"
    )
    system_prompt = f"You are ACME's support agent. Use what you remember.\n\n{block}"
    print(system_prompt)

    # recall_block does recall + format_recall in one call.
    same = await mem.recall_block(
        user_id=user, agent_id=AGENT, conversation_id=conversation, query=message, max_tokens=350
    )
    print(f"recall_block gives the same block: {same == block}")


async def show_stats(mem: EpisodicMemory, user: str) -> None:
    s = await mem.stats(user_id=user, agent_id=AGENT, top=3)
    flows = ", ".join(f"{name} x{n}" for name, n in s["top_flows"])
    tools = ", ".join(f"{name} x{n}" for name, n in s["top_tools"])
    print(
        f"\n{user}: {s['episodes']} episodes in {s['conversations']} conversations, "
        f"{s['first_episode_at']:%Y-%m-%d} to {s['last_episode_at']:%Y-%m-%d}"
    )
    print(f"  top flows: {flows}")
    print(f"  top tools: {tools}")
    print(
        f"  sentiment: mean {s['sentiment_mean']:+.2f}, trend {s['sentiment_trend']:+.2f} "
        f"per episode ({s['sentiment_direction']})"
    )
    if s["sentiment_direction"] == "declining":
        print(f"  -> {user} is getting less happy: route the next chat to a senior agent")


async def show_isolation(mem: EpisodicMemory) -> None:
    # Every call is confined to one user_id: Bob asking about Alice's refund sees only his own past.
    alice_ids = {episode_id(u, w) for u, _, w, *_ in EPISODES if u == "alice"}
    result = await mem.recall(user_id="bob", agent_id=AGENT, query="blender refund order 1207")
    found = [i for side in result.values() for i in side]
    leaked = [i for i in found if i["point_id"] in alice_ids]
    print(
        f"\nbob asks about the blender refund: {len(found)} episodes recalled, "
        f"all bob's: {all(i['user_id'] == 'bob' for i in found)}, alice's among them: {len(leaked)}"
    )


async def main(path: Path) -> None:
    async with EpisodicMemory(path=path) as mem:
        await remember_history(mem)
        await answer(
            mem,
            user="alice",
            conversation="alice-0408",
            message="I still don't see the blender money on my card, did the refund go through?",
        )
        await show_stats(mem, "alice")
        await show_stats(mem, "bob")
        await show_isolation(mem)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, help="store folder (default: a temporary one)")
    args = parser.parse_args()
    if args.path is not None:
        asyncio.run(main(args.path))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(Path(tmp) / "memory"))
