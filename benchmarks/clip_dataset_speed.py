"""`clip_dataset` per core against the JPEG-decode limit and the old TF path, and on 2 cores.

    python benchmarks/clip_dataset_speed.py            # ~6 min on 2 cores, data included
    python benchmarks/clip_dataset_speed.py --quick    # ~1 min
    python benchmarks/clip_dataset_speed.py --manual_dir DIR   # your videos (DIR/train.txt)

Data: synthetic 340x256 videos of 250 frames (tests/synthetic.py), built with
the `default` config (stored as they are, JPEG q90). Every reader runs in its
own process pinned to one core, taking turns (a round: each reads `--clips`
clips of the same length and stride), so a slow spell of a shared machine hits
them alike; ratios are per round, side by side:

- limit: libjpeg-turbo (simplejpeg) decodes each clip's JPEGs from bytes held
  in memory, nothing else (no read, parse, plan, batch or output array);
- clip_dataset, re-reads: one pipeline (batch 8, uint8, shuffled epochs,
  prefetch) read round after round: every record was read before;
- clip_dataset, first reads: a new pipeline every round, one epoch, timed from
  its second batch: every record is read for the first time in it (mapped,
  its checksums outside the frames checked);
- old TF path: what clip_dataset was until 2026-11-24 (and `tfds.load` with a
  `ClipDecoder` still is): TFDS reads and parses every record whole, then the
  clip is decoded in the TF graph.

Times are each process's CPU time (all its threads, tf.data's background work
included: a turn is charged everything its process did since its last turn)
per clip consumed. Then the scaling: clip_dataset's clips per second of wall
time on both cores against one (re-reads, unseeded), and the time per clip it
holds the GIL (its Python time outside the JPEG decoder), which bounds it on
many cores: at most (time per clip) / (GIL-held time per clip) cores' worth.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import time

from timing import settled

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEIGHT, WIDTH, FRAMES = 256, 340, 250
BATCH = 8
# The `tfds` command beside this Python (a venv's, even when the venv is not activated).
TFDS = str(pathlib.Path(sys.executable).with_name("tfds"))
SEED = 7


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer videos and rounds")
    parser.add_argument("--videos", type=int, default=None, help="default 16 (--quick: 4)")
    parser.add_argument("--copies", type=int, default=None, help="default 4 (--quick: 4)")
    parser.add_argument("--rounds", type=int, default=None, help="default 9 (--quick: 3)")
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 64], help="clip lengths")
    parser.add_argument("--stride", type=int, default=2)
    parser.add_argument("--turn", type=int, default=None, help="clips per turn (default 4 epochs)")
    parser.add_argument(
        "--manual_dir", help="your videos instead: a folder with train.txt (built with `default`)"
    )
    parser.add_argument("--work_dir", default=str(ROOT / "benchmarks" / "out" / "clip_dataset"))
    return parser.parse_args()


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pin(cpus) -> None:
    """This process and every thread it starts from now on run on `cpus`."""
    for thread in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(thread), cpus)


def tfds_build(manual: pathlib.Path, data_dir: pathlib.Path) -> None:
    """`tfds build` of a manual dir's train.txt with the `default` config into `data_dir`."""
    log(f"building {manual} in {data_dir}")
    subprocess.run(
        [TFDS, "build", "video_tfrecords", "--imports", "video_tfrecords", "--config=default",
         f"--manual_dir={manual.resolve()}", f"--data_dir={data_dir}"],
        check=True, capture_output=True, cwd=ROOT,
    )  # fmt: skip


def build_manual(work_dir: pathlib.Path, manual: pathlib.Path) -> pathlib.Path:
    """The `default` build of a manual dir's train.txt (once); its data dir."""
    data_dir = work_dir / f"data_{manual.resolve().name}"
    if not (data_dir / "video_tfrecords" / "default").is_dir():
        tfds_build(manual, data_dir)
    return data_dir


def describe(data_dir: pathlib.Path) -> str:
    """Records and stored frame size of the built train split."""
    from video_tfrecords import ClipSource

    source = ClipSource("train", data_dir=str(data_dir), num_frames=1)
    height, width = source[0]["video"].shape[1:3]
    return f"{len(source)} records of {width}x{height}"


