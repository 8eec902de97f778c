"""`WorkingMemory` used from many threads keeps every entry and every tag.

Its changes were read-modify-writes with no lock: `delete` rebuilt the entry list from a copy
it had just read, so an entry another thread stored meanwhile was dropped; `add_tags` and
`rename` replaced an entry's tag set with one computed from the set they read, so two threads
tagging one entry kept only one thread's tags; and an entry's time was taken before it was
appended, so the newest entry by position (the one `retrieve` gives among ties) could carry
an older time than the one before it. Every call now holds the memory's lock.

The races need a thread switch inside a call; the switch interval is cut to a microsecond
while the threads run, which before the fix lost entries (or brought deleted ones back) on
every run here. Two tags added to one entry at once were never lost on CPython 3.11: the
read and the write of the tag set are one statement, which the interpreter does not leave
for another thread; the test of that keeps the invariant for interpreters that do (the
free-threaded builds).
"""

from __future__ import annotations

import copy
import pickle
import sys
import threading
from collections.abc import Callable, Iterator

import pytest
from episodex import MemKey, WorkingMemory

THREADS = 8


@pytest.fixture(autouse=True)
def frequent_switches() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _run(
    workers: list[Callable[[], None]],
    *,
    until: threading.Event | None = None,
    first: int = 0,
) -> None:
    """Start the workers together; with `until`, set it once the `first` workers are done."""
    barrier = threading.Barrier(len(workers))
    errors: list[BaseException] = []

    def start(work: Callable[[], None]) -> None:
        try:
            barrier.wait()
            work()
        except BaseException as exc:  # a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    if until is not None:
        for t in threads[:first]:
            t.join()
        until.set()
    for t in threads:
        t.join()
    assert errors == []


def test_stores_during_deletes_and_retrieves_are_all_kept() -> None:
    wm = WorkingMemory()
    for i in range(2000):
        wm.store(("seed", i), MemKey.OBSERVATION)
    per_thread = 2000
    stored = threading.Event()

    def storer(n: int) -> Callable[[], None]:
        def work() -> None:
            for i in range(per_thread):
                wm.store((n, i), MemKey.THOUGHT)

        return work

    def deleter() -> None:
        # Deletes nothing (no entry is a reflection), but rebuilt the list each time.
        while not stored.is_set():
            assert wm.delete(MemKey.REFLECTION) == 0
            assert wm.retrieve(MemKey.OBSERVATION) == ("seed", 1999)

    half = THREADS // 2
    storers = [storer(n) for n in range(half)]
    _run([*storers, *([deleter] * half)], until=stored, first=half)
    assert len(wm) == 2000 + half * per_thread
    found = {e.content for e in wm.retrieve_all_entries(MemKey.THOUGHT)}
    assert found == {(n, i) for n in range(half) for i in range(per_thread)}
    # Each thread's entries are in its own order, and the newest entry is the last stored.
    mine = [e.content for e in wm if e.content[0] == 0]
    assert mine == [(0, i) for i in range(per_thread)]
    assert wm.retrieve(MemKey.THOUGHT) == list(wm)[-1].content


def test_entries_deleted_by_many_threads_stay_deleted() -> None:
    wm = WorkingMemory()
    entries = [wm.store(i, MemKey.OBSERVATION) for i in range(THREADS * 300)]
    keep = wm.store("keep", MemKey.THOUGHT)

    def deleter(n: int) -> Callable[[], None]:
        def work() -> None:
            for entry in entries[n::THREADS]:
                assert wm.delete(entry) == 1

        return work

    _run([deleter(n) for n in range(THREADS)])
    assert list(wm) == [keep]  # a delete rebuilt from a stale copy brought others back


def test_tags_added_by_many_threads_to_one_entry_are_all_kept() -> None:
    wm = WorkingMemory()
    entry = wm.store("the door is locked", MemKey.OBSERVATION)
    tags = [[MemKey.register(f"trust26_t{n}_{i}") for i in range(150)] for n in range(THREADS)]

    def tagger(n: int) -> Callable[[], None]:
        def work() -> None:
            for tag in tags[n]:
                assert wm.add_tags(entry, tag) == 1

        return work

    _run([tagger(n) for n in range(THREADS)])
    assert entry.tags == {MemKey.OBSERVATION, *(t for row in tags for t in row)}


def test_entry_times_follow_the_order_retrieve_ranks_by() -> None:
    wm = WorkingMemory()

    def storer() -> None:
        for i in range(500):
            wm.store(i, MemKey.THOUGHT)

    _run([storer] * THREADS)
    times = [e.created_at for e in wm]
    assert len(times) == THREADS * 500
    assert times == sorted(times)  # the newest by position is never older than the one before


def test_a_working_memory_still_copies_and_pickles() -> None:
    wm = WorkingMemory()
    wm.store("find the key first", {MemKey.THOUGHT, MemKey.NEXT_PLANNED_ACTION})
    for clone in (copy.deepcopy(wm), pickle.loads(pickle.dumps(wm))):
        assert clone.retrieve(MemKey.THOUGHT) == "find the key first"
        clone.store("second", MemKey.THOUGHT)  # its own lock works
        assert (len(clone), len(wm)) == (2, 1)
