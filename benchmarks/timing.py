"""Interleaved measurements: repetitions of all variants alternate, so noise hits all alike."""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Stream:
    """A variant measured as a stream: `make()` gives an iterator; each item is `weight` clips."""

    make: Callable[[], Iterator]
    weight: int = 1


def log(*parts) -> None:
    """Progress to stderr (stdout carries only the table)."""
    print(*parts, file=sys.stderr, flush=True)


def stream_rate(stream: Stream, warmup: int, min_seconds: float, min_items: int) -> float:
    """Steady-state clips/s of a fresh iterator, after `warmup` items (start-up excluded)."""
    iterator = stream.make()
    for _ in range(warmup):
        next(iterator)
    count, start = 0, time.perf_counter()
    while True:
        next(iterator)
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and count >= min_items:
            break
    del iterator
    gc.collect()
    return count * stream.weight / elapsed


def settled(step: float = 0.05, limit: float = 10.0) -> float:
    """Waits until this process's threads are idle (tf.data's read-ahead done, say): CPU time
    grew by under 2% of a `step` of sleep, or `limit` seconds passed. Returns the process CPU
    time then, so that work a pass leaves in the background is charged to that pass."""
    now = time.process_time()
    for _ in range(max(1, int(limit / step))):
        before = now
        time.sleep(step)
        now = time.process_time()
        if now - before < step / 50:
            break
    return now


def interleave(measures: dict[str, Callable], reps: int) -> dict[str, list]:
    """Runs every measure `reps` times, rotating the order each repetition."""
    names = list(measures)
    results = {name: [] for name in names}
    for rep in range(reps):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            results[name].append(measures[name]())
            log(f"  rep {rep + 1}/{reps} {name}: {short(results[name][-1])}")
    return results


def short(result) -> str:
    """A measurement for the progress log."""
    return f"{result:.3g}" if isinstance(result, float) else str(result)


@dataclass(frozen=True)
class Ratio:
    """Median, min and max over repetitions of a per-repetition ratio."""

    median: float
    low: float
    high: float

    def __str__(self) -> str:
        """`median (min-max)`, for the table."""
        if self.low == self.high:
            return f"{self.median:.3f}"
        return f"{self.median:.3f} ({self.low:.2f}-{self.high:.2f})"


def ratio(numerator: list[float], denominator: list[float]) -> Ratio:
    """Ratio of two interleaved series, repetition by repetition."""
    values = [a / b for a, b in zip(numerator, denominator)]
    return Ratio(statistics.median(values), min(values), max(values))


def median(values: list[float]) -> float:
    """Median of a series of measurements."""
    return statistics.median(values)