def build(work_dir: pathlib.Path, videos: int, copies: int) -> pathlib.Path:
    """The `default` build of `videos` synthetic videos, each listed `copies` times through
    symlinks (so that an epoch has enough records to read for the first time); its data dir."""
    sys.path.insert(0, str(ROOT / "tests"))
    import synthetic

    manual = work_dir / f"manual_{videos}x{copies}"
    data_dir = work_dir / f"data_{videos}x{copies}"
    if (data_dir / "video_tfrecords" / "default").is_dir():
        return data_dir
    manual.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(videos):
        path = manual / f"v{i:03d}.mp4"
        if not path.exists():
            synthetic.write_video(str(path), synthetic.moving_frames(FRAMES, HEIGHT, WIDTH, i))
        for copy in range(copies):
            link = manual / f"v{i:03d}_{copy}.mp4"
            if not link.exists():
                link.symlink_to(path.name)
            lines.append(f"{link.name} c{i % 4}\n")
    (manual / "train.txt").write_text("".join(lines))
    tfds_build(manual, data_dir)
    return data_dir


# ---------------------------------------------------------------------------
# The readers, each in its own process: `serve` answers "read N clips" turns.
# ---------------------------------------------------------------------------


def limit_reader(data_dir, num_frames, stride):
    """Decodes each video's clip from JPEG bytes in memory (the same frames as the others')."""
    import simplejpeg

    from video_tfrecords import ClipSource, clip_decode
    from video_tfrecords.example_parser import parse_example

    source = ClipSource("train", data_dir=data_dir, num_frames=num_frames, stride=stride)
    videos = [
        [bytes(f) for f in parse_example(source.reader.read(i))["video"]]
        for i in range(len(source))
    ]
    clips = [
        [frames[i] for i in clip_decode.plan_np(source.spec, frames, SEED)["indices"].ravel()]
        for frames in videos
    ]
    position = 0

    def read(n):
        nonlocal position
        for _ in range(n):
            for jpeg in clips[position % len(clips)]:
                simplejpeg.decode_jpeg(jpeg, "RGB")
            position += 1

    return read


def new_pipeline(data_dir, num_frames, stride, *, seed=SEED, num_epochs=None):
    import tensorflow as tf

    from video_tfrecords import clip_dataset

    return clip_dataset(
        "train", data_dir=str(data_dir), num_frames=num_frames, stride=stride,
        batch_size=BATCH, dtype=tf.uint8, seed=seed, num_epochs=num_epochs,
    )  # fmt: skip


def old_pipeline(data_dir, num_frames, stride):
    """The TF path clip_dataset was: tfds.load with frames left encoded, ClipDecoder in a map."""
    import tensorflow as tf
    import tensorflow_datasets as tfds

    from video_tfrecords import ClipDecoder, EncodedFrames, fold_in

    examples, info = tfds.load(
        "video_tfrecords", split="train", data_dir=str(data_dir), shuffle_files=True,
        decoders={"video": EncodedFrames()}, with_info=True,
        read_config=tfds.ReadConfig(try_autocache=False, shuffle_seed=SEED),
    )  # fmt: skip
    decoder = ClipDecoder(num_frames, stride=stride)
    decoder.setup(feature=info.features["video"].feature)

    def one_epoch(epoch):
        seed = fold_in(SEED, epoch)
        return examples.shuffle(64, seed=seed).map(lambda ex: (ex, seed))

    def to_clip(ex, seed):
        return decoder.sample(ex["video"], seed, name=ex["filename"]), ex["label"]

    ds = tf.data.Dataset.counter().flat_map(one_epoch)
    ds = ds.map(to_clip, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH)
    return ds.prefetch(tf.data.AUTOTUNE)


def pipeline_reader(make):
    """Reads clips from one long-lived pipeline, batch by batch."""
    iterator = iter(make())
    next(iterator)  # traced and started

    def read(n):
        while n > 0:
            n -= len(next(iterator)[1])

    return read


def first_reads_reader(data_dir, num_frames, stride):
    """A new clip_dataset each turn, one epoch: every record read for the first time in it."""
    turn = 0

    def read(n):
        nonlocal turn
        turn += 1
        iterator = iter(new_pipeline(data_dir, num_frames, stride, seed=turn, num_epochs=1))
        next(iterator)  # not timed: tracing, start-up, the first batch
        start = cpu_seconds()
        count = sum(len(labels) for _, labels in iterator)
        return cpu_seconds() - start, count

    return read


