"""clip_dataset on every core: clips/s on both cores against one, and against the old TF path as
a new user runs it (one process, default settings). Part of `clip_dataset_speed`."""

from __future__ import annotations

import multiprocessing
import os
import time
from functools import partial

from timing import interleave, median, pin, ratio


def in_child(target, *args):
    """Runs `target(*args, connection)` in a process of its own; what it sends back."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=target, args=(*args, child))
    process.start()
    child.close()  # so that a child that dies ends recv() with EOFError, not a wait
    result = parent.recv()
    process.join()
    return result


def pipeline_child(kind, data_dir, num_frames, stride, batches, cpus, connection):
    """(CPU ms per clip, clips/s of wall time) of a pipeline after 3 warm-up batches: clip_dataset
    ("new"; "unseeded": seed=None) or the old TF path ("old"), on `cpus` (None: every core)."""
    if cpus:
        pin(cpus)
    from clip_dataset_speed import BATCH, new_pipeline, old_pipeline

    make = {"new": new_pipeline, "unseeded": partial(new_pipeline, seed=None), "old": old_pipeline}
    iterator = iter(make[kind](data_dir, num_frames, stride))
    for _ in range(3):
        next(iterator)
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(batches):
        next(iterator)
    clips = batches * BATCH
    cpu = 1000 * (time.process_time() - cpu) / clips
    connection.send((cpu, clips / (time.perf_counter() - wall)))


def report(data_dir, num_frames, stride, batches, rounds: int) -> None:
    """Prints the scaling and the new user's comparison, each the median of `rounds`."""
    pin(range(os.cpu_count()))
    cpus = sorted(os.sched_getaffinity(0))
    run, args = partial(in_child, pipeline_child), (data_dir, num_frames, stride, batches)
    one, both = "one core", f"{len(cpus)} cores"
    rates = {one: [], both: []}
    for _ in range(rounds):
        for name, on in ((one, cpus[-1:]), (both, cpus)):
            rates[name].append(run("unseeded", *args, set(on))[1])
    print(f"\nScaling, {num_frames}-frame clips, unseeded, clips/s of wall time (median of {rounds}): "
          f"{one} {median(rates[one]):.1f}, {both} {median(rates[both]):.1f}: "
          f"{ratio(rates[both], rates[one])}x")  # fmt: skip
    # each alone on the machine in turn, on every core
    user = interleave({kind: partial(run, kind, *args, None) for kind in ("old", "new")}, rounds)
    cpu = {kind: [ms for ms, _ in results] for kind, results in user.items()}
    rate = {kind: [per_second for _, per_second in results] for kind, results in user.items()}
    print(f"As a new user runs it ({num_frames} frames, every core, default settings, median "
          f"of {rounds}): CPU ms per clip, old TF path {median(cpu['old']):.2f}, clip_dataset "
          f"{median(cpu['new']):.2f}: {ratio(cpu['old'], cpu['new'])}x less; clips/s "
          f"{median(rate['old']):.1f} vs {median(rate['new']):.1f}: "
          f"{ratio(rate['new'], rate['old'])}x")  # fmt: skip
