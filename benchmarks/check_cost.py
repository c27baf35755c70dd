"""Frame header checks (issue 49) against a 16-frame clip's read, NumPy and TF paths.

Each reader (`ClipSource`; `tfds.load` + `ClipDecoder`) with the checks against the same reader
with them patched out, interleaved on one pinned core; then the checks' own CPU time for a clip's
16 frames (timed alone on the NumPy path; on the TF path, a pipeline over frames in memory with and
without the graph's check), which the A/B's noise of a few percent would hide.
"""

from __future__ import annotations

import contextlib
import os

import builds
import timing
import video_sets
from timing import arguments, interleave, median, per_item, ratio, rounds_note, table

RECIPES = {
    "random 224 crop, flip": {"num_frames": 16, "stride": 2, "crop_size": (224, 224),
                              "flip": True},
    "whole frames, centred": {"num_frames": 16, "stride": 2, "mode": "center"},
}  # fmt: skip
CLIPS_PER_MEASURE = 60


@contextlib.contextmanager
def unchecked():
    """The readers without their frame header checks (the benchmark's "off" variant): every
    header passes, and the graph adds no check op."""
    import tensorflow as tf

    from video_tfrecords.clips import jpeg, jpeg_tf

    saved = jpeg.frame_problem, jpeg.Headers.problem, jpeg_tf.checked_headers
    jpeg.frame_problem = jpeg.Headers.problem = lambda *args, **kwargs: None
    jpeg_tf.checked_headers = lambda *args, **kwargs: tf.constant(True)
    try:
        yield
    finally:
        jpeg.frame_problem, jpeg.Headers.problem, jpeg_tf.checked_headers = saved


def numpy_reader(data_dir: str, clip: dict, checked: bool, clips: int):
    from video_tfrecords import ClipSource

    source = ClipSource("train", data_dir=data_dir, config="default", **clip)
    seeds = iter(range(10**9))

    def read():
        with contextlib.nullcontext() if checked else unchecked():
            for i in range(clips):
                source.get(i % len(source), seed=next(seeds))

    return read, source


def graph_reader(data_dir: str, clip: dict, checked: bool, clips: int):
    import tensorflow_datasets as tfds

    from video_tfrecords import ClipDecoder

    with contextlib.nullcontext() if checked else unchecked():  # the graph is traced here
        loaded = tfds.load(
            "video_tfrecords/default", split="train", data_dir=data_dir, download=False,
            decoders={"video": ClipDecoder(seed=7, **clip)},
            read_config=tfds.ReadConfig(try_autocache=False, interleave_cycle_length=1),
        ).repeat()  # fmt: skip
    examples = iter(loaded)  # one pipeline, read on: its start-up is not a clip's cost
    return lambda: [next(examples)["video"].shape for _ in range(clips)]


def graph_checks(data_dir: str, checked: bool, clips: int):
    """The graph's header check alone (`jpeg_tf.checked_headers`) on 16 frames of each record
    (every other one, as stride 2 takes), the records' frames held in memory (TFDS's parse is a
    read's cost, not the check's): with `checked` False, the same pipeline without the check
    (the difference is the check's cost)."""
    import tensorflow as tf
    import tensorflow_datasets as tfds

    from video_tfrecords import EncodedFrames
    from video_tfrecords.clips import backends, jpeg_tf

    ops, wanted = backends.tf_ops(), tf.range(0, 32, 2, dtype=tf.int64)
    loaded = tfds.load("video_tfrecords/default", split="train", data_dir=data_dir, download=False,
                       decoders={"video": EncodedFrames()})  # fmt: skip
    examples = [(e["video"][:32], e["frame_height"], e["frame_width"]) for e in loaded]

    @tf.autograph.experimental.do_not_convert
    def check(frames, height, width):
        chosen = tf.gather(frames, wanted)  # (the decoders' input: gathered either way)
        if not checked:
            return tf.strings.length(chosen)
        passed = jpeg_tf.checked_headers(ops, frames, wanted, (height, width), None, chosen)
        with tf.control_dependencies([passed]):
            return tf.strings.length(chosen)

    records = tf.data.Dataset.from_tensor_slices(tuple(map(tf.stack, zip(*examples))))
    read = iter(records.repeat().map(check))
    return lambda: [next(read) for _ in range(clips)]


