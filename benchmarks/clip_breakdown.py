"""Where a clip_dataset clip's CPU time goes: each step of a batch read timed in the threads that
run it (`Timers`), the rest of the process (tf.data) by difference. Part of `clip_dataset_speed`."""

from __future__ import annotations

import time
from collections import defaultdict

# (label, where it lives, its attribute): each step's inclusive time. Nested steps: a record's
# parse and first-read check run within `interpret`, the header checks and the decoder within
# `decode_rgb`; everything runs within `BatchReader.read`.
STEPS = (
    ("read", "video_tfrecords.input_pipeline:BatchReader", "read"),
    ("record", "video_tfrecords.records.examples:SplitExamples", "read"),
    ("interpret", "video_tfrecords.records.examples:SplitExamples", "interpret"),
    ("parse", "video_tfrecords.records.example_values", "parse_example"),  # Values.of calls it
    ("record_crc", "video_tfrecords.records.split_reader:SplitReader", "check_outside_frames"),
    ("plan", "video_tfrecords.clips.decode_np", "_layout"),
    ("frame_crc", "video_tfrecords.records.checksums:CheckedFrames", "__getitem__"),
    ("decode_rgb", "video_tfrecords.clips.jpeg", "decode_rgb"),
    ("jpeg", "simplejpeg", "decode_jpeg"),
)

# The parts of a clip's CPU time, in the table's order: (label, words), each exclusive.
PARTS = (
    ("record", "record read (index, memory map)"),
    ("parse", "record parse (protobuf wire format)"),
    ("values", "values taken and checked (label, times, sizes...)"),
    ("record_crc", "record CRC32C outside the frames (first read only)"),
    ("plan", "plan (key, frames, box, flip) and its checks"),
    ("frame_crc", "frame CRC32C (the clip's frames)"),
    ("headers", "JPEG header checks (every decoded frame), the decoder's call"),
    ("jpeg", "JPEG decode (libjpeg-turbo, GIL released)"),
    ("assembly", "clip and batch assembly (slots, labels, buffers)"),
    ("tf_data", "tf.data and the rest of the process"),
)


class Timers:
    """Per-step seconds of the threads that ran each step (all threads, summed), the steps'
    functions wrapped in place. Steps are timed with the wall clock (a CPU clock costs a system
    call, about 1 us, which the 50 steps of a clip would add up to a tenth of its time); a batch
    read's CPU time (`time.thread_time`, one pair a batch) then scales the steps within it to the
    CPU time they took (a preempted read thread's wall time so spread over its steps). Not locked:
    clip_dataset on one core reads one batch at a time."""

    def __init__(self):
        import importlib

        self.seconds: dict[str, float] = defaultdict(float)
        self.clips, self.read_cpu = 0, 0.0
        for label, where, name in STEPS:
            module, _, attribute = where.partition(":")
            owner = importlib.import_module(module)
            owner = getattr(owner, attribute) if attribute else owner
            setattr(owner, name, self._timed(label, getattr(owner, name)))

    def _timed(self, label, original):
        seconds, clock, read = self.seconds, time.perf_counter, label == "read"

        def timed(*args, **kwargs):
            start, cpu = clock(), time.thread_time() if read else 0.0
            try:
                return original(*args, **kwargs)
            finally:
                seconds[label] += clock() - start
                if read:  # BatchReader.read(indices, seeds)
                    self.read_cpu += time.thread_time() - cpu
                    self.clips += len(args[1])

        return timed

    def reset(self) -> None:
        self.seconds.clear()
        self.clips, self.read_cpu = 0, 0.0

    def parts(self, process_seconds: float) -> dict[str, float]:
        """ms per clip of each of PARTS, from the steps' times and the process's CPU seconds
        over the same reads."""
        s = dict(self.seconds)
        scale = self.read_cpu / s["read"] if s.get("read") else 0.0  # wall time -> CPU time
        get = lambda label: s.get(label, 0.0) * scale
        parts = {label: get(label) for label in ("record", "parse", "record_crc", "plan",
                                                 "frame_crc", "jpeg")}  # fmt: skip
        parts["values"] = get("interpret") - get("parse") - get("record_crc")
        parts["headers"] = get("decode_rgb") - get("jpeg")  # header checks, the decoder's call
        inside = get("record") + get("interpret") + get("plan") + get("frame_crc")
        parts["assembly"] = get("read") - inside - get("decode_rgb")
        parts["tf_data"] = process_seconds - self.read_cpu
        return {label: 1000 * value / max(self.clips, 1) for label, value in parts.items()}


