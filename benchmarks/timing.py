"""What the benchmarks share: the command line, pinning, CPU time, interleaved rounds, ratios of
per-round values, markdown tables, progress on stderr."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def log(*parts) -> None:
    """Progress to stderr (stdout carries only the tables)."""
    print(*parts, file=sys.stderr, flush=True)


class Arguments(argparse.ArgumentParser):
    """A benchmark's command line (`arguments`); `parse_args` fills in the rounds' default and
    moves a --quick run's work into OUT/quick when asked."""

    rounds: tuple[int, int] | None = None  # (default, with --quick)
    quick_folder = False

    def parse_args(self, *args, **kwargs):
        parsed = super().parse_args(*args, **kwargs)
        if self.rounds and parsed.rounds is None:
            parsed.rounds = self.rounds[1] if parsed.quick else self.rounds[0]
        if self.quick_folder and parsed.quick:
            parsed.out = os.path.join(parsed.out, "quick")
        return parsed


def arguments(
    doc: str, out: str | None = None, rounds: int | None = None, quick_rounds: int = 1,
    quick_folder: bool = False, cpu: bool = True,
) -> Arguments:
    """A benchmark's command line: its docstring's first line, --quick; given `out`, --out
    (default benchmarks/out/OUT; `quick_folder`: OUT/quick with --quick); given `rounds`,
    --rounds (that many interleaved rounds, `quick_rounds` with --quick) and, with `cpu`, --cpu
    (the CPU a one-core measure is pinned to)."""
    parser = Arguments(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    if out:
        parser.add_argument("--out", default=os.path.join(HERE, "out", out), help="work folder")
        parser.quick_folder = quick_folder
    if rounds:
        parser.rounds = (rounds, quick_rounds)
        parser.add_argument("--rounds", type=int,
                            help=f"interleaved rounds (default {rounds}; {quick_rounds} --quick)")
        if cpu:
            parser.add_argument("--cpu", type=int, default=one_cpu(), help="the CPU to pin to")
    return parser  # fmt: skip


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


def one_core(cpu: int, tensorflow: bool = False) -> None:
    """This process on `cpu` alone, OpenCV (and, if asked, TensorFlow, before it starts) on one
    thread: a one-core measure's setting."""
    import cv2

    pin({cpu})
    cv2.setNumThreads(1)
    if tensorflow:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)


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


def per_item(read: Callable, items: int) -> Callable[[], float]:
    """A measure: CPU seconds per item of a `read()` of `items` items, with what the process's
    threads (tf.data's) do in the background for it (from settled to settled)."""

    def measure():
        start = settled()
        read()
        return (settled() - start) / items

    return measure


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


def rounds_note(rounds: int) -> str:
    """How a table's times and ratios are taken, in its caption."""
    return (f"median of {rounds} interleaved rounds; ratio: median (min-max) of per-round "
            "ratios")  # fmt: skip


def main(function: Callable[[], None]) -> None:
    """Runs a benchmark's `main`, then logs how long it took."""
    start = time.perf_counter()
    function()
    log(f"done in {time.perf_counter() - start:.0f} s")


def short(result) -> str:
    """A measurement for the progress log."""
    if isinstance(result, tuple):
        return ", ".join(map(short, result))
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


def table(header: list[str], rows: list[list]) -> list[str]:
    """A markdown table's lines."""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
