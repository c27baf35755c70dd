"""Frames smaller than the crop box are enlarged, aspect kept, until they cover it: the same
clip on ClipSource, tfds.load + ClipDecoder and clip_dataset, and the picture of a plain
resize-then-crop."""

import cv2
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import synthetic
from conftest import psnr
from video_tfrecords import ClipDecoder, ClipSource, VideoConfig, clip_dataset

CONFIG = "small_native"
SIZES = [(16, 16), (100, 2000), (2000, 100), (96, 128)]  # (h, w): none holds a 112 box
LENGTH = 12
CROP = (112, 112)


@pytest.fixture(scope="module")
def builder(tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    lines = []
    for i, (height, width) in enumerate(SIZES):
        path = root / "manual" / f"v{i}.mp4"
        synthetic.write_video(str(path), synthetic.moving_frames(LENGTH, height, width, seed=i))
        lines.append(f"{path.name} class{i}\n")
    (root / "manual" / "train.txt").write_text("".join(lines))
    builder = tfds.builder(
        "video_tfrecords", data_dir=str(root / "data"),
        config=VideoConfig(name=CONFIG, short_side=None, num_workers=1),
    )  # fmt: skip
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(root / "manual"))
    )
    return builder


def stored_frames(builder) -> dict[str, np.ndarray]:
    return {
        e["filename"].decode(): e["video"]
        for e in tfds.as_numpy(builder.as_dataset(split="train", shuffle_files=False))
    }


def covering(height: int, width: int, box: int) -> tuple[int, int]:
    """The frame scaled up, aspect kept, so that its short side is the box's side."""
    scale = box / min(height, width)
    return max(box, round(height * scale)), max(box, round(width * scale))


def test_center_clips_are_those_of_a_resize_then_crop(builder):
    source = ClipSource(
        "train", data_dir=builder.data_dir_root, config=CONFIG, num_frames=4, stride=2,
        mode="center", crop="center", crop_size=CROP,
    )  # fmt: skip
    frames = stored_frames(builder)
    for example in source:
        video = frames[example["filename"]]
        height, width = video.shape[1:3]
        start = (len(video) - 7) // 2  # mode="center": (L - span) // 2, span = 3 * 2 + 1
        big_h, big_w = covering(height, width, CROP[0])
        y, x = (big_h - CROP[0]) // 2, (big_w - CROP[1]) // 2
        for t, frame in enumerate(video[start : start + 7 : 2]):
            enlarged = cv2.resize(frame, (big_w, big_h), interpolation=cv2.INTER_LINEAR)
            expected = enlarged[y : y + CROP[0], x : x + CROP[1]]
            assert example["video"][t].shape == (*CROP, 3)
            assert psnr(example["video"][t], expected) >= 30, (example["filename"], t)


@pytest.mark.parametrize(
    "clip_args",
    [
        {"crop_size": CROP, "flip": True},
        {"crop_size": CROP, "short_side": 64},
        {"crop_size": CROP, "short_side": (64, 120), "flip": True},
        {"crop_size": CROP, "mode": "uniform", "num_clips": 2, "num_crops": 3},
        {"crop_size": CROP, "crop": "resized"},
    ],
)
def test_every_path_gives_the_same_clips(builder, clip_args):
    kwargs = {"num_frames": 4, "stride": 2, "mode": "random", "crop": "random", **clip_args}
    source = ClipSource("train", data_dir=builder.data_dir_root, config=CONFIG, seed=5, **kwargs)
    expected = {e["filename"]: e["video"] for e in source}
    decoder = ClipDecoder(seed=5, **kwargs)
    loaded = builder.as_dataset(split="train", decoders={"video": decoder}, shuffle_files=False)
    for example in tfds.as_numpy(loaded):
        np.testing.assert_array_equal(example["video"], expected[example["filename"].decode()])
    dataset = clip_dataset(
        "train", batch_size=len(SIZES), training=False, seed=5, dtype=tf.uint8,
        data_dir=str(builder.data_dir_root), builder_kwargs={"config": CONFIG}, **kwargs,
    )  # fmt: skip
    clips, labels = next(iter(dataset))
    by_label = {int(e["label"]): e["video"] for e in source}
    for clip, label in zip(clips.numpy(), labels.numpy()):
        np.testing.assert_array_equal(clip, by_label[int(label)])
