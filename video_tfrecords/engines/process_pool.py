"""An ordered, bounded process map that survives the death of a worker.

Videos are decoded in worker processes (a `ProcessPoolExecutor` on the spawn
context: never a fork of a process that runs TensorFlow's threads). Results
come back in input order with at most `2 * num_workers` items in flight, so
memory stays bounded whatever the input's length. A worker that dies (a codec
crash, the OOM killer) breaks the pool: the pool is rebuilt, the items in
flight that had not finished are retried one at a time in a process of their
own, and an item that kills its process again becomes `on_death(item, exitcode)`.
Workers end themselves within a second or so when this process is killed.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def ordered_map(
    fn: Callable[[Item], Result],
    items: Iterable[Item],
    *,
    num_workers: int,
    on_death: Callable[[Item, int], Result],
    initializer: Callable[[], None] | None = None,
) -> Iterator[Result]:
    """Yields `fn(item)` for every item, in order, computed in `num_workers` processes.

    With `num_workers == 1` everything runs in this process (no isolation).
    `fn` and `initializer` must be importable module-level functions.
    """
    if num_workers == 1:
        if initializer is not None:
            initializer()
        yield from map(fn, items)
        return
    context = multiprocessing.get_context("spawn")
    initializer = functools.partial(_start_worker, os.getpid(), initializer)
    new_pool = lambda: ProcessPoolExecutor(num_workers, mp_context=context, initializer=initializer)
    items = iter(items)
    in_flight = collections.deque()  # (item, future), in input order
    pool = new_pool()
    try:
        while True:
            while len(in_flight) < 2 * num_workers:
                item = next(items, _END)
                if item is _END:
                    break
                in_flight.append((item, _submit(pool, fn, item)))
            if not in_flight:
                return
            item, future = in_flight.popleft()
            try:
                yield future.result()
            except BrokenProcessPool:
                pool.shutdown(wait=True, cancel_futures=True)
                yield _run_alone(fn, item, context, on_death, initializer)
                for other, other_future in in_flight:  # finished before the break, or retried alone
                    if _succeeded(other_future):
                        yield other_future.result()
                    else:
                        yield _run_alone(fn, other, context, on_death, initializer)
                in_flight.clear()
                pool = new_pool()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


_END = object()


def _submit(pool: ProcessPoolExecutor, fn, item) -> Future:
    """`fn(item)` submitted to the pool; a pool that broke meanwhile gives a future holding the break.

    A worker can die while the caller holds a yielded result; `submit` then
    raises at once, and the item must take the same retry path as those in flight.
    """
    try:
        with _main_script_hidden():  # submit() is where workers are started
            return pool.submit(_call, fn, item)
    except BrokenProcessPool as broken:
        future = Future()
        future.set_exception(broken)
        return future


def _succeeded(future: Future) -> bool:
    """True for a future that finished with a result (before its pool broke)."""
    return future.done() and not future.cancelled() and future.exception() is None


def _run_alone(fn, item, context, on_death, initializer):
    """`fn(item)` in a fresh process of its own; `on_death(item, exitcode)` if it dies."""
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_send_result, args=(fn, item, sender, initializer))
    with _main_script_hidden():
        process.start()
    sender.close()
    try:
        failed, value = receiver.recv()
    except EOFError:  # the process died before it could answer
        process.join()
        return on_death(item, process.exitcode)
    finally:
        receiver.close()
    process.join()
    if failed:
        raise value
    return value


def _start_worker(parent: int, initializer: Callable[[], None] | None) -> None:
    """Runs first in every worker process: a watch that ends it once `parent` is gone, then
    `initializer`.

    A build killed with SIGKILL (the OOM killer, a preempted job's `kill -9`) cannot stop its
    pool, and its workers would wait for work forever, each holding its memory.
    """
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True).start()
    signal.signal(signal.SIGINT, _on_interrupt)
    if initializer is not None:
        initializer()


_RUNNING = False  # in a worker: whether it runs a task now


def _call(fn, item):
    """A task in a worker, marked as running for `_on_interrupt`."""
    global _RUNNING
    _RUNNING = True
    try:
        return fn(item)
    finally:
        _RUNNING = False


def _on_interrupt(signum, frame) -> None:
    """Ctrl-C in a worker: a running task stops as a KeyboardInterrupt handed back to the build
    process, which reports the interruption once and shuts the pool down; a worker waiting for
    work lets it (interrupted there, it would print a traceback of its own and break the pool)."""
    if _RUNNING:
        raise KeyboardInterrupt


def _exit_when_orphaned(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def _send_result(fn, item, sender, initializer) -> None:
    """Runs in the lone process: sends (failed, result or exception) back.

    A failing initializer is sent back too, and so is a result or exception
    that does not pickle: neither is the item's fault, and reported as a dead
    worker it would make every item a death.
    """
    try:
        if initializer is not None:
            initializer()
        message = (False, fn(item))
    except Exception as e:  # noqa: BLE001 (re-raised in the parent)
        message = (True, e)
    try:
        sender.send(message)
    except Exception as e:  # noqa: BLE001 (re-raised in the parent)
        kind = "exception" if message[0] else "result"
        sender.send((True, RuntimeError(f"the worker's {kind} cannot be sent back: {e!r}")))
    sender.close()


def worker_count(requested: int) -> int:
    """`requested` workers, or one per CPU core for 0."""
    return requested or os.cpu_count() or 1


def threads_per_worker(num_workers: int) -> int:
    """Decoder threads each worker may use without oversubscribing the cores."""
    return max(1, (os.cpu_count() or 1) // num_workers)


def death_reason(exitcode: int | None) -> str:
    """'worker died (signal 9)' for a process killed by a signal, else its exit code."""
    if exitcode is not None and exitcode < 0:
        return f"worker died (signal {-exitcode})"
    return f"worker died (exit code {exitcode})"


@contextlib.contextmanager
def _main_script_hidden():
    """Keeps a spawned worker from re-running this process's main script.

    Spawn re-runs the parent's `__main__` file in every child, and under
    `tfds build` that script imports TensorFlow: 6 s and ~0.5 GB a worker, for
    nothing, since workers only need this package. Without a `__file__` on
    `__main__`, spawn starts children from a bare interpreter.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    spec = getattr(main, "__spec__", None)
    if path is None and spec is None:
        yield
        return
    if path is not None:
        del main.__file__
    main.__spec__ = None
    try:
        yield
    finally:
        if path is not None:
            main.__file__ = path
        main.__spec__ = spec
