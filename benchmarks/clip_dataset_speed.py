"""`clip_dataset` per core against the JPEG-decode limit and the old TF path, and on 2 cores.

Readers take turns on one core, each in its own pinned process charged all its CPU time since its
last turn: the limit (simplejpeg on the clip's JPEGs in memory), clip_dataset re-reading (one
pipeline) and first reads (a new pipeline a turn), the old TF path. Then `clip_breakdown` and
`clip_dataset_cores`.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import time
from functools import partial

import clip_breakdown
import clip_dataset_cores

import builds
import video_sets
from timing import HERE, arguments, interleave, log, median, one_cpu, pin, ratio, settled, table

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

HEIGHT, WIDTH, FRAMES = 256, 340, 250
BATCH = 8
LENGTHS, STRIDE = (16, 64), 2  # clips of 16 and 64 frames at stride 2
SEED = 7


def dataset(args) -> tuple[str, int, str]:
    """The `default` build of the videos (made once): its data dir, records, and a description."""
    from video_tfrecords import ClipSource

    if args.manual_dir:
        manual_dir = os.path.abspath(args.manual_dir)
        data_dir = os.path.join(args.out, f"data_{os.path.basename(manual_dir)}")
        origin = f"from {args.manual_dir}"
    else:
        videos = 4 if args.quick else 16
        name = f"{videos}x4"
        paths = video_sets.synthetic_videos(
            os.path.join(args.out, "videos"), videos, FRAMES, HEIGHT, WIDTH
        )
        manual = video_sets.video_set(os.path.join(args.out, f"manual_{name}"), paths, 4)
        manual_dir = manual.manual_dir
        data_dir = os.path.join(args.out, f"data_{name}")
        origin = f"({videos} videos x {FRAMES} frames, each 4 times)"
    from video_tfrecords.records.schema import (
        DATASET_VERSION,  # a build of this version: tfds.load's
    )

    if not os.path.isdir(os.path.join(data_dir, "video_tfrecords", "default", DATASET_VERSION)):
        log(f"building {manual_dir} in {data_dir}")
        builds.build_dataset(manual_dir, data_dir)
    source = ClipSource("train", data_dir=data_dir, num_frames=1)
    height, width = source[0]["video"].shape[1:3]
    return data_dir, len(source), f"{len(source)} records of {width}x{height} {origin}"


# The readers, each in its own process: `serve` answers "read N clips" turns.


def limit_reader(data_dir, num_frames, stride):
    """Decodes each video's clip from JPEG bytes in memory (the same frames as the others')."""
    import simplejpeg

    from video_tfrecords import ClipSource
    from video_tfrecords.clips import decode_np
    from video_tfrecords.records.example_parser import parse_example

    source = ClipSource("train", data_dir=data_dir, num_frames=num_frames, stride=stride)
    videos = [[bytes(f) for f in parse_example(source.reader.read(i))["video"]]
              for i in range(len(source))]  # fmt: skip
    clips = [[frames[i] for i in decode_np.plan_np(source.spec, frames, SEED)["indices"].ravel()]
             for frames in videos]  # fmt: skip
    position = 0

    def read(n):
        nonlocal position
        for _ in range(n):
            for jpeg in clips[position % len(clips)]:
                simplejpeg.decode_jpeg(jpeg, "RGB")
            position += 1

    return read


def new_pipeline(data_dir, num_frames, stride, *, seed=SEED, num_epochs=None):
    """clip_dataset: batches of uint8 clips of whole frames (a box of the frames' own size: the
    dataset's frames are all of one size, which a `default` build does not declare)."""
    import tensorflow as tf

    from video_tfrecords import ClipSource, clip_dataset

    frame_size = ClipSource("train", data_dir=str(data_dir), num_frames=1)[0]["video"].shape[1:3]
    return clip_dataset(
        "train", data_dir=str(data_dir), num_frames=num_frames, stride=stride,
        batch_size=BATCH, dtype=tf.uint8, seed=seed, num_epochs=num_epochs,
        crop_size=tuple(frame_size),
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
        start = time.process_time()
        count = sum(len(labels) for _, labels in iterator)
        return time.process_time() - start, count

    return read


def serve(kind, data_dir, num_frames, stride, cpu, connection):
    """A reader process: pinned to `cpu`, answers each turn with (CPU seconds, clips)."""
    pin({cpu})
    make = {"limit": limit_reader, "first": first_reads_reader,
            "new": lambda *args: pipeline_reader(lambda: new_pipeline(*args)),
            "old": lambda *args: pipeline_reader(lambda: old_pipeline(*args))}  # fmt: skip
    read = make[kind](data_dir, num_frames, stride)
    connection.send("ready")
    last = time.process_time()
    while (n := connection.recv()) is not None:
        measured = read(n)
        settled()  # tf.data reads ahead: the turn ends when that is done too
        if measured is None:  # charged all the process did since its last turn
            now = time.process_time()
            measured, last = (now - last, n), now
        connection.send(measured)


# The limit (JPEG decode of the clip's frames in memory), clip_dataset's re-reads and first
# reads, the old TF path (tfds.load + ClipDecoder).
READERS = ("limit", "new", "first", "old")


def per_core(data_dir, num_frames, stride, rounds, clips) -> dict[str, list[float]]:
    """ms of CPU per clip, per reader, round by round (readers taking turns on one core). A turn is
    `clips` clips (an epoch: the warm-up turn makes every later read of the long-lived pipelines a
    re-read)."""
    context = multiprocessing.get_context("spawn")
    processes, connections = {}, {}
    for kind in READERS:
        parent, child = context.Pipe()
        process = context.Process(target=serve, args=(kind, data_dir, num_frames, stride,
                                                      one_cpu(), child))  # fmt: skip
        process.start()
        processes[kind], connections[kind] = process, parent

    def turn(kind):
        connections[kind].send(clips)
        seconds, count = connections[kind].recv()
        return 1000 * seconds / count

    try:
        for connection in connections.values():
            assert connection.recv() == "ready"
        for kind in READERS:  # one warm-up turn each
            turn(kind)
        log(f"{num_frames}-frame clips")
        return interleave({kind: partial(turn, kind) for kind in READERS}, rounds)
    finally:
        for kind, connection in connections.items():
            with contextlib.suppress(OSError):  # a reader that died: the others must still stop
                connection.send(None)
            processes[kind].join(timeout=60)
            if processes[kind].is_alive():
                processes[kind].kill()


def main():
    parser = arguments(__doc__, "clip_dataset", rounds=9, quick_rounds=1, cpu=False)
    parser.add_argument("--manual_dir", help="your videos instead: a folder with train.txt")
    parser.add_argument("--real", action="store_true", help="real footage (bikes.mp4 windows)")
    parser.add_argument("--breakdown", action="store_true", help="only where a clip's time goes")
    args = parser.parse_args()
    if args.real:  # video_sets.kinetics_like_set, kept with the real clips
        args.manual_dir = video_sets.kinetics_like_set(os.path.join(HERE, "out", "real"))
    batches = 8 if args.quick else 30
    data_dir, records, what = dataset(args)
    if records < 2 * BATCH:  # a first-reads turn is one epoch, less its untimed first batch
        sys.exit(f"clip_dataset_speed needs at least {2 * BATCH} records; {what}.")
    if args.breakdown:
        return clip_breakdown.report(data_dir, LENGTHS[0], STRIDE, args.rounds, one_cpu())
    pin({one_cpu()})
    print(f"clip_dataset per core, {what}, stride {STRIDE}, batch {BATCH}, {args.rounds} rounds, "
          "CPU ms per clip (median)\n")  # fmt: skip
    rows = []
    for num_frames in LENGTHS[:1] if args.quick else LENGTHS:  # --quick: a smoke run
        times = per_core(
            data_dir, num_frames, STRIDE, args.rounds, (1 if args.quick else 4) * records
        )
        m = {kind: median(values) for kind, values in times.items()}
        rows.append([
            f"{num_frames} frames",
            *(f"{m[kind]:.2f}" for kind in ("limit", "new", "first", "old")),
            ratio(times["limit"], times["new"]), ratio(times["limit"], times["first"]),
            ratio(times["old"], times["new"]), ratio(times["old"], times["first"]),
        ])  # fmt: skip
    print("\n".join(table([
        "clip", "limit", "clip_dataset re-reads", "first reads", "old TF path", "re-reads / limit",
        "first reads / limit", "re-reads / old", "first reads / old",
    ], rows)))  # fmt: skip
    clip_breakdown.report(data_dir, LENGTHS[0], STRIDE, args.rounds, one_cpu())
    clip_dataset_cores.report(data_dir, LENGTHS[0], STRIDE, batches, min(args.rounds, 3))


if __name__ == "__main__":
    main()
