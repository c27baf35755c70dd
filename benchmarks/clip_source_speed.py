"""ClipSource's speed on one core, beside the JPEG-decode limit and the TF path.

    python benchmarks/clip_source_speed.py            # ~4 min on 2 cores, data included
    python benchmarks/clip_source_speed.py --quick    # < 1 min
    python benchmarks/clip_source_speed.py --crop 224 # clips cropped to 224x224

Makes its own data: synthetic 340x256 videos of 250 frames (tests/synthetic.py),
built with the `default` config as TFRecord and as array_record. The process is
pinned to one CPU core, so every rate is per core. In each round every method
reads one clip of every video, taking turns video by video in a rotating order
(interleaved, so that a slow spell of a shared machine hits them alike), all
with one seed, so that they decode exactly the same frames:

- limit: OpenCV decodes the clip's JPEGs from bytes already in memory (what
  ClipSource decodes with), nothing else: no read, parse, plan or output array;
- ClipSource on the TFRecord build, re-reads: from the second round on a read
  is a view into the memory-mapped file, parsed; the CRC32C of every frame
  the clip reads is checked on every read;
- ClipSource on the TFRecord build, first reads: every round reads through a
  fresh copy of the source (unpickled untimed, as a worker gets it), so every
  read touches its record's pages afresh (the first one maps the file),
  takes the video's stored fingerprint (2.2.0 on) and checks the record's CRC32C
  from its bytes outside the frames and the frames' stored checksums;
- the same, hashing the video's fingerprint from its frames instead (what
  datasets built before `video_fingerprint` was stored get);
- the same with `check_records=True`: every first read checks the record's
  CRC32C over all its bytes instead (what datasets built before
  `frame_crc32c` get);
- ClipSource on the array_record build (array_record's reader checks its
  hashes, decompresses and copies the record on every read);
- TF path: `tfds.load` + `ClipDecoder` (tf.data, TensorFlow's JPEG decoder;
  tf.data checks every record's CRC32C on every read), run in a child process
  pinned to the same core, its rounds taking turns with the others' (below);
- records only: ClipSource's reading and parsing of a record, without
  sampling, re-read and first read (with and without the record's CRC32C),
  to show where the time goes.

The files are in the page cache in every case (no disk reads are timed): before
each clip length's rounds, the shards are dropped from the cache and read back
in order (`settle_page_cache`), so that runs start from the same state.

Times are the process's CPU time (user + system, all its threads, on its one
core): the work per clip, not counting spells when another process had the core
(a shared machine otherwise decides the ratios). Prints one markdown table:
clips/s of CPU time (median of the rounds), minor page faults per clip, and the
ratios of ClipSource to the limit and to the TF path (median, [min-max] over the
rounds).

The measuring process never imports TensorFlow, as a PyTorch or Grain reader
would not: the data are built and the TF path runs in a child process. Running
tf.data in the measuring process (`--tf_here`, how this benchmark ran until
11-23 19:45) leaves glibc's heap handing memory back to the kernel between
clips: each re-read then page-faults its 4 MB output array afresh (about 700
minor faults a clip, against 17), which cost 16-frame re-reads 0.13-0.15 of
the limit.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pathlib
import pickle
import resource
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up lines

import cv2
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import synthetic  # the test videos' maker
from video_tfrecords import ClipSource, clip_decode, dataset_files, example_parser

HEIGHT, WIDTH, FRAMES = 256, 340, 250
SEED = 2024
LIMIT = "limit: OpenCV decode of the clip's JPEGs in memory"
TF_PATH = "TF path: tfds.load + ClipDecoder"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer videos and rounds (< 1 min)")
    parser.add_argument("--videos", type=int, default=None, help="default 12 (--quick: 4)")
    parser.add_argument("--rounds", type=int, default=None, help="default 15 (--quick: 5)")
    parser.add_argument("--clips", type=int, nargs="+", default=[16, 64], help="clip lengths")
    parser.add_argument("--stride", type=int, default=2)
    parser.add_argument("--crop", type=int, default=None, help="square crop side (default none)")
    parser.add_argument("--cpu", type=int, default=None, help="the core to run on (default: last)")
    parser.add_argument("--work_dir", default=None, help="keeps the data here between runs")
    parser.add_argument(
        "--tf_here",
        action="store_true",
        help="build and run the TF path in the measuring process (not in a child)",
    )
    return parser.parse_args()


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def pin_to_one_core(cpu: int | None) -> int:
    """Restricts every thread of this process, and the threads it will start, to one core."""
    cpu = max(os.sched_getaffinity(0)) if cpu is None else cpu
    for thread in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(thread), {cpu})
    return cpu


def make_manual_dir(folder: pathlib.Path, videos: int) -> pathlib.Path:
    """Synthetic 340x256, 250-frame H.264 videos and their train.txt (kept if already there)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(videos):
        path = folder / f"v{i:03d}.mp4"
        if not path.exists():
            synthetic.write_video(str(path), synthetic.moving_frames(FRAMES, HEIGHT, WIDTH, i))
        lines.append(f"{path.name} c{i % 4}\n")
    (folder / "train.txt").write_text("".join(lines))
    return folder


