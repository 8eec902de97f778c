"""`episodex.testing.StallingModel`: every call answers at once but the one numbered `stall_at`."""

from __future__ import annotations

import asyncio

import pytest
from episodex.testing import StallingModel


async def test_the_stalled_call_waits_until_cancelled_and_the_others_answer() -> None:
    model = StallingModel(2, reply="part {n}")
    assert await model("first") == "part 1"
    assert not model.stalled.is_set()
    stalled = asyncio.create_task(model("second"))
    await asyncio.wait_for(model.stalled.wait(), timeout=5)
    assert not stalled.done()
    stalled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stalled
    assert await model("third") == "part 3"
    assert model.calls == 3


async def test_a_timeout_around_the_stalled_call_raises() -> None:
    model = StallingModel(1)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(model("only"), timeout=0.05)
    assert model.stalled.is_set() and await model("next") == "summary 2"
