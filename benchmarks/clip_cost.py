"""What a 16-frame clip costs against decoding the whole 250-frame video.

    python benchmarks/clip_cost.py [--quick]

Builds 8 Kinetics-like videos (250 frames, 340x256, H.264) into
benchmarks/out/clip_cost/, then reads them, interleaved, with
`tfds.load(decoders={"video": ClipDecoder(T)})` and with TFDS's default decoding
of every frame, and prints clips/s (measured by `tfds.benchmark`) and the speed-up
for T = 16 and 64.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import sys

import tensorflow as tf
import tensorflow_datasets as tfds

import timing
import video_tfrecords

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import synthetic

OUT = pathlib.Path(__file__).parent / "out" / "clip_cost"
AUTOTUNE = tf.data.AUTOTUNE


def build() -> tfds.core.DatasetBuilder:
    """8 distinct 250-frame videos, each listed 4 times (32 examples)."""
    manual = OUT / "manual"
    if not (manual / "train.txt").exists():
        for i in range(8):
            synthetic.write_video(
                str(manual / f"v{i}.mp4"), synthetic.moving_frames(250, 256, 340, i)
            )
        lines = [f"v{i}.mp4 c{i % 4}" for i in range(8)]
        for copy in range(1, 4):
            for i in range(8):
                link = manual / f"v{i}_{copy}.mp4"
                if not link.exists():
                    link.symlink_to(manual / f"v{i}.mp4")
                lines.append(f"v{i}_{copy}.mp4 c{i % 4}")
        (manual / "train.txt").write_text("\n".join(lines) + "\n")
    builder = tfds.builder(
        "video_tfrecords",
        data_dir=str(OUT / "data"),
        config=video_tfrecords.VideoConfig(name="cost"),
    )
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual))
    )
    return builder


def clip_dataset(builder, num_frames: int) -> tf.data.Dataset:
    """Clips decoded by ClipDecoder: only the clip's frames."""
    ds = builder.as_dataset("train", decoders={"video": video_tfrecords.ClipDecoder(num_frames)})
    return ds.repeat().map(lambda e: tf.shape(e["video"])[0], num_parallel_calls=AUTOTUNE)


def full_dataset(builder, num_frames: int) -> tf.data.Dataset:
    """TFDS's default decoding of every frame, then a random slice of `num_frames`."""

    def slice_clip(example):
        video = example["video"]
        start = tf.random.uniform([], 0, tf.shape(video)[0] - num_frames + 1, tf.int32)
        return tf.shape(video[start : start + num_frames])[0]

    return builder.as_dataset("train").repeat().map(slice_clip, num_parallel_calls=AUTOTUNE)


def clips_per_second(dataset: tf.data.Dataset, clips: int) -> float:
    """`tfds.benchmark`'s examples/s over `clips` clips, its first (warm-up) batch excluded."""
    with contextlib.redirect_stdout(sys.stderr):  # it prints its summary; stdout is the table
        result = tfds.benchmark(dataset.take(clips).prefetch(4), batch_size=1)
    return float(result.stats.loc["lasts", "avg"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the clips, 2 rounds")
    args = parser.parse_args()
    scale, reps = (4, 2) if args.quick else (1, 3)
    builder = build()
    print(
        "| clip | ClipDecoder clips/s | full decode + slice clips/s | speed-up (median, min-max) |"
    )
    print("| --- | --- | --- | --- |")
    for num_frames in (16, 64):
        datasets = {
            "clip": clip_dataset(builder, num_frames),
            "full": full_dataset(builder, num_frames),
        }
        clips = {"clip": (400 if num_frames == 16 else 160) // scale, "full": 64 // scale}
        measures = {
            name: (lambda ds=datasets[name], n=clips[name]: clips_per_second(ds, n))
            for name in datasets
        }
        rates = timing.interleave(measures, reps=reps)
        speedup = timing.ratio(rates["clip"], rates["full"])
        clip, full = (timing.median(rates[n]) for n in ("clip", "full"))
        print(f"| {num_frames} of 250 frames | {clip:.1f} | {full:.1f} | {speedup}x |")
    print(f"\n(nproc={os.cpu_count()})")


if __name__ == "__main__":
    main()