def copy_of(source: ClipSource, kind=ClipSource, **changes) -> ClipSource:
    """A fresh, indexed `kind` of source on `source`'s dataset and clip, with `changes`."""
    return kind(
        "train",
        data_dir=pathlib.Path(source.dataset_dir).parents[2],
        seed=source.spec.seed,
        **{k: getattr(source.spec, k) for k in ("num_frames", "stride", "crop_size")},
        **changes,
    ).index_all()


class HashedFingerprints(ClipSource):
    """ClipSource that hashes each video's fingerprint from its frames, as it does for
    datasets built before `video_fingerprint` was stored (2.2.0)."""

    def _fingerprint(self, record_index: int, frames, parsed: dict) -> int:
        without = {k: v for k, v in parsed.items() if k != dataset_files.FINGERPRINT}
        return super()._fingerprint(record_index, frames, without)


def settle_page_cache(paths) -> None:
    """Drops the files from the page cache and reads them back in order, so that every run
    starts from one state: how many pages a fault maps depends on how a file came into the
    cache (in this VM 8 faults per 6.6 MB record after the build wrote it, 24 after a
    sequential read, up to 100 for pages read back in small pieces)."""
    for path in paths:
        with open(path, "rb") as f:
            os.fsync(f.fileno())  # written pages must be clean to be dropped
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            while f.read(1 << 22):
                pass


def clip_args(num_frames: int, args) -> dict:
    crop = None if args.crop is None else (args.crop, args.crop)
    return {"num_frames": num_frames, "stride": args.stride, "crop_size": crop}


class Limit:
    """OpenCV decoding of exactly the clip's frames, from JPEG bytes held in memory."""

    def __init__(self, source: ClipSource):
        self.videos = [
            [bytes(f) for f in example_parser.parse_example(source.reader.read(i))["video"]]
            for i in range(len(source))
        ]
        self.indices = [  # the frames of each video's clip (the same seed as the others)
            clip_decode.plan_np(source.spec, frames, source.seed)["indices"].ravel()
            for frames in self.videos
        ]
        self.flags = cv2.IMREAD_COLOR_RGB | cv2.IMREAD_IGNORE_ORIENTATION

    def new_round(self) -> None:
        pass

    def one(self, video: int) -> None:
        frames = self.videos[video]
        for i in self.indices[video]:
            cv2.imdecode(np.frombuffer(frames[i], np.uint8), self.flags)


class Source:
    """ClipSource, one clip of a video: re-reads, or first reads in a fresh copy every round."""

    def __init__(self, source: ClipSource, first_reads: bool = False, sample: bool = True):
        self.pickled = pickle.dumps(source.index_all())
        self.source = source
        self.first_reads = first_reads
        self.sample = sample

    def new_round(self) -> None:
        """A first-reads round reads through a fresh copy (as a worker unpickles it), untimed."""
        if self.first_reads:
            self.source = pickle.loads(self.pickled)

    def one(self, video: int) -> None:
        if self.sample:
            self.source[video]
        else:  # records only: read and parse
            example_parser.parse_example(self.source.reader.read(video))


