"""Audio with the frames: a clip with its audio against the same clip without, build cost, bytes.

Synthetic 340x256 H.264 videos with AAC at 48 kHz stereo, built with `audio_rate=16000` and without
audio. Read: the audio-visual recipe on one pinned core, `ClipSource` and `tfds.load` +
`ClipDecoder.decode_features`, audio=True against audio=False; build: `encoding.encode_video` of
one video with and without audio; bytes: JPEG q90 frames against int16 audio per second.
"""

from __future__ import annotations

import os

import numpy as np

import builds
import timing
import video_sets  # puts tests/ on the path (video_sets.synthetic: the test videos' maker)
from timing import arguments, cpu_time, interleave, median, per_item, ratio, rounds_note, table

RATE = 16000
CLIP = {"num_frames": 16, "stride": 4, "fps": 25, "crop_size": (224, 224), "flip": True}
SEED = 7
CLIPS_PER_MEASURE = 120


def write_av(path: str, frames: np.ndarray, seed: int) -> str:
    """H.264 frames at 25 fps (CRF 23) and AAC at 48 kHz stereo from 0 s to the video's end: a
    note every 0.5 s and noise, the right channel 5 ms behind."""
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(seed)
    count = len(frames) * 48000 // 25
    t = np.arange(count) / 48000
    pitch = 220 * 2 ** (rng.integers(0, 24, 1 + count // 24000) / 12)  # a note every 0.5 s
    tone = 0.3 * np.sin(2 * np.pi * np.cumsum(pitch[(t * 2).astype(int)]) / 48000)
    left = tone + 0.05 * rng.standard_normal(count)
    pcm = (np.stack([left, np.roll(left, 240)], 1) * 32767).astype(np.int16)
    video_sets.write_h264(path, frames, crf=23, preset="veryfast", audio=pcm)
    return path


def sources(out: str, videos: int, frames: int) -> list[str]:
    """The source videos (made once, kept) and a manual dir listing them."""
    folder = os.path.join(out, f"sources_{videos}x{frames}")
    os.makedirs(folder, exist_ok=True)
    size = (video_sets.HEIGHT, video_sets.WIDTH)
    paths = [write_av(os.path.join(folder, f"av{i}.mp4"),
                      video_sets.synthetic.moving_frames(frames, *size, i), i)
             for i in range(videos)]  # fmt: skip
    video_sets.video_set(os.path.join(folder, "manual"), paths)
    return paths


def build_part(paths: list[str], rounds: int) -> list[str]:
    """The build's work per video with and without audio; bytes per second of each."""
    from video_tfrecords import VideoConfig

    def work(path, config):
        return builds.encoded(builds.whole_video(path, config))[0]

    configs = {
        "without audio": VideoConfig(name="default", segment_frames=None),
        "with audio": VideoConfig(name="av", segment_frames=None, audio_rate=RATE),
    }
    stored = {name: [work(p, c)[0] for p in paths] for name, c in configs.items()}  # warm-up
    per_video = lambda c: lambda: cpu_time(lambda: [work(p, c) for p in paths]) / len(paths)
    times = interleave({name: per_video(config) for name, config in configs.items()}, rounds)
    examples = stored["with audio"]
    seconds = sum(len(e["video"]) for e in examples) / 25
    jpeg = sum(len(f) for e in examples for f in e["video"]) / seconds
    audio = sum(e["audio"].nbytes for e in examples) / seconds
    added = [(a - b) / (seconds / len(paths))
             for a, b in zip(times["with audio"], times["without audio"])]  # fmt: skip
    rows = [[
        f"{median(times['without audio']) * 1e3:.0f}", f"{median(times['with audio']) * 1e3:.0f}",
        ratio(times["with audio"], times["without audio"]), f"{median(added) * 1e3:.2f}",
        f"{jpeg / 1e3:.0f}", f"{audio / 1e3:.0f}", f"{audio / jpeg:.3f}",
    ]]  # fmt: skip
    header = ["build ms / video, no audio", "with audio", "ratio", "audio's ms / s of video",
              "JPEG kB/s", "audio kB/s", "audio / JPEG"]  # fmt: skip
    return [f"Build work per {len(examples[0]['video'])}-frame video (decode, resize to 256p, "
            f"JPEG q90; with audio: AAC 48 kHz stereo decoded, resampled to {RATE} Hz mono, "
            f"aligned), CPU ms on one core, {rounds_note(rounds)}; bytes stored per second of "
            "video:", "", *table(header, rows)]  # fmt: skip


def read_part(plain_dir: str, audio_dir: str, rounds: int) -> list[str]:
    """CPU per clip with and without audio, NumPy and tf.data paths."""
    import tensorflow as tf
    import tensorflow_datasets as tfds

    from video_tfrecords import ClipDecoder, ClipSource, EncodedFrames

    variants = {  # (data dir, config, audio)
        "plain build, audio=False": (plain_dir, "plain", False),
        "audio build, audio=False": (audio_dir, "av", False),
        "audio build, audio=True": (audio_dir, "av", True),
    }

    def numpy(data_dir, config, audio):
        source = ClipSource("train", data_dir=data_dir, config=config, audio=audio, **CLIP)
        seeds = iter(range(10**9))
        return lambda: [source.get(i % count, seed=next(seeds))["video"].shape
                        for i in range(clips)]  # fmt: skip

    def graph(data_dir, config, audio):
        decoder = ClipDecoder(audio=audio, **CLIP)
        loaded = tfds.load(
            f"video_tfrecords/{config}", split="train", data_dir=data_dir, download=False,
            decoders={"video": EncodedFrames()},
            read_config=tfds.ReadConfig(try_autocache=False, interleave_cycle_length=1),
        ).repeat()  # fmt: skip
        seeds = tf.data.Dataset.counter(SEED)
        mapped = tf.data.Dataset.zip(loaded, seeds).map(decoder.decode_features)
        examples = iter(mapped)  # one pipeline, read on: its start-up is not a clip's cost
        return lambda: [next(examples)["video"].shape for _ in range(clips)]

    measures, count = {}, len(ClipSource("train", data_dir=audio_dir, config="av", num_frames=1))
    clips = -(-CLIPS_PER_MEASURE // count) * count  # whole passes over the split
    for name, (data_dir, config, audio) in variants.items():
        for path, make in (("NumPy", numpy), ("tf.data", graph)):
            read = make(data_dir, config, audio)
            read()  # warm-up: tracing, shards mapped
            measures[(path, name)] = per_item(read, clips)
    times = interleave(measures, rounds)
    rows = []
    for path in ("NumPy", "tf.data"):
        base = times[(path, "plain build, audio=False")]
        same = times[(path, "audio build, audio=False")]
        for name in variants:
            spent = times[(path, name)]
            against_same = ratio(spent, same) if name.endswith("audio=True") else ""
            rows.append([path, name, f"{median(spent) * 1e3:.2f}", ratio(spent, base),
                         against_same])  # fmt: skip
    header = ["path", "dataset, clip", "ms / clip", "/ plain build", "/ audio build, audio=False"]
    return [f"The audio-visual recipe (16 frames, stride 4, fps=25, 2.56 s of {RATE} Hz mono "
            f"audio; random 224 crop, flip), CPU ms per clip on one core, {count} records of "
            f"340x256 read {clips // count} times a round, {rounds_note(rounds)}:", "",
            *table(header, rows)]  # fmt: skip


def main() -> None:
    """Makes the sources and builds, times the parts, prints their tables."""
    args = arguments(__doc__, "audio", rounds=9, quick_folder=True).parse_args()
    videos, frames = (2, 80) if args.quick else (6, 250)
    paths = sources(args.out, videos, frames)
    manual = os.path.join(os.path.dirname(paths[0]), "manual")
    configs = {"plain": {"name": "plain"}, "av": {"name": "av", "audio_rate": RATE}}
    plain_dir, audio_dir = (builds.built_once(manual, os.path.join(args.out, "data", name), config)
                            for name, config in configs.items())  # fmt: skip
    timing.one_core(args.cpu, tensorflow=True)
    lines = [*read_part(plain_dir, audio_dir, args.rounds), "", *build_part(paths, args.rounds)]
    print("\n".join(lines))


if __name__ == "__main__":
    timing.main(main)