def serve(kind, data_dir, num_frames, stride, cpu, connection):
    """A reader process: pinned to `cpu`, answers each turn with (CPU seconds, clips)."""
    pin({cpu})
    if kind == "limit":
        read = limit_reader(data_dir, num_frames, stride)
    elif kind == "new":
        read = pipeline_reader(lambda: new_pipeline(data_dir, num_frames, stride))
    elif kind == "old":
        read = pipeline_reader(lambda: old_pipeline(data_dir, num_frames, stride))
    else:
        read = first_reads_reader(data_dir, num_frames, stride)
    connection.send("ready")
    last = cpu_seconds()
    while (n := connection.recv()) is not None:
        measured = read(n)
        settled()  # tf.data reads ahead: the turn ends when that is done too
        if measured is None:  # charged all the process did since its last turn
            now = cpu_seconds()
            measured, last = (now - last, n), now
        connection.send(measured)


READERS = {
    "limit": "limit: JPEG decode of the clip's frames in memory",
    "new": "clip_dataset, re-reads",
    "first": "clip_dataset, first reads",
    "old": "old TF path (tfds.load + ClipDecoder)",
}


def per_core(data_dir, num_frames, args, rounds, clips) -> dict[str, list[float]]:
    """ms of CPU per clip, per reader, round by round (readers taking turns on one core).

    A turn is `clips` clips (an epoch: the warm-up turn makes every later read of the
    long-lived pipelines a re-read)."""
    context = multiprocessing.get_context("spawn")
    cpu = max(os.sched_getaffinity(0))
    processes, connections = {}, {}
    for kind in READERS:
        parent, child = context.Pipe()
        process = context.Process(
            target=serve, args=(kind, data_dir, num_frames, args.stride, cpu, child)
        )
        process.start()
        processes[kind], connections[kind] = process, parent
    try:
        for connection in connections.values():
            assert connection.recv() == "ready"
        for connection in connections.values():  # one warm-up turn each
            connection.send(clips)
            connection.recv()
        times = {kind: [] for kind in READERS}
        for r in range(rounds):
            order = list(READERS)[r % len(READERS) :] + list(READERS)[: r % len(READERS)]
            for kind in order:
                connections[kind].send(clips)
                seconds, count = connections[kind].recv()
                times[kind].append(1000 * seconds / count)
            log(f"  T={num_frames} round {r + 1}: " + ", ".join(
                f"{kind} {times[kind][-1]:.2f}" for kind in READERS))  # fmt: skip
        return times
    finally:
        for kind, connection in connections.items():
            connection.send(None)
            processes[kind].join(timeout=60)
            if processes[kind].is_alive():
                processes[kind].kill()


def ratio(a, b):
    values = [x / y for x, y in zip(a, b)]
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def scaling_child(data_dir, num_frames, stride, cpus, batches, connection):
    """Wall-clock clips/s of clip_dataset on `cpus`, after a warm-up, and its GIL-held time."""
    pin(cpus)
    import simplejpeg

    from video_tfrecords import input_pipeline

    iterator = iter(new_pipeline(data_dir, num_frames, stride, seed=None))
    for _ in range(3):
        next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    rate = batches * BATCH / (time.perf_counter() - start)
    # The GIL-held time: each batch read's thread CPU time less that spent in the JPEG
    # decoder (which releases the GIL), measured on a few more batches.
    held, decoding, clips = [0.0], [0.0], [0]
    decode, read = simplejpeg.decode_jpeg, input_pipeline.BatchReader._read

    def timed_decode(*a, **k):
        start = time.thread_time()
        try:
            return decode(*a, **k)
        finally:
            decoding[0] += time.thread_time() - start

    def timed_read(self, indices, seeds):
        start = time.thread_time()
        try:
            return read(self, indices, seeds)
        finally:
            held[0] += time.thread_time() - start
            clips[0] += len(indices)

    simplejpeg.decode_jpeg, input_pipeline.BatchReader._read = timed_decode, timed_read
    for _ in range(batches):
        next(iterator)
    connection.send((rate, (held[0] - decoding[0]) / clips[0] * 1000, held[0] / clips[0] * 1000))


def scaling(data_dir, num_frames, args, batches, repeats=3):
    context = multiprocessing.get_context("spawn")
    both = sorted(os.sched_getaffinity(0))
    results = {"one core": [], f"{len(both)} cores": []}
    for _ in range(repeats):
        for name, cpus in (("one core", {both[-1]}), (f"{len(both)} cores", set(both))):
            parent, child = context.Pipe()
            process = context.Process(
                target=scaling_child,
                args=(data_dir, num_frames, args.stride, cpus, batches, child),
            )
            process.start()
            results[name].append(parent.recv())
            process.join()
    return results


