"""What the benchmarks share: the command line, pinning, CPU time, interleaved rounds, ratios of
per-round values, markdown tables, progress on stderr."""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def log(*parts) -> None:
    """Progress to stderr (stdout carries only the tables)."""
    print(*parts, file=sys.stderr, flush=True)


def arguments(doc: str, out: str | None = None) -> argparse.ArgumentParser:
    """A benchmark's command line: its docstring's first line, --quick and, given `out`, --out
    (default benchmarks/out/OUT)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    if out:
        parser.add_argument("--out", default=os.path.join(HERE, "out", out), help="work folder")
    return parser


def one_cpu() -> int:
    """The CPU one-core measurements are pinned to (the last one this process may use)."""
    return max(os.sched_getaffinity(0))


def pin(cpus) -> None:
    """This process and every thread it has run on `cpus` (threads started later inherit it)."""
    for thread in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(thread), set(cpus))


def cpu_time(function: Callable) -> float:
    """Process CPU seconds (all threads) of one call."""
    start = time.process_time()
    function()
    return time.process_time() - start


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


def interleave(measures: dict, reps: int) -> dict[object, list]:
    """Runs every measure `reps` times, rotating the order each repetition (round r starts at
    the r-th measure), so that a slow spell of the machine hits all of them alike."""
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
    if isinstance(result, tuple):
        return ", ".join(map(short, result))
    return f"{result:.3g}" if isinstance(result, float) else str(result)


def items_per_second(make: Callable[[], Iterator], warmup: int, seconds: float, items: int):
    """Steady-state items/s of a fresh iterator `make()`, after `warmup` items (start-up
    excluded), over at least `seconds` and `items`."""
    iterator = make()
    for _ in range(warmup):
        next(iterator)
    count, start = 0, time.perf_counter()
    while True:
        next(iterator)
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and count >= items:
            break
    del iterator
    gc.collect()
    return count / elapsed


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


def table(header: list[str], rows: list[list]) -> list[str]:
    """A markdown table's lines."""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