def breakdown_child(data_dir, num_frames, stride, rounds, cpu, connection):
    """On one pinned core, round by round: the limit, then an epoch of re-reads (a long-lived
    pipeline) and one of first reads (a new pipeline, from its second batch), their steps timed.
    Sends {kind: [ms per clip of each part, per round]}."""
    from clip_dataset_speed import limit_reader, new_pipeline

    from timing import pin, settled
    from video_tfrecords import ClipSource

    pin({cpu})
    limit = limit_reader(data_dir, num_frames, stride)
    timers = Timers()
    iterator = iter(new_pipeline(data_dir, num_frames, stride))
    batch = len(next(iterator)[1])  # (traced and started)
    epoch = len(ClipSource("train", data_dir=str(data_dir), num_frames=1))
    results = {"limit": [], "re-reads": [], "first reads": []}

    def timed(batches) -> dict[str, float]:
        settled()
        timers.reset()
        start = time.process_time()
        for _ in batches:
            pass
        return timers.parts(settled() - start)

    for turn in range(rounds + 1):  # the first a warm-up
        settled()
        start = time.process_time()
        limit(epoch)
        limit_ms = 1000 * (time.process_time() - start) / epoch
        again = timed(next(iterator) for _ in range(max(6, epoch // batch)))  # (--quick: 2)
        first = iter(new_pipeline(data_dir, num_frames, stride, seed=turn + 1, num_epochs=1))
        next(first)  # tracing, start-up, the first batch: not timed
        first = timed(first)
        if turn:
            results["limit"].append({"jpeg": limit_ms})
            results["re-reads"].append(again)
            results["first reads"].append(first)
    connection.send(results)


def report(data_dir, num_frames, stride, rounds, cpu) -> None:
    """Prints the breakdown table of `num_frames`-frame clips (medians of `rounds` rounds)."""
    from clip_dataset_cores import in_child

    from timing import median, table

    results = in_child(breakdown_child, data_dir, num_frames, stride, rounds, cpu)
    kinds = ("re-reads", "first reads")
    cell = lambda kind, part: median([r.get(part, 0.0) for r in results[kind]])
    rows = [["limit: the JPEG decode alone", "", "", f"{cell('limit', 'jpeg'):.3f}"]]
    for part, words in PARTS:
        rows.append([words, *(f"{cell(kind, part):.3f}" for kind in kinds), ""])
    totals = {kind: [sum(r.values()) for r in results[kind]] for kind in kinds}
    rows.append(["**total**", *(f"**{median(totals[kind]):.3f}**" for kind in kinds), ""])
    over = lambda kind: median([sum(r.values()) - r["jpeg"] for r in results[kind]])
    rows.append(["all but the JPEG decode", *(f"{over(kind):.3f}" for kind in kinds), ""])
    print(f"\nWhere a {num_frames}-frame clip's CPU time goes (one pinned core, steps timed in "
          f"the read threads, median of {rounds} rounds; ms per clip):\n")  # fmt: skip
    print("\n".join(table(["part", *kinds, "limit"], rows)))
    held = median([sum(r.values()) - r["jpeg"] - r["tf_data"] for r in results["re-reads"]])
    read = median([sum(r.values()) - r["tf_data"] for r in results["re-reads"]])
    if held <= 0:  # every read ran before the timers started (prefetched: a --quick epoch)
        return print("GIL held per clip: not measured (no read was timed)")
    print(
        f"GIL held per clip {held:.2f} ms of {read:.2f} ms read thread time (re-reads; the "
        f"decoder releases it): at most {read / held:.0f} cores' worth of clips at once"
    )
