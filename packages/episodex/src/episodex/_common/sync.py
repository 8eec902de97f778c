"""Each operation defined once: async methods from sync ones, sync twins from async ones.

A memory's operations are written once, where the work is done, and the other flavours are
derived from that definition, never copied by hand:

- `threaded(Store.method, via="store")` on an async class makes `method` a coroutine method
  that runs the store's synchronous method in a worker thread (`asyncio.to_thread`).
- `blocking(AsyncClass.method)` on a `SyncTwin` makes `method` a plain method that runs the
  coroutine on the twin's private event loop and returns its result.

Why descriptors typed with `ParamSpec`, not a generator script that writes the sync class (as
qdrant-client does): the parameters travel in the type (`Callable[P, R]` in, `Callable[P,
Awaitable[R]]` or `Callable[P, R]` out), so pyright and IDEs see every parameter, default and
`Unpack[...]` option of every derived method with no generated file to keep in step and no
build step; at run time each derived method carries the definition's name, docstring and
signature (for `help()` and `inspect`). `tests/core/test_sync_twins.py` checks that every
coroutine method has its twin with the same signature.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import inspect
import logging
import os
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from episodex._common.errors import NotSupportedError, StoreClosedError

__all__ = ["SyncTwin", "blocking", "forward", "in_thread", "run_sync", "threaded"]

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

logger = logging.getLogger("episodex")


async def in_thread(method: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """`asyncio.to_thread`, except that a cancelled caller leaves the call to finish, logged.

    A blocking store call cannot be stopped halfway, so a caller that gives up (a timeout,
    a cancelled task) does not stop it either: with `asyncio.to_thread` the call then ran or
    not depending on whether its thread had started, and nobody learnt its outcome. Here it
    always runs to its end, and its outcome (done, or failed and why) is logged on the
    `episodex` logger, so a write given up on is never silently stored or silently lost.
    """
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()  # the caller's context variables come along

    def call() -> R:
        return context.run(method, *args, **kwargs)

    work = loop.run_in_executor(None, call)
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        name = getattr(method, "__qualname__", getattr(method, "__name__", repr(method)))
        work.add_done_callback(functools.partial(_log_abandoned, name))
        raise


_LOGGED_IDS = 20


def _point_ids(result: object) -> list[str]:
    """The point ids a write returned (a UUID string or a list of them), else none.

    Only UUIDs pass: a call returning other text (a rendered block, a summary) may hold
    users' words, which stay out of the log.
    """
    values: list[object] = (
        [result] if isinstance(result, str) else list(result) if isinstance(result, list) else []  # pyright: ignore[reportUnknownArgumentType]
    )
    ids: list[str] = []
    for value in values:
        if not isinstance(value, str):
            return []
        try:
            uuid.UUID(value)
        except ValueError:
            return []
        ids.append(value)
    return ids


def _log_abandoned(name: str, work: asyncio.Future[Any]) -> None:
    if work.cancelled():  # the event loop shut down before the thread finished
        return
    exc = work.exception()
    if exc is None:
        ids = _point_ids(work.result())
        # The ids are what a caller who gave up needs to find, replace or forget what was
        # stored (a retry without them stores the episodes again); any other result may hold
        # users' texts and is not logged.
        logger.info(
            "%s was cancelled by its caller but completed: a write it made is stored%s",
            name,
            f", under point ids {', '.join(ids[:_LOGGED_IDS])}"
            + (f" and {len(ids) - _LOGGED_IDS} more" if len(ids) > _LOGGED_IDS else "")
            if ids
            else "",
        )
    else:
        logger.warning(
            "%s was cancelled by its caller, then failed: %s: %s", name, type(exc).__name__, exc
        )


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from synchronous code and return its result.

    For a framework's synchronous entry points that run the same coroutine as the async ones.
    Outside an event loop it runs on a fresh loop; inside one (a notebook, a sync tool called
    from async code) it runs on a fresh loop in a worker thread, because a running loop cannot
    be re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # The caller's context variables come along, as they would into a task it awaited.
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, coro).result()


def _unbound_signature(method: Callable[..., Any]) -> inspect.Signature:
    """The signature of a method as seen on an instance: without `self`."""
    signature = inspect.signature(method)
    return signature.replace(parameters=list(signature.parameters.values())[1:])


class threaded(Generic[P, R]):
    """A coroutine method that runs the synchronous `method` of the attribute `via`.

    `count = threaded(EpisodeStore.count, via="store")` on a class makes `await obj.count(...)`
    run `obj.store.count(...)` in a worker thread: same parameters, same result. `method` gives
    the name, the signature and the docstring; the attribute's own method of that name runs.
    """

    def __init__(self, method: Callable[Concatenate[Any, P], R], *, via: str) -> None:
        self.method = method
        self.via = via
        self.__doc__ = method.__doc__
        self.__signature__ = _unbound_signature(method)

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self.method.__name__:
            raise TypeError(f"{owner.__name__}.{name} wraps {self.method.__name__}: use one name")

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(
        self, obj: object, owner: type | None = None
    ) -> Callable[P, Coroutine[Any, Any, R]]: ...
    def __get__(
        self, obj: object | None, owner: type | None = None
    ) -> Self | Callable[P, Coroutine[Any, Any, R]]:
        if obj is None:
            return self
        # Looked up on the attribute, not called from the class: a subclass's override (or an
        # implementation of a protocol) is the one that runs.
        bound: Callable[P, R] = getattr(getattr(obj, self.via), self.method.__name__)

        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return await in_thread(bound, *args, **kwargs)

        return _like(call, self.method, self.__signature__)


class blocking(Generic[P, R]):
    """A plain method of a `SyncTwin` that runs the coroutine method of the same name.

    `count = blocking(EpisodicMemory.count)` on a twin makes `twin.count(...)` return
    `await twin.target.count(...)`, run on the twin's private event loop.
    """

    @overload
    def __init__(self, method: threaded[P, R]) -> None: ...
    @overload
    def __init__(self, method: Callable[Concatenate[Any, P], Awaitable[R]]) -> None: ...
    def __init__(
        self, method: threaded[P, R] | Callable[Concatenate[Any, P], Awaitable[R]]
    ) -> None:
        self.method = method.method if isinstance(method, threaded) else method
        self.name: str = self.method.__name__
        self.__doc__ = self.method.__doc__
        self.__signature__ = _unbound_signature(self.method)

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self.name:
            raise TypeError(f"{owner.__name__}.{name} is the twin of {self.name}: use one name")

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, obj: SyncTwin, owner: type | None = None) -> Callable[P, R]: ...
    def __get__(self, obj: SyncTwin | None, owner: type | None = None) -> Self | Callable[P, R]:
        if obj is None:
            return self
        coroutine_method = getattr(obj._target, self.name)  # pyright: ignore[reportPrivateUsage]
        loop = obj._loop  # pyright: ignore[reportPrivateUsage]

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return loop.run(coroutine_method(*args, **kwargs))

        return _like(call, self.method, self.__signature__)


class forward(Generic[T]):
    """A read-only attribute that is the same-named attribute of the attribute `via`.

    `engine = forward[Engine]("memory", "The vector engine.")` on a twin makes `twin.engine`
    return `twin.memory.engine`.
    """

    def __init__(self, via: str, doc: str) -> None:
        self.via = via
        self.name = ""
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Self | T:
        if obj is None:
            return self
        value: T = getattr(getattr(obj, self.via), self.name)
        return value


def _like(call: Callable[P, T], method: Callable[..., Any], signature: inspect.Signature) -> Any:
    """`call` dressed as `method` for `help()` and `inspect`: name, docstring, signature."""
    functools.update_wrapper(call, method)
    delattr(call, "__wrapped__")  # its signature has `self`, which is bound here
    setattr(call, "__signature__", signature)  # noqa: B010 - functions do not declare it
    return call


class _LoopThread:
    """A private event loop in a daemon thread: sync callers submit coroutines to it.

    Each calling thread keeps its own `contextvars.Context` across calls, so state a memory
    keeps per context (the lessons' attempt in progress) is per thread, as it is per task for
    async callers. `stop()` fails the calls still running with `StoreClosedError` instead of
    leaving their threads blocked, and a call from a forked child process (whose copy of this
    loop has no thread) is refused at once instead of hanging.
    """

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._pid = os.getpid()
        self._closed = False
        self._lock = threading.Lock()
        self._running: set[concurrent.futures.Future[Any]] = set()
        self._contexts = threading.local()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="episodex-sync", daemon=True
        )
        self._thread.start()

    def context(self) -> contextvars.Context:
        context: contextvars.Context | None = getattr(self._contexts, "context", None)
        if context is None:
            context = contextvars.copy_context()
            self._contexts.context = context
        return context

    def run(self, coro: Awaitable[T]) -> T:
        if threading.get_ident() == self._thread.ident:
            # Called from a call of this twin (an async grader or callback it awaits, calling
            # the sync twin back): this thread runs the loop the call would wait for, so it
            # would wait forever.
            _close_quietly(coro)
            raise NotSupportedError(
                "a sync twin was called from inside one of its own calls (an async grader or "
                "callback calling the sync twin back), which would wait forever: there, await "
                "the async memory the twin wraps instead"
            )
        if os.getpid() != self._pid:
            _close_quietly(coro)
            raise StoreClosedError(
                "this memory was opened in another process (this is a fork of it, e.g. a "
                "gunicorn --preload worker or a multiprocessing child): open it again in this "
                "process"
            )
        done: concurrent.futures.Future[T] = concurrent.futures.Future()
        context = self.context()

        def start() -> None:
            # Under the lock `stop()` fails waiting calls with: one it failed already is not
            # started (marking a finished future running logs CRITICAL and raises).
            with self._lock:
                starting = not done.done() and done.set_running_or_notify_cancel()
            if not starting:
                _close_quietly(coro)
                return
            task = self._loop.create_task(_await(coro), context=context)
            task.add_done_callback(lambda t: _settle(t, done))

        with self._lock:
            if self._closed:
                _close_quietly(coro)
                raise StoreClosedError("this memory is closed; open a new one")
            self._running.add(done)
        try:
            try:
                self._loop.call_soon_threadsafe(start)
            except RuntimeError:
                # `stop()` closed the loop after this call was let in: the same error as a
                # call that came after it, not asyncio's "Event loop is closed".
                _close_quietly(coro)
                raise StoreClosedError("this memory is closed; open a new one") from None
            return done.result()
        finally:
            with self._lock:
                self._running.discard(done)

    def stop(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for future in self._running:  # callers still waiting are told, not left blocked
                if not future.done():
                    with contextlib.suppress(concurrent.futures.InvalidStateError):
                        future.set_exception(
                            StoreClosedError("the memory was closed while this call was running")
                        )
        if self._loop.is_closed() or os.getpid() != self._pid:
            return
        self._loop.call_soon_threadsafe(self._cancel_then_stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()

    def _cancel_then_stop(self) -> None:
        # Calls still running are cancelled first: their tasks then finish on the next pass of
        # the loop, before it stops, instead of being destroyed while pending (which asyncio
        # reports as an error when they are garbage-collected).
        for task in asyncio.all_tasks(self._loop):
            task.cancel()
        self._loop.call_soon(self._loop.stop)


def _settle(task: asyncio.Task[T], done: concurrent.futures.Future[T]) -> None:
    if done.done():
        return
    # `stop()` may fail `done` from its thread at this very moment: its answer stands.
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        if task.cancelled():
            done.set_exception(StoreClosedError("the call was cancelled"))
        elif (exc := task.exception()) is not None:
            done.set_exception(exc)
        else:
            done.set_result(task.result())


def _close_quietly(coro: Awaitable[Any]) -> None:
    close = getattr(coro, "close", None)
    if callable(close):
        close()  # a coroutine that will never run must not warn "never awaited"


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


class SyncTwin:
    """Base of the synchronous twins: a private event loop that runs the target's coroutines.

    A subclass lists its methods as `name = blocking(AsyncClass.name)`. Each call runs the
    coroutine on a private event loop in a daemon thread, so a twin is safe to call from
    several threads at once and also works where a loop is already running (a notebook, a web
    server).
    """

    def __init__(self, target: object) -> None:
        self._target = target
        self._loop = _LoopThread()

    def close(self) -> None:
        """Stop the private event loop."""
        self._loop.stop()

    def in_thread_context(self, read: Callable[[], T]) -> T:
        """Read state the target keeps per context, as this thread's calls see it."""
        return self._loop.context().run(read)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
