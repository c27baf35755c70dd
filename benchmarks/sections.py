"""The benchmark's sections: inputs, loading, building, storage, build memory."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from functools import partial

import building
import datagen
import storage
import timing
from timing import Stream, log

NUM_FRAMES = 64
CROP = (224, 224)
BATCH = 8
SHORT_SIDE = 256  # the default config's
QUALITY = 90  # the default config's
LOAD_SHAPE = (256, 340)  # (height, width) of the load videos: Kinetics' usual 340x256
BUILD_SHAPE = (360, 480)  # build sources: 360p, brought down to 256 by the default config
FRAMES = 250  # 10 s at 25 fps

A = "(a) tfds.load + ClipDecoder(64)"
A2 = "(a2) as (a), 2 clips per record read: ClipDecoder(64, num_clips=2)"
A0 = "(a0) as (a) on a bare reader: TFRecordDataset(buffer_size=0), parse the frames only"
B = "(b) TFDS default decode of every frame, slice 64"
C = "(c) OpenCV seek + decode 64 frames of the mp4"
C_LARGE = "(c2) as (c) from the 480x360 build sources, each frame resized to 341x256 as stored"
D = "(d) bound: decode_jpeg of exactly the clip's JPEGs, in memory"
D_CROP = "decode alone: decode_and_crop_jpeg of a clip's JPEGs at a 224x224 box, in memory"
E = "(e) raw uint8 frames in TFRecord, slice 64"
SKIP = "read + parse records only (frames left encoded: EncodedFrames)"
SKIP_TFDS = "read + parse, frames left encoded by tfds.decode.SkipDecoding"
FUSED = "ClipDecoder(64, crop_size=(224, 224))"
UNFUSED = "ClipDecoder(64), then tf.image.random_crop"
FLIP = "ClipDecoder(64, crop_size=(224, 224), flip=True)"
TRAIN = "clip_dataset(batch 8, crop 224): shuffle, batch, prefetch; float32"
TRAIN_U8 = "clip_dataset as above, dtype=uint8"

BOUND_1 = "bound, 1 core: OpenCV decode + resize + imencode"
BUILD_1 = "download_and_prepare, num_workers=1, same core"
BOUND_N = "bound, all cores: one process per core"
BUILD_N = "download_and_prepare, num_workers=0 (one per core)"


@dataclass(frozen=True)
class Size:
    """How much of everything a run does."""

    load_videos: int
    build_videos: int
    long_frames: int
    reps: int
    seconds: float  # minimum duration of one load measurement
    build_reps: int
    gzip_sample: int  # bytes compressed per format to measure the gzip ratio
    cli: bool  # also time `tfds build` from the command line once
    copies: int  # times the load set lists each of its videos


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


def video_sets(out: str, manual_dir: str | None, size: Size) -> dict[str, datagen.VideoSet]:
    """The video sets, with manifests: load (copies), q75 (load videos once), build, long, tiny."""
    videos = os.path.join(out, "videos")
    if manual_dir:
        load = datagen.user_videos(manual_dir, size.load_videos, NUM_FRAMES)
        build = datagen.user_videos(manual_dir, size.build_videos, 1)
    else:
        load = synthetic(videos, "load", size.load_videos, FRAMES, LOAD_SHAPE)
        build = synthetic(videos, "build", size.build_videos, FRAMES, BUILD_SHAPE)
    long = synthetic(videos, "long", 1, size.long_frames, LOAD_SHAPE)
    tiny = synthetic(videos, "tiny", 1, 25, LOAD_SHAPE)
    manual = partial(os.path.join, out, "manual")
    return {
        "load": datagen.video_set(manual("load"), load, size.copies),
        "q75": datagen.video_set(manual("q75"), load),
        "build": datagen.video_set(manual("build"), build),
        "long": datagen.video_set(manual("long"), long),
        "tiny": datagen.video_set(manual("tiny"), tiny),
    }


def synthetic(folder: str, kind: str, count: int, frames: int, shape: tuple) -> list[str]:
    """Synthetic mp4s in a folder named by their size (kept between runs)."""
    height, width = shape
    start = time.perf_counter()
    folder = os.path.join(folder, f"{kind}_{frames}x{height}x{width}")
    paths = datagen.synthetic_videos(folder, count, frames, height, width)
    seconds = time.perf_counter() - start
    log(f"{kind} videos: {count} x {frames} frames {width}x{height} ({seconds:.0f} s)")
    return paths


def build_load_datasets(sets: dict[str, datagen.VideoSet], data_dir: str) -> None:
    """The load set under the default config (q90), its videos once at q75; built afresh."""
    shutil.rmtree(data_dir, ignore_errors=True)
    for name, config in (("load", "default"), ("q75", '{"name": "q75", "jpeg_quality": 75}')):
        start = time.perf_counter()
        manual_dir = sets[name].manual_dir
        building.run_child(
            "build", f"--manual_dir={manual_dir}", f"--data_dir={data_dir}", f"--config={config}"
        )
        examples = sets[name].examples
        log(
            f"built {config}: {examples} examples ({time.perf_counter() - start:.0f} s, start-up included)"
        )


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


def load_section(
    load_set, data_dir: str, raw_dir: str, size: Size, larger_sources=None
) -> tuple[dict, float]:
    """Interleaved clips/s of every loading variant (SKIP in records/s); mean stored frames.

    `larger_sources`, a set of videos larger than the stored frames, adds (c2).
    """
    import loading  # TensorFlow, only here

    videos = loading.stored_frames(data_dir, "default", size.load_videos)
    streams = {
        D: Stream(partial(iter_of, loading.jpeg_bound, videos, NUM_FRAMES)),
        D_CROP: Stream(partial(iter_of, loading.jpeg_bound, videos, NUM_FRAMES, crop=CROP)),
        B: Stream(partial(iter_of, loading.full_decode, data_dir, "default", NUM_FRAMES)),
        C: Stream(partial(loading.opencv_seek, load_set.paths, NUM_FRAMES, os.cpu_count())),
        SKIP: Stream(partial(iter_of, loading.read_parse, data_dir, "default")),
        SKIP_TFDS: Stream(partial(iter_of, loading.read_parse, data_dir, "default", True)),
    }
    if larger_sources is not None:
        seek = partial(loading.opencv_seek, larger_sources.paths, NUM_FRAMES, os.cpu_count())
        streams[C_LARGE] = Stream(partial(seek, short_side=SHORT_SIDE))
    if fits_in_memory(videos):
        raw_paths = loading.write_raw_records(videos, raw_dir)
        streams[E] = Stream(partial(iter_of, loading.raw_frames, raw_paths, NUM_FRAMES))
    if loading.clip_decoder_class() is not None:
        streams.update(clip_decoder_streams(loading, data_dir))
    else:
        log("ClipDecoder is not importable: its variants are left out")
    measures = {
        name: partial(timing.stream_rate, stream, 2, size.seconds, 4)
        for name, stream in streams.items()
    }
    log(f"loading: {len(measures)} variants x {size.reps} reps")
    frames_per_video = sum(map(len, videos)) / len(videos)
    return timing.interleave(measures, size.reps), frames_per_video


def iter_of(make_dataset, *args, **kwargs):
    """An iterator over a fresh `make_dataset(*args, **kwargs)`."""
    return iter(make_dataset(*args, **kwargs))


def clip_decoder_streams(loading, data_dir: str) -> dict[str, Stream]:
    """The variants that need ClipDecoder."""
    import tensorflow as tf

    clips = partial(iter_of, loading.clip_decoder, data_dir, "default", NUM_FRAMES)
    training = partial(iter_of, loading.training_input, data_dir, "default", NUM_FRAMES, CROP)
    return {
        A: Stream(clips),
        A2: Stream(partial(clips, num_clips=2), 2),
        A0: Stream(partial(iter_of, loading.bare_reader, data_dir, "default", NUM_FRAMES)),
        FUSED: Stream(partial(clips, crop_size=CROP)),
        FLIP: Stream(partial(clips, crop_size=CROP, flip=True)),
        UNFUSED: Stream(
            partial(iter_of, loading.then_random_crop, data_dir, "default", NUM_FRAMES, CROP)
        ),
        TRAIN: Stream(partial(training, BATCH, tf.float32), BATCH),
        TRAIN_U8: Stream(partial(training, BATCH, tf.uint8), BATCH),
    }


def fits_in_memory(videos) -> bool:
    """Whether the raw frames of the load set take less than a quarter of the available memory."""
    import psutil
    import tensorflow as tf

    first = tf.io.decode_jpeg(videos[0][0])
    raw = sum(len(v) for v in videos) * int(tf.size(first))
    return raw < psutil.virtual_memory().available / 4


# ---------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------


def build_section(build_set, scratch: str, size: Size) -> dict[str, list[building.Rate]]:
    """Interleaved videos/s of the builder and the bound, on one core and on all."""
    videos, count = build_set.paths, len(build_set.paths)
    build = partial(building.build_rate, build_set.manual_dir)
    measures = {
        BOUND_1: partial(building.bound_one_core, videos, SHORT_SIDE, QUALITY),
        BUILD_1: partial(
            build, os.path.join(scratch, "build1"), {"name": "w1", "num_workers": 1}, count, True
        ),
        BOUND_N: partial(building.bound_parallel, videos, SHORT_SIDE, QUALITY, os.cpu_count()),
        BUILD_N: partial(
            build, os.path.join(scratch, "buildn"), {"name": "w0", "num_workers": 0}, count, False
        ),
    }
    log(f"building: {count} videos, {len(measures)} variants x {size.build_reps} reps")
    return timing.interleave(measures, size.build_reps)


def start_up(build_set, scratch: str, size: Size) -> tuple[float, float | None]:
    """Worker-pool start-up seconds, and wall-clock seconds of `tfds build` (full runs)."""
    pool = building.pool_start_seconds(os.cpu_count())
    cli = None
    if size.cli:
        config = {"name": "cli", "num_workers": 0}
        cli = building.cli_build_seconds(build_set.manual_dir, os.path.join(scratch, "cli"), config)
    return pool, cli


# ---------------------------------------------------------------------------
# Storage and memory
# ---------------------------------------------------------------------------


def storage_section(sets, data_dir: str, raw_dir: str, size: Size) -> list[storage.Footprint]:
    """Bytes per video: JPEG q90 and q75 records, raw uint8 records, source mp4s."""
    raw = (
        sorted(os.path.join(raw_dir, f) for f in os.listdir(raw_dir))
        if os.path.isdir(raw_dir)
        else []
    )
    formats = [
        (storage.Q90, storage.record_files(data_dir, "default"), sets["load"].examples),
        ("JPEG q75 records", storage.record_files(data_dir, "q75"), sets["q75"].examples),
        (storage.RAW, raw, len(raw)),
        ("source mp4 (H.264)", sets["load"].paths, len(sets["load"].paths)),
    ]
    return [
        storage.footprint(name, paths, count, size.gzip_sample)
        for name, paths, count in formats
        if paths
    ]


def memory_section(sets, scratch: str) -> dict:
    """Peak RSS of building the long video in a fresh process, over its post-warm-up baseline."""
    folder = os.path.join(scratch, "rss")
    shutil.rmtree(folder, ignore_errors=True)
    result = building.run_child(
        "rss",
        f"--manual_dir={sets['long'].manual_dir}",
        f"--warmup_dir={sets['tiny'].manual_dir}",
        f"--data_dir={folder}",
    )
    shutil.rmtree(folder, ignore_errors=True)
    return result