def user_child(kind, data_dir, num_frames, stride, batches, connection):
    """As a new user runs it: every core, default settings; (CPU ms per clip, clips/s)."""
    make = new_pipeline if kind == "new" else old_pipeline
    iterator = iter(make(data_dir, num_frames, stride))
    for _ in range(3):
        next(iterator)
    cpu, wall = cpu_seconds(), time.perf_counter()
    for _ in range(batches):
        next(iterator)
    clips = batches * BATCH
    connection.send((1000 * (cpu_seconds() - cpu) / clips, clips / (time.perf_counter() - wall)))


def as_a_user(data_dir, num_frames, stride, batches, rounds=3):
    """clip_dataset against the old TF path, unpinned, each alone on the machine in turn."""
    context = multiprocessing.get_context("spawn")
    results = {"old": [], "new": []}
    for r in range(rounds):
        for kind in ("old", "new") if r % 2 == 0 else ("new", "old"):
            parent, child = context.Pipe()
            process = context.Process(
                target=user_child, args=(kind, data_dir, num_frames, stride, batches, child)
            )
            process.start()
            results[kind].append(parent.recv())
            process.join()
    return results


def main():
    args = parse_args()
    videos = args.videos or (4 if args.quick else 16)
    copies = args.copies or 4
    rounds = args.rounds or (3 if args.quick else 9)
    if args.manual_dir:
        data_dir = build_manual(pathlib.Path(args.work_dir), pathlib.Path(args.manual_dir))
        what = f"{describe(data_dir)} from {args.manual_dir}"
    else:
        data_dir = build(pathlib.Path(args.work_dir), videos, copies)
        what = (f"{describe(data_dir)} ({videos} videos x {FRAMES} frames, "
                f"each {copies} times)")  # fmt: skip
    records = int(what.split()[0])
    pin({max(os.sched_getaffinity(0))})
    print(f"clip_dataset per core, {what}, "
          f"stride {args.stride}, batch {BATCH}, {rounds} rounds, CPU ms per clip (median)\n")  # fmt: skip
    print("| clip | limit | clip_dataset re-reads | first reads | old TF path "
          "| re-reads / limit | first reads / limit | re-reads / old | first reads / old |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for num_frames in args.lengths:
        times = per_core(data_dir, num_frames, args, rounds, args.turn or 4 * records)
        m = {kind: statistics.median(values) for kind, values in times.items()}
        print(f"| {num_frames} frames | {m['limit']:.2f} | {m['new']:.2f} | {m['first']:.2f} "
              f"| {m['old']:.2f} | {ratio(times['limit'], times['new'])} "
              f"| {ratio(times['limit'], times['first'])} | {ratio(times['old'], times['new'])} "
              f"| {ratio(times['old'], times['first'])} |", flush=True)  # fmt: skip
    os.sched_setaffinity(0, set(range(os.cpu_count())))
    num_frames = args.lengths[0]
    results = scaling(data_dir, num_frames, args, batches=8 if args.quick else 30)
    names = list(results)
    rates = {name: [r[0] for r in values] for name, values in results.items()}
    held = [r[1] for values in results.values() for r in values]
    per_clip = [r[2] for values in results.values() for r in values]
    print(f"\nScaling, {num_frames}-frame clips, unseeded, clips/s of wall time (median of "
          f"{len(rates[names[0]])}): {names[0]} {statistics.median(rates[names[0]]):.1f}, "
          f"{names[1]} {statistics.median(rates[names[1]]):.1f}: "
          f"{ratio(rates[names[1]], rates[names[0]])}x")  # fmt: skip
    user = as_a_user(data_dir, num_frames, args.stride, batches=8 if args.quick else 30)
    cpu = {kind: [r[0] for r in values] for kind, values in user.items()}
    rate = {kind: [r[1] for r in values] for kind, values in user.items()}
    print(f"As a new user runs it ({num_frames} frames, every core, default settings, median "
          f"of {len(cpu['new'])}): CPU ms per clip, old TF path "
          f"{statistics.median(cpu['old']):.2f}, "
          f"clip_dataset {statistics.median(cpu['new']):.2f}: {ratio(cpu['old'], cpu['new'])}x "
          f"less; clips/s {statistics.median(rate['old']):.1f} vs "
          f"{statistics.median(rate['new']):.1f}: {ratio(rate['new'], rate['old'])}x")  # fmt: skip
    print(f"GIL held per clip {statistics.median(held):.2f} ms of "
          f"{statistics.median(per_clip):.2f} ms read thread time: at most "
          f"{statistics.median(per_clip) / statistics.median(held):.0f} cores' worth "
          "of clips at once")  # fmt: skip


if __name__ == "__main__":
    main()
