"""The helper thread a recall runs its SPLADE query encoder on, next to the dense one.

`both` is private; it is tested directly because its failure modes (an exception on either
side, a forked child inheriting the pool) cannot be provoked through a recall with real models.
"""

from __future__ import annotations

import multiprocessing
import threading
import time

import pytest
from episodex._common.helpers import both


def test_both_run_at_once_and_return_in_order() -> None:
    # `first` can only finish once `second` has started: run one after the other, this hangs.
    started = threading.Event()

    def first() -> str:
        assert started.wait(timeout=10), "second never ran while first was running"
        return "dense"

    def second() -> str:
        started.set()
        return "learned"

    assert both(first, second) == ("dense", "learned")


def test_a_failure_of_the_first_waits_for_the_second_then_raises() -> None:
    finished: list[float] = []

    def first() -> None:
        raise ValueError("dense failed")

    def second() -> None:
        time.sleep(0.2)
        finished.append(time.monotonic())

    with pytest.raises(ValueError, match="dense failed"):
        both(first, second)
    # Nothing of the call is still running once it has raised.
    assert len(finished) == 1


def test_a_failure_of_the_second_is_raised() -> None:
    def second() -> None:
        raise RuntimeError("splade failed")

    with pytest.raises(RuntimeError, match="splade failed"):
        both(lambda: 1, second)


def test_when_both_fail_the_first_failure_is_raised() -> None:
    def first() -> None:
        raise ValueError("dense failed")

    def second() -> None:
        raise RuntimeError("splade failed")

    with pytest.raises(ValueError, match="dense failed"):
        both(first, second)


def _in_child(out: multiprocessing.Queue[object]) -> None:
    out.put(both(lambda: 1, lambda: 2))


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform"
)
def test_a_forked_child_gets_its_own_helpers() -> None:
    both(lambda: 0, lambda: 0)  # the parent's pool exists (and has a thread) before the fork
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue[object] = ctx.Queue()
    child = ctx.Process(target=_in_child, args=(out,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung on the pool it inherited")
    assert child.exitcode == 0
    assert out.get(timeout=5) == (1, 2)