def header_checks(source, clip: dict, clips: int):
    """The header checks alone of the clips a source reads: every planned frame's, as
    `decode_np` runs them (`jpeg.Headers`: the same frames, size and order)."""
    from video_tfrecords.clips import jpeg
    from video_tfrecords.records import example_parser

    work = []
    for i in range(clips):
        index = i % len(source)
        frames = example_parser.parse_example(source.reader.read(index))["video"]
        planned = source.plan(index)
        size = tuple(int(s) for s in planned["frame_size"])
        wanted = dict.fromkeys(int(f) for f in planned["indices"].reshape(-1) if f >= 0)
        work.append((frames, list(wanted), size))

    def run():
        for frames, wanted, size in work:
            headers = jpeg.Headers(size)
            for f in wanted:
                headers.problem(frames[f])

    return run


def main() -> None:
    """Builds the dataset once, times each reader with and without its header checks."""
    args = arguments(__doc__, "checks", rounds=9, quick_folder=True).parse_args()
    videos, frames = (2, 60) if args.quick else (6, 250)
    folder = os.path.join(args.out, f"sources_{videos}x{frames}")
    paths = video_sets.synthetic_videos(folder, videos, frames, video_sets.HEIGHT, video_sets.WIDTH)
    manual = video_sets.video_set(os.path.join(folder, "manual"), paths).manual_dir
    data_dir = builds.built_once(manual, os.path.join(args.out, "data"))
    timing.one_core(args.cpu, tensorflow=True)
    clips = CLIPS_PER_MEASURE if not args.quick else 8
    measures, sources = {}, {}
    for recipe, clip in RECIPES.items():
        for checked in (True, False):
            read, sources[recipe] = numpy_reader(data_dir, clip, checked, clips)
            read()  # warm-up: shards mapped, arrays pooled
            measures["NumPy", recipe, checked] = per_item(read, clips)
            read = graph_reader(data_dir, clip, checked, clips)
            read()  # warm-up: the graph's first runs
            measures["tf.data", recipe, checked] = per_item(read, clips)
        alone = header_checks(sources[recipe], clip, clips)
        measures["NumPy checks", recipe, True] = per_item(alone, clips)
    for checked in (True, False):  # the graph's check after TFDS's parse, and the parse alone
        read = graph_checks(data_dir, checked, clips)
        read()
        measures["tf.data checks", "", checked] = per_item(read, clips)
    times = interleave(measures, args.rounds)
    graph_alone = [a - b for a, b in zip(times["tf.data checks", "", True],
                                         times["tf.data checks", "", False])]  # fmt: skip
    rows = []
    for path in ("NumPy", "tf.data"):
        for recipe in RECIPES:
            on, off = times[path, recipe, True], times[path, recipe, False]
            alone = times["NumPy checks", recipe, True] if path == "NumPy" else graph_alone
            cost = f"{median(alone) * 1e6:.0f}"
            rows.append([path, recipe, f"{median(on) * 1e3:.2f}", f"{median(off) * 1e3:.2f}",
                         ratio(on, off), cost, ratio(alone, on)])  # fmt: skip
    header = ["path", "16-frame clip", "ms / clip, checked", "unchecked", "checked / unchecked",
              "checks alone, µs / clip", "checks alone / read"]  # fmt: skip
    print("\n".join([
        f"Frame header checks against a 16-frame clip's read: CPU per clip on one core, "
        f"{len(paths)} records of 340x256 frames read {clips} clips a measure, "
        f"{rounds_note(args.rounds)}:", "", *table(header, rows),
    ]))  # fmt: skip


if __name__ == "__main__":
    timing.main(main)
