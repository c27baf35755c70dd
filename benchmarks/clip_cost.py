"""What a 16-frame clip costs against decoding the whole 250-frame video.

    python benchmarks/clip_cost.py

Builds 8 Kinetics-like videos (250 frames, 340x256, H.264) into
benchmarks/out/clip_cost/, then reads them, interleaved, with
`tfds.load(decoders={"video": ClipDecoder(T)})` and with TFDS's default decoding
of every frame, and prints clips/s and the speed-up for T = 16 and 64.
"""

from __future__ import annotations

import os
import pathlib

import tensorflow as tf
import tensorflow_datasets as tfds

import timing
import video_tfrecords
from video_tfrecords import synthetic

OUT = pathlib.Path(__file__).parent / "out" / "clip_cost"


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


def clip_stream(builder, num_frames: int) -> timing.Stream:
    def make():
        ds = builder.as_dataset(
            "train", decoders={"video": video_tfrecords.ClipDecoder(num_frames)}
        ).repeat()
        return iter(
            ds.map(lambda e: tf.shape(e["video"])[0], num_parallel_calls=tf.data.AUTOTUNE).prefetch(
                4
            )
        )

    return timing.Stream(make)


def full_stream(builder, num_frames: int) -> timing.Stream:
    def make():
        def slice_clip(example):
            video = example["video"]
            start = tf.random.uniform([], 0, tf.shape(video)[0] - num_frames + 1, tf.int32)
            return tf.shape(video[start : start + num_frames])[0]

        ds = builder.as_dataset("train").repeat()
        return iter(ds.map(slice_clip, num_parallel_calls=tf.data.AUTOTUNE).prefetch(4))

    return timing.Stream(make)


def main():
    builder = build()
    print(
        "| clip | ClipDecoder clips/s | full decode + slice clips/s | speed-up (median, min-max) |"
    )
    print("| --- | --- | --- | --- |")
    for num_frames in (16, 64):
        streams = {
            "clip": clip_stream(builder, num_frames),
            "full": full_stream(builder, num_frames),
        }
        measures = {
            name: (lambda s=s: timing.stream_rate(s, warmup=8, min_seconds=3.0, min_items=16))
            for name, s in streams.items()
        }
        rates = timing.interleave(measures, reps=3)
        speedup = timing.ratio(rates["clip"], rates["full"])
        clip, full = (sorted(rates[n])[1] for n in ("clip", "full"))
        print(f"| {num_frames} of 250 frames | {clip:.1f} | {full:.1f} | {speedup}x |")
    print(f"\n(nproc={os.cpu_count()})")


if __name__ == "__main__":
    main()
