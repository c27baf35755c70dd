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


def scaling_child(data_dir, num_frames, stride, cpus, batches, connection):
    """Wall-clock clips/s of clip_dataset on `cpus`, after a warm-up."""
    pin(cpus)
    from clip_dataset_speed import BATCH, new_pipeline

    iterator = iter(new_pipeline(data_dir, num_frames, stride, seed=None))
    for _ in range(3):
        next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    connection.send(batches * BATCH / (time.perf_counter() - start))


def user_child(kind, data_dir, num_frames, stride, batches, connection):
    """As a new user runs it: every core, default settings; (CPU ms per clip, clips/s)."""
    from clip_dataset_speed import BATCH, new_pipeline, old_pipeline

    make = new_pipeline if kind == "new" else old_pipeline
    iterator = iter(make(data_dir, num_frames, stride))
    for _ in range(3):
        next(iterator)
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(batches):
        next(iterator)
    clips = batches * BATCH
    cpu = 1000 * (time.process_time() - cpu) / clips
    connection.send((cpu, clips / (time.perf_counter() - wall)))


def report(data_dir, num_frames, stride, batches) -> None:
    """Prints the scaling and the new user's comparison."""
    pin(range(os.cpu_count()))
    cpus = sorted(os.sched_getaffinity(0))
    rates = {}
    for _ in range(3):
        for name, on in (("one core", cpus[-1:]), (f"{len(cpus)} cores", cpus)):
            rate = in_child(scaling_child, data_dir, num_frames, stride, set(on), batches)
            rates.setdefault(name, []).append(rate)
    (one, one_rates), (both, both_rates) = rates.items()
    print(f"\nScaling, {num_frames}-frame clips, unseeded, clips/s of wall time (median of 3): "
          f"{one} {median(one_rates):.1f}, {both} {median(both_rates):.1f}: "
          f"{ratio(both_rates, one_rates)}x")  # fmt: skip
    user = interleave(  # each alone on the machine in turn, unpinned
        {kind: partial(in_child, user_child, kind, data_dir, num_frames, stride, batches)
         for kind in ("old", "new")}, 3,
    )  # fmt: skip
    cpu = {kind: [ms for ms, _ in results] for kind, results in user.items()}
    rate = {kind: [per_second for _, per_second in results] for kind, results in user.items()}
    print(f"As a new user runs it ({num_frames} frames, every core, default settings, median "
          f"of 3): CPU ms per clip, old TF path {median(cpu['old']):.2f}, clip_dataset "
          f"{median(cpu['new']):.2f}: {ratio(cpu['old'], cpu['new'])}x less; clips/s "
          f"{median(rate['old']):.1f} vs {median(rate['new']):.1f}: "
          f"{ratio(rate['new'], rate['old'])}x")  # fmt: skip