class TfPath:
    """tfds.load + ClipDecoder(seed): TFDS's tf.data reading, TensorFlow's JPEG decoding.

    tf.data works ahead in background threads, so timing `next` on a long-lived
    iterator would count clips made while other methods were being timed. A
    round instead runs two fresh iterators to their end, over 1 pass of the
    split and over 1 + k passes (k passes >= 24 clips), and counts the
    difference: the steady-state time of a pass, without the pipeline's
    start-up and without work carried over.
    """

    def __init__(self, data_dir: str, args_for_clip: dict, seed: int):
        import tensorflow as tf
        import tensorflow_datasets as tfds

        from video_tfrecords import ClipDecoder

        self.as_numpy = tfds.as_numpy
        builder = tfds.builder("video_tfrecords", config="default", data_dir=data_dir)
        videos = builder.info.splits["train"].num_examples
        self.passes = (1, 1 + max(2, -(-24 // videos)))
        args = dict(args_for_clip)
        decoder = ClipDecoder(args.pop("num_frames"), seed=seed, **args)
        dataset = builder.as_dataset(split="train", decoders={"video": decoder})
        video_only = tf.autograph.experimental.do_not_convert(lambda example: example["video"])
        self.clips = dataset.map(video_only)
        self.run()  # traced once, outside the timing

    def time_passes(self, passes: int) -> float:
        start = time.process_time()
        for _ in self.as_numpy(self.clips.repeat(passes)):
            pass
        return time.process_time() - start

    def run(self) -> float:
        """Seconds of one steady-state pass (the caller's own timing is not used)."""
        few, many = (self.time_passes(p) for p in self.passes)
        return (many - few) / (self.passes[1] - self.passes[0])


class TfSide:
    """What needs TensorFlow: building the datasets and the TF path, in this process."""

    def __init__(self):
        self.tf_path = None

    def build(self, manual_dir: str, data_dir: str, file_format: str) -> str:
        """Builds the `default` config (340x256 frames are stored as they are)."""
        import tensorflow_datasets as tfds

        builder = tfds.builder(
            "video_tfrecords", config="default", data_dir=data_dir, file_format=file_format
        )
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(manual_dir=manual_dir)
        )
        return builder.data_dir_root

    def prepare(self, data_dir: str, args_for_clip: dict, seed: int) -> None:
        self.tf_path = TfPath(data_dir, args_for_clip, seed)

    def run(self) -> float:
        return self.tf_path.run()

    def close(self) -> None:
        pass


def _serve(connection, cpu: int) -> None:
    """A child's loop: runs TfSide's methods as the parent asks, returns what they return."""
    pin_to_one_core(cpu)
    side = TfSide()
    while True:
        try:
            name, args = connection.recv()
        except EOFError:  # the parent is gone
            return
        if name == "close":
            return
        try:
            connection.send(("ok", getattr(side, name)(*args)))
        except Exception as e:  # noqa: BLE001 - shown by the parent
            connection.send(("error", repr(e)))


class TfChild:
    """TfSide in a child process (spawned, pinned to the same core); same methods.

    The child waits on the pipe while the parent measures, so its threads take
    no time from the parent's rounds; its pass times are its own CPU time.
    """

    def __init__(self, cpu: int):
        context = multiprocessing.get_context("spawn")
        self.connection, child_end = context.Pipe()
        # Not a daemon: the build starts worker processes of its own.
        self.process = context.Process(target=_serve, args=(child_end, cpu))
        self.process.start()

    def _call(self, name: str, *args):
        self.connection.send((name, args))
        status, value = self.connection.recv()
        if status == "error":
            raise RuntimeError(f"TF child, {name}: {value}")
        return value

    def build(self, *args) -> str:
        return self._call("build", *args)

    def prepare(self, *args) -> None:
        self._call("prepare", *args)

    def run(self) -> float:
        return self._call("run")

    def close(self) -> None:
        try:
            self.connection.send(("close", ()))
        except OSError:  # the child is gone already
            pass
        self.process.join(timeout=60)


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def measure(methods: dict, rounds: int, videos: int):
    """Seconds per round of each method, and minor page faults per clip of the per-video ones.

    Methods with `one(video)` take turns video by video (a rotating order), so
    that a slow spell of a shared machine hits them alike; the TF path (which
    times itself over whole passes) runs before or after them, alternately.
    """
    times = {name: [] for name in methods}
    per_video = [name for name in methods if hasattr(methods[name], "one")]
    whole = [name for name in methods if name not in per_video]
    faults = dict.fromkeys(per_video, 0)
    for r in range(rounds):
        if r % 2:
            for name in whole:
                times[name].append(methods[name].run())
        for name in per_video:
            methods[name].new_round()
        spent = dict.fromkeys(per_video, 0.0)
        for video in range(videos):
            turn = (r * videos + video) % len(per_video)
            for name in per_video[turn:] + per_video[:turn]:
                faults_before = minor_faults()
                start = time.process_time()
                methods[name].one(video)
                spent[name] += time.process_time() - start
                faults[name] += minor_faults() - faults_before
        for name in per_video:
            times[name].append(spent[name])
        if not r % 2:
            for name in whole:
                times[name].append(methods[name].run())
    return times, {name: n / (rounds * videos) for name, n in faults.items()}


def ratio_text(seconds: list[float], other: list[float]) -> str:
    """Speed over `other`'s, per round (other's time / this time): median [min-max]."""
    ratios = np.array(other) / np.array(seconds)
    return f"{np.median(ratios):.3f} [{ratios.min():.3f}-{ratios.max():.3f}]"


def run_all(args, tf_side, manual_dir, work, cpu: int, videos: int, rounds: int) -> None:
    """Builds the data (if not there), then measures and prints the table."""
    data_dirs = {
        fmt: tf_side.build(str(manual_dir), str(work / f"data{videos}_{fmt}"), fmt)
        for fmt in ("tfrecord", "array_record")
    }
    where = "this process" if args.tf_here else "a child process (none in this one)"
    if not args.tf_here and "tensorflow" in sys.modules:
        raise RuntimeError("the measuring process imported TensorFlow")
    print(
        f"\nPer core (pinned to CPU {cpu}); {videos} videos of {FRAMES} frames at "
        f"{WIDTH}x{HEIGHT}, stride {args.stride}, crop {args.crop or 'none'}; "
        f"{rounds} interleaved rounds, CPU time; TensorFlow in {where}. Ratios: speed of the "
        "row over the limit's or the TF path's in the same round, median [min-max].\n"
    )
    print("| clip | method | clips/s | minor faults/clip | / limit | / TF path |")
    print("| --- | --- | --- | --- | --- | --- |")
    for num_frames in args.clips:
        spec = clip_args(num_frames, args)
        sources = {
            fmt: ClipSource("train", data_dir=data_dirs[fmt], seed=SEED, **spec).index_all()
            for fmt in data_dirs
        }
        for source in sources.values():
            settle_page_cache(source.reader.shards.paths)
        tf_side.prepare(data_dirs["tfrecord"], spec, SEED)
        methods = {
            LIMIT: Limit(sources["tfrecord"]),
            "ClipSource, TFRecord, re-reads": Source(sources["tfrecord"]),
            "ClipSource, TFRecord, first reads": Source(sources["tfrecord"], True),
            "ClipSource, TFRecord, first reads, fingerprints hashed (datasets before 2.2.0)": Source(
                copy_of(sources["tfrecord"], HashedFingerprints), True
            ),
            "ClipSource, TFRecord, first reads, check_records=True": Source(
                copy_of(sources["tfrecord"], check_records=True), True
            ),
            "ClipSource, array_record": Source(sources["array_record"]),
            TF_PATH: tf_side,
            "records only, TFRecord re-reads: parse": Source(sources["tfrecord"], sample=False),
            "records only, TFRecord first reads: map + parse (no checks)": Source(
                sources["tfrecord"], True, sample=False
            ),
            "records only, TFRecord first reads: map + record CRC32C + parse": Source(
                copy_of(sources["tfrecord"], check_records=True), True, sample=False
            ),
        }
        log(f"{num_frames}-frame clips: {rounds} rounds")
        times, faults = measure(methods, rounds, videos)
        for name, seconds in times.items():
            rate = videos / np.median(seconds)
            fault_text = f"{faults[name]:.0f}" if name in faults else ""
            ratios = " | "
            if name.startswith("ClipSource"):
                ratios = (
                    f"{ratio_text(seconds, times[LIMIT])} | {ratio_text(seconds, times[TF_PATH])}"
                )
            print(f"| {num_frames} | {name} | {rate:.1f} | {fault_text} | {ratios} |")


def main():
    args = parse_args()
    log(f"uptime: {os.popen('uptime').read().strip()}")
    videos = args.videos or (4 if args.quick else 12)
    rounds = args.rounds or (5 if args.quick else 15)
    cpu = pin_to_one_core(args.cpu)
    work = pathlib.Path(args.work_dir or tempfile.mkdtemp(prefix="clip_source_speed_"))
    log(f"core {cpu}; {videos} videos of {FRAMES} frames {WIDTH}x{HEIGHT}; data in {work}")
    manual_dir = make_manual_dir(work / f"manual{videos}", videos)
    tf_side = TfSide() if args.tf_here else TfChild(cpu)
    try:
        run_all(args, tf_side, manual_dir, work, cpu, videos, rounds)
    finally:
        tf_side.close()
    log(f"uptime: {os.popen('uptime').read().strip()}")


if __name__ == "__main__":
    main()
