"""The overview's clip loaders: ClipDecoder, TFDS's full decode, OpenCV seeks, raw frames, and
the JPEG bound."""

from __future__ import annotations

import collections
import os
from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from video_tfrecords import ClipDecoder, EncodedFrames

AUTOTUNE = tf.data.AUTOTUNE
DCT_METHOD = "INTEGER_ACCURATE"  # what ClipDecoder uses


def load(data_dir: str, decoders=None) -> tf.data.Dataset:
    """`tfds.load` of the `default` config's train split, repeated forever."""
    return tfds.load("video_tfrecords/default", split="train", data_dir=data_dir, decoders=decoders,
                     read_config=tfds.ReadConfig(try_autocache=False)).repeat()  # fmt: skip


def clip_decoder(data_dir: str, num_frames: int) -> tf.data.Dataset:
    """(a) Clips decoded by ClipDecoder inside tfds.load."""
    return load(data_dir, {"video": ClipDecoder(num_frames)}).map(lambda ex: ex["video"])


def random_slice(video: tf.Tensor, num_frames: int) -> tf.Tensor:
    """`num_frames` consecutive frames at a random start (the video is long enough)."""
    start = tf.random.uniform([], 0, tf.shape(video)[0] - num_frames + 1, tf.int32)
    return video[start : start + num_frames]


def full_decode(data_dir: str, num_frames: int) -> tf.data.Dataset:
    """(b) TFDS's default decoding of every frame, then a random slice."""
    return load(data_dir).map(
        lambda ex: random_slice(ex["video"], num_frames), num_parallel_calls=AUTOTUNE
    )


def stored_frames(data_dir: str, limit: int) -> list[list[bytes]]:
    """The JPEG bytes of the first `limit` stored videos (read with their frames left encoded)."""
    dataset = load(data_dir, {"video": EncodedFrames()}).take(limit)
    return [list(ex["video"]) for ex in tfds.as_numpy(dataset)]


def clip_starts(lengths: list[int], num_frames: int, count: int, seed: int = 0) -> list[tuple]:
    """`count` random (video, start) pairs of clips inside the videos."""
    rng = np.random.default_rng(seed)
    videos = rng.integers(0, len(lengths), count)
    return [(int(v), int(rng.integers(0, lengths[v] - num_frames + 1))) for v in videos]


def jpeg_bound(videos: list[list[bytes]], num_frames: int, clips: int = 4096) -> tf.data.Dataset:
    """(d) Exactly a clip's JPEGs, held in memory, decoded with all cores. Each clip is one tf.data
    element holding `num_frames` independent decode_jpeg ops (the executor runs them in parallel); a
    parallel map decodes several clips at once. (Faster here than one element per frame.)"""
    offsets = np.cumsum([0] + [len(v) for v in videos])
    frames = tf.constant([f for video in videos for f in video])
    starts = clip_starts([len(v) for v in videos], num_frames, clips)
    indices = np.stack([offsets[v] + s + np.arange(num_frames) for v, s in starts])

    def decode(clip_indices):
        """The clip's frames, one decode op each."""
        data = tf.gather(frames, clip_indices)
        return tf.stack([tf.io.decode_jpeg(data[i], channels=3, dct_method=DCT_METHOD)
                         for i in range(num_frames)])  # fmt: skip

    dataset = tf.data.Dataset.from_tensor_slices(indices).repeat()
    return dataset.map(decode, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)


def fits_in_memory(videos) -> bool:
    """Whether the raw frames of the load set take less than a quarter of the available memory."""
    import psutil

    first = tf.io.decode_jpeg(videos[0][0])
    return sum(len(v) for v in videos) * int(tf.size(first)) < psutil.virtual_memory().available / 4


def write_raw_records(videos: list[list[bytes]], folder: str) -> list[str]:
    """(e) One TFRecord per video holding `tf.io.serialize_tensor` of its uint8 frames."""
    os.makedirs(folder, exist_ok=True)
    paths = []
    for i, video in enumerate(videos):
        path = os.path.join(folder, f"raw_{i:03d}.tfrecord")
        if not os.path.exists(path):
            frames = tf.stack([tf.io.decode_jpeg(f, channels=3, dct_method=DCT_METHOD)
                               for f in video])  # fmt: skip
            with tf.io.TFRecordWriter(path + ".partial") as writer:
                writer.write(tf.io.serialize_tensor(frames).numpy())
            os.replace(path + ".partial", path)
        paths.append(path)
    return paths


def raw_frames(paths: list[str], num_frames: int) -> tf.data.Dataset:
    """(e) Random clips sliced from raw uint8 videos read from TFRecords."""

    def parse(record):
        """A random clip of one record's video."""
        return random_slice(tf.io.parse_tensor(record, tf.uint8), num_frames)

    dataset = tf.data.TFRecordDataset(paths).repeat()
    return dataset.map(parse, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)


def opencv_seek(paths: list[str], num_frames: int, workers: int):
    """(c) Clips read straight from the mp4s: seek with CAP_PROP_POS_FRAMES, decode, BGR->RGB. A
    generator; `workers` threads read clips concurrently (OpenCV releases the GIL)."""
    lengths = [frame_count(p) for p in paths]
    starts = iter(clip_starts(lengths, num_frames, 10**6))
    with ThreadPoolExecutor(workers) as pool:
        pending = collections.deque()
        while True:
            while len(pending) < 2 * workers:
                video, start = next(starts)
                pending.append(pool.submit(read_clip, paths[video], start, num_frames))
            yield pending.popleft().result()


def frame_count(path: str) -> int:
    """Frames the container reports (the synthetic and Kinetics mp4s report them right)."""
    capture = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    count = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
    capture.release()
    return count


def read_clip(path: str, start: int, num_frames: int):
    """`num_frames` RGB frames of `path` from frame `start` on."""
    capture = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    capture.set(cv2.CAP_PROP_POS_FRAMES, start)
    frames = []
    for _ in range(num_frames):
        ok, frame = capture.read()
        if not ok:
            raise RuntimeError(f"{path}: no frame {start + len(frames)}")
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    capture.release()
    return np.stack(frames)
