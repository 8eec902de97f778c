"""Export a user's episodes, forget the user (GDPR erasure), import them into a fresh store.

Everything in episodex is scoped to one `user_id` and one `agent_id`, so a user's data is
exported and erased agent by agent: keep the list of agents you run. The JSONL export holds
one `memorize` record per line (with its id), so importing it elsewhere gives back the same
episodes under the same ids; the vectors are recomputed by the new store's embedder.

    python examples/export_forget_import.py

It also shows what `import_` does with a damaged file: `errors="strict"` imports nothing and
reports every bad line; `errors="skip"` imports the good lines and reports the others.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from episodex import EpisodicMemory, ImportFileError

USER = "alice"
AGENTS = ("support", "billing")  # every agent this user may have talked to

EPISODES = [
    (
        "support",
        "c-101",
        "Parcel for order 1182 stuck at the depot",
        "The agent tracked order 1182 and booked a redelivery for Friday.",
    ),
    (
        "support",
        "c-102",
        "Refund for the cracked blender jar",
        "The agent issued a 49.99 EUR refund for order 1207 after Alice sent a photo.",
    ),
    (
        "support",
        "c-102",
        "Alice keeps the blender base",
        "Only the cracked jar has to be returned; Alice keeps the base.",
    ),
    (
        "billing",
        "c-201",
        "Invoice address changed to Berlin",
        "Alice moved; the agent updated the invoice address for future orders.",
    ),
    (
        "billing",
        "c-202",
        "VAT number added to the account",
        "Alice added a VAT number so her invoices show it.",
    ),
]


async def count_all(mem: EpisodicMemory, user: str) -> dict[str, int]:
    return {agent: await mem.count(user_id=user, agent_id=agent) for agent in AGENTS}


async def main(tmp: Path) -> None:
    export_file = tmp / f"{USER}.jsonl"

    async with EpisodicMemory(path=tmp / "store") as mem:
        ids = [
            await mem.memorize(
                short_summary=short,
                long_summary=long,
                user_id=USER,
                agent_id=agent,
                conversation_id=conv,
            )
            for agent, conv, short, long in EPISODES
        ]
        await mem.memorize(
            short_summary="Bob asked about opening hours",
            long_summary="Bob asked when the shop opens; 9:00.",
            user_id="bob",
            agent_id="support",
            conversation_id="c-900",
        )
        print(f"stored: {await count_all(mem, USER)} for {USER}, 1 for bob")

        # 1. Export: one file for every agent of this user.
        with export_file.open("w", encoding="utf-8") as fh:
            exported = sum([await mem.export(fh, user_id=USER, agent_id=a) for a in AGENTS])
        print(f"exported {exported} episodes to {export_file.name}")

        # 2. Forget: erase the user everywhere.
        for agent in AGENTS:
            deleted = await mem.forget(user_id=USER, agent_id=agent, everything=True)
            print(f"forgot {deleted} episodes of {USER} with agent {agent!r}")
        print(f"after forgetting: {await count_all(mem, USER)}")
        result = await mem.recall(user_id=USER, agent_id="support", query="blender refund")
        print(f"recall for {USER}: {sum(len(side) for side in result.values())} episodes")
        print(f"bob still has {await mem.count(user_id='bob', agent_id='support')} episode")

    # 3. Import into a fresh store (another folder, or a server: same call).
    async with EpisodicMemory(path=tmp / "fresh") as fresh:
        report = await fresh.import_(export_file, user_id=USER)
        print(
            f"imported {len(report.imported)} episodes into a fresh store: "
            f"{await count_all(fresh, USER)}"
        )
        print(f"same ids as before: {sorted(report.imported) == sorted(ids)}")
        result = await fresh.recall(user_id=USER, agent_id="support", query="blender refund")
        print(f"recall after import: {result['previous_conversations'][0]['short_summary_text']!r}")

    # 4. A damaged file: a line cut short in transit, and a record with a bad value.
    lines = export_file.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1][: lines[1].index(', "agent_id"')]
    lines[3] = lines[3].replace('"average_user_sentiment": null', '"average_user_sentiment": 7')
    damaged = tmp / "damaged.jsonl"
    damaged.write_text("\n".join(lines) + "\n", encoding="utf-8")

    async with EpisodicMemory(path=tmp / "third") as third:
        try:
            await third.import_(damaged, errors="strict")
        except ImportFileError as exc:
            print(
                f"strict: ImportFileError, {len(exc.errors)} bad lines, "
                f"{sum((await count_all(third, USER)).values())} imported"
            )
            for number, reason in exc.errors:
                print(f"  line {number}: {reason}")
        report = await third.import_(damaged, errors="skip")
        print(
            f"skip: imported {len(report.imported)}, skipped lines "
            f"{[number for number, _ in report.skipped]}"
        )


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
