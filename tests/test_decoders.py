"""Tests of clip decoding: `clip_decode` (TF and NumPy paths) and the TFDS `ClipDecoder`.

Videos here are lists of JPEG-encoded noise frames: every frame is distinct, and
decoding the same bytes is deterministic, so a sampled frame is identified by
*exact* equality with the fully decoded video (TF's accurate-IDCT decode, the
reference). `short_side` is checked against the JPEG decoders' own reduced
decodes and against a full decode followed by OpenCV's area resize.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
import textwrap

import cv2
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import box_reference
from video_tfrecords.clips import decode_np, decode_tf, keys
from video_tfrecords.clips.spec import ClipSpec
from video_tfrecords.decoders import ClipDecoder, EncodedFrames
from video_tfrecords.util.errors import CorruptRecordError

H, W = 32, 48


# ----------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------


def make_frames(length, height=H, width=W, seed=0):
    """`length` distinct JPEG frames (4:2:0 chroma, like OpenCV/PIL writers)."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (length, height, width, 3), dtype=np.uint8)
    return [tf.io.encode_jpeg(p, quality=90).numpy() for p in pixels]


def full_decode(frames, ratio=1):
    """Reference: every frame decoded whole by TF (accurate IDCT, like OpenCV/PIL)."""
    return np.stack(
        [
            tf.io.decode_jpeg(f, channels=3, ratio=ratio, dct_method="INTEGER_ACCURATE").numpy()
            for f in frames
        ]
    )


def opencv_half_decode(data):
    """OpenCV's own half-size decode (JPEG DCT scaling), RGB."""
    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_REDUCED_COLOR_2)
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def area_resized(image, height, width):
    return cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)


def frame_ids(clip, full):
    """Index in `full` of each frame of `clip` (exact match), -1 for black frames."""
    ids = []
    for image in clip:
        hits = [i for i in range(len(full)) if np.array_equal(image, full[i])]
        if hits:
            ids.append(hits[0])
        elif not image.any():
            ids.append(-1)
        else:
            raise AssertionError("clip frame matches no frame of the video")
    return ids


def find_box(image, full, size):
    """(index, y, x) such that full[index][y:y+h, x:x+w] == image (exhaustive search)."""
    h, w = size
    for i, frame in enumerate(full):
        for y in range(frame.shape[0] - h + 1):
            for x in range(frame.shape[1] - w + 1):
                if np.array_equal(frame[y : y + h, x : x + w], image):
                    return i, y, x
    raise AssertionError("crop matches no box of the video")


def span(num_frames, stride):
    return (num_frames - 1) * stride + 1


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def camera_like(num_frames, height, width, seed=0):
    """Frames with the spectrum of natural images (1/f) seen through a lens (Gaussian blur).

    Noise or fine synthetic texture is the worst case for any resize; camera
    footage has little energy near the pixel frequency.
    """
    rng = np.random.default_rng(seed)
    fy = np.fft.fftfreq(height)[:, None]
    fx = np.fft.rfftfreq(width)[None, :]
    f = np.hypot(fx, fy)
    f[0, 0] = 1 / max(height, width)
    lens = np.exp(-2 * (np.pi * f) ** 2)  # sigma = 1 px
    frames = []
    for _ in range(num_frames):
        noise = [rng.normal(size=f.shape) + 1j * rng.normal(size=f.shape) for _ in range(3)]
        planes = [np.fft.irfft2(n * lens / f, s=(height, width)) for n in noise]
        image = np.stack([planes[0] + 0.3 * planes[1], planes[0], planes[0] + 0.3 * planes[2]], -1)
        image = np.round((image - image.min()) / (image.max() - image.min()) * 255)
        encoded = cv2.imencode(".jpg", image.astype(np.uint8), [cv2.IMWRITE_JPEG_QUALITY, 90])[1]
        frames.append(encoded.tobytes())
    return frames


@pytest.fixture(scope="module")
def video():
    frames = make_frames(24)
    return frames, tf.constant(frames), full_decode(frames)


# ----------------------------------------------------------------------------
# Clips are runs of the decoded video
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_frames": 8},
        {"num_frames": 8, "stride": 2},
        {"num_frames": 5, "stride": 3, "mode": "center"},
        {"num_frames": 6, "stride": 2, "mode": "uniform", "num_clips": 3},
        {"num_frames": 4, "stride": (1, 4)},
        {"num_frames": 4, "stride": (2, 3), "mode": "uniform", "num_clips": 2},
        {"num_frames": 3, "stride": 2, "num_clips": 2},
        {"num_frames": 1},
        {"num_frames": 24, "mode": "center"},
    ],
)
def test_every_clip_is_a_run_of_the_decoded_video(video, kwargs):
    frames, frames_t, full = video
    decoder = ClipDecoder(**kwargs)
    t = decoder.num_frames
    lo, hi = (decoder.stride,) * 2 if isinstance(decoder.stride, int) else decoder.stride
    for seed in range(6):
        clip = decoder.sample(frames_t, seed).numpy()
        clips = clip if decoder.multi_clip else clip[None]
        assert clips.shape == (decoder.num_clips, t, H, W, 3)
        for c in clips:
            ids = np.array(frame_ids(c, full))
            steps = set(np.diff(ids).tolist()) or {lo}
            assert len(steps) == 1, ids  # one stride per clip
            (step,) = steps
            assert lo <= step <= hi
            assert 0 <= ids[0] <= len(frames) - span(t, step)


def test_sample_decodes_exactly_the_planned_frames(video):
    frames, frames_t, full = video
    decoder = ClipDecoder(4, stride=2)
    for seed in range(5):
        plan = decoder.plan(frames_t, seed)["indices"].numpy()[0]
        assert frame_ids(decoder.sample(frames_t, seed).numpy(), full) == plan.tolist()
        assert frame_ids(decoder.sample_np(frames, seed), full) == plan.tolist()


@pytest.mark.parametrize(
    "policy,expected",
    [
        ("loop", [0, 2, 4, 1, 3, 0]),
        ("repeat_last", [0, 2, 4, 4, 4, 4]),
        ("pad", [0, 2, 4, -1, -1, -1]),
    ],
)
@pytest.mark.parametrize("mode", ["random", "center", "uniform"])
def test_short_video_policies(policy, expected, mode):
    frames = make_frames(5, seed=1)
    full = full_decode(frames)
    decoder = ClipDecoder(6, stride=2, short_video=policy, mode=mode, flip=mode == "uniform")
    clip = decoder.sample(tf.constant(frames), 0).numpy()
    flipped = bool(decoder.plan(tf.constant(frames), 0)["flip"].numpy()[0])
    clip = clip[0] if decoder.multi_clip else clip
    assert frame_ids(clip[:, :, ::-1] if flipped else clip, full) == expected
    if policy == "pad":
        assert not clip[3:].any()
    np.testing.assert_array_equal(decoder.sample_np(frames, 0).reshape(clip.shape), clip)
    # Inside a tf.function (Grappler-optimised graph) repeated frames decode too.
    in_graph = tf.function(lambda v: decoder.sample(v, 0))(tf.constant(frames)).numpy()
    np.testing.assert_array_equal(in_graph.reshape(clip.shape), clip)


# ----------------------------------------------------------------------------
# Errors name the video
# ----------------------------------------------------------------------------


def test_short_video_error_names_the_video():
    frames = make_frames(5, seed=1)
    decoder = ClipDecoder(6, stride=2, short_video="error")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"`clip_007.mp4` has 5 frames.*11"):
        decoder.sample(tf.constant(frames), name="clip_007.mp4")
    with pytest.raises(ValueError, match=r"`clip_007.mp4` has 5 frames.*11"):
        decoder.sample_np(frames, name="clip_007.mp4")
    # Without a name the video is identified by its fingerprint.
    fingerprint = keys.video_fingerprint(frames)
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"fingerprint {fingerprint}"):
        decoder.sample(tf.constant(frames))
    with pytest.raises(ValueError, match=f"fingerprint {fingerprint}.* 5 frames.*spans 11"):
        decoder.sample_np(frames)
    # Inside a tf.data pipeline (graph mode) the error carries the same message.
    ds = tf.data.Dataset.from_tensors(tf.constant(frames)).map(decoder.decode_batch_example)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"has 5 frames.*spans 11"):
        list(ds)
    # A long enough video is fine.
    assert decoder.sample(tf.constant(make_frames(11))).shape == (6, H, W, 3)


def test_empty_video_is_an_error():
    decoder = ClipDecoder(2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="`empty.mp4` has 0 frames: a stored example has 1 to"):
        decoder.sample(tf.constant([], tf.string), name="empty.mp4")
    with pytest.raises(ValueError, match="has 0 frames"):
        decoder.sample_np([])


def test_a_crop_larger_than_the_frame_enlarges_it_on_every_path(video):
    # A 32x48 frame and a 33-row box: the frame is scaled up to 33x50 first (the pixels
    # against a resize-then-crop: tests/test_small_frames.py).
    frames, frames_t, _ = video
    for decoder in (ClipDecoder(2, crop_size=(H + 1, 8), seed=3),
                    ClipDecoder(2, crop_size=(17, 8), short_side=16, seed=3)):  # fmt: skip
        expected = decoder.sample_np(frames)
        assert expected.shape == (2, *decoder.crop_size, 3)
        np.testing.assert_array_equal(decoder.sample(frames_t).numpy(), expected)
        (graph,) = tf.data.Dataset.from_tensors(frames_t).map(decoder.decode_batch_example)
        np.testing.assert_array_equal(graph.numpy(), expected)


@pytest.mark.parametrize("crop_size", [None, (16, 16)])
def test_corrupt_frames_outside_the_window_are_never_decoded(video, crop_size):
    frames, _, full = video
    decoder = ClipDecoder(4, stride=2, mode="center", crop_size=crop_size, crop="center")
    window = decoder.plan_np(frames)["indices"][0].tolist()  # [7, 9, 11, 13]
    broken = [f if i in window else b"corrupt" for i, f in enumerate(frames)]
    clip = decoder.sample(tf.constant(broken)).numpy()
    y, x = ((H - 16) // 2, (W - 16) // 2) if crop_size else (0, 0)
    h, w = crop_size or (H, W)
    np.testing.assert_array_equal(clip, full[window, y : y + h, x : x + w])
    np.testing.assert_array_equal(decoder.sample_np(broken), clip)


@pytest.mark.parametrize("crop_size", [None, (16, 16)])
def test_corrupt_frame_inside_the_window_raises(video, crop_size):
    frames, _, _ = video
    decoder = ClipDecoder(4, stride=2, mode="center", crop_size=crop_size)
    window = decoder.plan_np(frames)["indices"][0].tolist()
    for bad in (window[0], window[2]):
        broken = list(frames)
        broken[bad] = b"not a jpeg"
        message = f"Frame {bad} of video `v.mp4` is not a valid JPEG"
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            decoder.sample(tf.constant(broken), name="v.mp4")
        with pytest.raises(ValueError, match=message):
            decoder.sample_np(broken, name="v.mp4")
        ds = tf.data.Dataset.from_tensors(tf.constant(broken)).map(decoder.decode_batch_example)
        with pytest.raises(tf.errors.InvalidArgumentError, match=f"Frame {bad} of video"):
            list(ds)
    # A truncated JPEG (valid header) fails in both paths; OpenCV alone would
    # return it with grey rows.
    truncated = list(frames)
    truncated[window[1]] = frames[window[1]][:300]
    with pytest.raises(tf.errors.InvalidArgumentError):
        decoder.sample(tf.constant(truncated))
    with pytest.raises(ValueError, match=f"Frame {window[1]} of video `v.mp4` is not a valid"):
        decoder.sample_np(truncated, name="v.mp4")


@pytest.mark.parametrize("crop_size", [None, (16, 16)])
def test_damaged_entropy_data_that_tensorflow_refuses_numpy_refuses_too(crop_size):
    """Bytes overwritten inside the compressed data (markers intact): where TF's decoder
    fails, the NumPy path fails naming the frame; where TF decodes, NumPy gives its
    pixels or refuses the data libjpeg reports as corrupt. (OpenCV alone returned pixels
    for all of them.)"""
    (frame,) = make_frames(1, 64, 96, seed=7)
    spec = ClipSpec(1, mode="center", crop_size=crop_size)
    refused_by_tf = 0
    for fraction in (0.3, 0.4, 0.5, 0.6, 0.7):
        for value in (0x00, 0x55, 0xFF):
            damaged = bytearray(frame)
            at = int(len(frame) * fraction)
            damaged[at : at + 4] = bytes([value]) * 4
            damaged = bytes(damaged)
            try:
                expected = full_decode([damaged])[0]
            except tf.errors.InvalidArgumentError:
                refused_by_tf += 1
                with pytest.raises(
                    ValueError, match="Frame 0 of video `d.mp4` is not a valid JPEG"
                ):
                    decode_np.sample_np(spec, [damaged], name="d.mp4")
                continue
            try:
                clip = decode_np.sample_np(spec, [damaged], name="d.mp4")
            except ValueError as e:
                assert "Frame 0 of video `d.mp4` is not a valid JPEG" in str(e)
                continue
            h, w = crop_size or expected.shape[:2]
            y, x = (expected.shape[0] - h) // 2, (expected.shape[1] - w) // 2
            np.testing.assert_array_equal(clip[0], expected[y : y + h, x : x + w])
    assert refused_by_tf  # the test met damage TensorFlow's decoder refuses


def test_frames_of_another_size_are_a_clear_error_in_numpy():
    frames = make_frames(6) + make_frames(1, 16, 16)
    with pytest.raises(CorruptRecordError, match="Frame 6 of video `v.mp4` is 16x16, but its"):
        decode_np.sample_np(ClipSpec(7, mode="center"), frames, name="v.mp4")


@pytest.mark.parametrize(
    "out",
    [
        np.zeros((2, 4, H, W, 3), np.uint8)[:, ::2],  # strided: a reshape would copy
        np.zeros((4, H, W, 3), np.float32),
        np.zeros((5, H, W, 3), np.uint8),
    ],
    ids=["strided", "float", "wrong size"],
)
def test_an_unusable_out_array_is_refused(out):
    with pytest.raises(ValueError, match=r"out= must be .* shape \(1, 4, "):
        decode_np.sample_np(ClipSpec(4, mode="center"), make_frames(6), out=out)


def test_the_clip_is_decoded_into_out():
    frames, out = make_frames(6), np.zeros((4, H, W, 3), np.uint8)
    clip = decode_np.sample_np(ClipSpec(4, mode="center"), frames, out=out)
    assert np.shares_memory(clip, out)
    np.testing.assert_array_equal(out, full_decode(frames)[1:5])


# ----------------------------------------------------------------------------
# Seeds and fresh randomness
# ----------------------------------------------------------------------------


def _videos(n, length=30, seed=10):
    return [make_frames(length, 8, 8, seed=seed + i) for i in range(n)]


def test_same_seed_same_clip_whatever_the_order():
    videos = tf.constant(_videos(6))
    ds = tf.data.Dataset.from_tensor_slices((tf.range(6), videos))

    def clips(decoder, dataset):
        def plan(i, v):
            p = decoder.plan(v)
            flip = tf.cast(p["flip"], tf.int64)
            return i, tf.concat([p["indices"][0], p["crop_offsets"][0], flip], axis=0)

        return {int(i): p.tolist() for i, p in dataset.map(plan).as_numpy_iterator()}

    kwargs = {"seed": 123, "crop_size": (4, 4), "flip": True}
    in_order = clips(ClipDecoder(4, **kwargs), ds)
    shuffled = clips(ClipDecoder(4, **kwargs), ds.shuffle(6, seed=1))
    rotated = clips(ClipDecoder(4, **kwargs), ds.skip(3).concatenate(ds.take(3)))
    assert in_order == shuffled == rotated
    assert clips(ClipDecoder(4, seed=124, crop_size=(4, 4), flip=True), ds) != in_order
    assert len({tuple(v) for v in in_order.values()}) == 6


def test_same_seed_same_pixels_including_crop_and_flip(video):
    frames, frames_t, _ = video
    kwargs = {"num_frames": 4, "stride": (1, 3), "crop_size": (16, 16), "flip": True}
    a = ClipDecoder(**kwargs, num_clips=2, seed=5).sample(frames_t).numpy()
    b = ClipDecoder(**kwargs, num_clips=2, seed=5).decode_batch_example(frames_t).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, ClipDecoder(**kwargs, num_clips=2, seed=5).sample_np(frames))
    assert not np.array_equal(a, ClipDecoder(**kwargs, num_clips=2, seed=6).sample(frames_t))


def test_without_seed_each_epoch_of_a_pipeline_differs():
    n = 5
    videos = tf.constant(_videos(n))
    decoder = ClipDecoder(4, crop_size=(4, 4))

    def plan(v):
        p = decoder.plan(v)
        return tf.concat([p["indices"][0], p["crop_offsets"][0]], axis=0)

    ds = tf.data.Dataset.from_tensor_slices(videos).map(plan, num_parallel_calls=2)
    items = [p.tolist() for p in ds.repeat(2).as_numpy_iterator()]
    assert items[:n] != items[n:]
    clips = tf.data.Dataset.from_tensor_slices(videos).map(decoder.decode_batch_example)
    clips = list(clips.repeat(2).as_numpy_iterator())
    assert any(not np.array_equal(clips[i], clips[i + n]) for i in range(n))


def test_without_seed_new_iterators_differ_even_with_a_global_seed():
    # With tf.random.set_seed, plain tf.random ops in a map function replay the
    # same values for every new iterator (e.g. every Keras epoch); the decoder
    # draws from a generator whose state lives outside the pipeline instead.
    tf.random.set_seed(0)
    try:
        decoder = ClipDecoder(4)
        ds = tf.data.Dataset.from_tensor_slices(tf.constant(_videos(5))).map(
            lambda v: decoder.plan(v)["indices"][0]
        )
        first = [p.tolist() for p in ds.as_numpy_iterator()]
        second = [p.tolist() for p in ds.as_numpy_iterator()]
        assert first != second
    finally:
        tf.random.set_seed(None)


# ----------------------------------------------------------------------------
# Crops and flips
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("crop", ["random", "center"])
def test_crop_equals_full_decode_then_crop(video, crop):
    frames, frames_t, full = video
    size = (17, 23)  # odd sizes: box edges fall inside 4:2:0 chroma pairs
    decoder = ClipDecoder(3, stride=2, crop_size=size, crop=crop, num_clips=2)
    for seed in range(4):
        plan = {k: v.numpy() for k, v in decoder.plan(frames_t, seed).items()}
        clips = decoder.sample(frames_t, seed).numpy()
        assert clips.shape == (2, 3, 17, 23, 3)
        np.testing.assert_array_equal(decoder.sample_np(frames, seed), clips)
        for c in range(2):
            index, y, x = find_box(clips[c, 0], full, size)
            assert [y, x] == plan["crop_offsets"][c].tolist()
            assert index == plan["indices"][c, 0]
            if crop == "center":
                assert (y, x) == ((H - 17) // 2, (W - 23) // 2)
            for t, i in enumerate(plan["indices"][c]):
                np.testing.assert_array_equal(clips[c, t], full[i, y : y + 17, x : x + 23])


def test_partial_decode_matches_full_decode_at_every_offset():
    # decode_and_crop_jpeg alone differs from decode-then-crop at box edges for
    # 4:2:0 JPEGs; the decoder's margin must make every box exact.
    (frame,) = make_frames(1, seed=4)
    full = full_decode([frame])[0]
    for h, w in [(8, 8), (15, 21), (32, 48)]:
        offsets = np.array([(y, x) for y in range(H - h + 1) for x in range(W - w + 1)])
        windows, boxes = decode_tf._crop_windows_tf(
            tf.constant(offsets, tf.int64), tf.constant([(h, w)], tf.int64), (H, W)
        )
        decode_all = tf.function(
            lambda windows, boxes, h=h, w=w: tf.map_fn(
                lambda row: tf.slice(
                    tf.io.decode_and_crop_jpeg(frame, row[0], dct_method="INTEGER_ACCURATE"),
                    row[1],
                    [h, w, 3],
                ),
                (windows, boxes),
                fn_output_signature=tf.TensorSpec([h, w, 3], tf.uint8),
            )
        )
        for (y, x), box in zip(offsets, decode_all(windows, boxes).numpy()):
            np.testing.assert_array_equal(box, full[y : y + h, x : x + w])
    # Without the margin some of these boxes are not exact (why the margin exists).
    naive_exact = [
        np.array_equal(
            tf.io.decode_and_crop_jpeg(frame, [y, x, 15, 21], dct_method="INTEGER_ACCURATE"),
            full[y : y + 15, x : x + 21],
        )
        for y, x in [(0, 0), (1, 2), (3, 5), (8, 9), (17, 26)]
    ]
    assert not all(naive_exact)


def test_flip_is_one_decision_per_clip(video):
    frames, frames_t, full = video
    decoder = ClipDecoder(3, crop_size=(16, 16), flip=True)
    seen = set()
    for seed in range(12):
        plan = decoder.plan(frames_t, seed)
        clip = decoder.sample(frames_t, seed).numpy()
        np.testing.assert_array_equal(decoder.sample_np(frames, seed), clip)
        flipped = bool(plan["flip"].numpy()[0])
        y, x = plan["crop_offsets"].numpy()[0]
        for t, i in enumerate(plan["indices"].numpy()[0]):
            box = full[i, y : y + 16, x : x + 16]
            np.testing.assert_array_equal(clip[t], box[:, ::-1] if flipped else box)
        seen.add(flipped)
    assert seen == {True, False}


# ----------------------------------------------------------------------------
# NumPy path
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_frames": 5},
        {"num_frames": 4, "stride": (1, 3), "crop_size": (16, 24), "flip": True},
        {"num_frames": 3, "stride": 2, "mode": "uniform", "num_clips": 3, "crop_size": (20, 20)},
        {"num_frames": 4, "num_clips": 3, "crop_size": (9, 13), "flip": True},
        {"num_frames": 10, "stride": 3, "crop_size": (8, 8), "crop": "center"},
        {"num_frames": 10, "stride": 3, "short_video": "pad", "flip": True},
    ],
)
def test_numpy_path_matches_tf_path(video, kwargs):
    frames, frames_t, _ = video
    decoder = ClipDecoder(**kwargs)
    for seed in (0, 1, 2**40, -3):
        tf_plan = decoder.plan(frames_t, seed)
        np_plan = decoder.plan_np(frames, seed)
        for key in ("indices", "crop_offsets", "flip"):
            np.testing.assert_array_equal(tf_plan[key].numpy(), np_plan[key])
        tf_clip = decoder.sample(frames_t, seed).numpy()
        for as_given in (np.array(frames, dtype=object), [memoryview(f) for f in frames]):
            np_clip = decoder.sample_np(as_given, seed)
            assert np_clip.dtype == np.uint8 and np_clip.flags.c_contiguous
            np.testing.assert_array_equal(np_clip, tf_clip)


def test_numpy_path_with_a_known_fingerprint_gives_the_tf_paths_clip(video):
    # A reader that caches each video's fingerprint passes it instead of rehashing.
    frames, frames_t, _ = video
    spec = ClipSpec(4, stride=(1, 3), crop_size=(16, 24), flip=True)
    fingerprint = int(keys.video_fingerprint(frames_t))
    for seed in (0, 7, -3):
        tf_clip = decode_tf.sample_tf(spec, frames_t, seed).numpy()
        np_clip = decode_np.sample_np(spec, frames, seed, fingerprint=fingerprint)
        np.testing.assert_array_equal(np_clip, tf_clip)
    other = decode_np.plan_np(spec, frames, 7, fingerprint=fingerprint + 1)
    assert not np.array_equal(other["indices"], decode_np.plan_np(spec, frames, 7)["indices"])


def test_numpy_path_runs_without_tensorflow(video):
    frames, frames_t, _ = video
    spec = {"num_frames": 4, "crop_size": (16, 16), "flip": True, "seed": 3, "short_side": 16}
    script = textwrap.dedent(
        f"""
        import pickle, sys

        class NoTensorFlow:
            def find_spec(self, name, path=None, target=None):
                if name == "tensorflow" or name.startswith("tensorflow."):
                    raise ImportError("TensorFlow is blocked in this process")

        sys.meta_path.insert(0, NoTensorFlow())
        from video_tfrecords.clips import decode_np, decode_tf, keys, resize
        from video_tfrecords.clips.spec import ClipSpec

        frames = pickle.loads(sys.stdin.buffer.read())
        clip = decode_np.sample_np(ClipSpec(**{spec!r}), frames)
        assert "tensorflow" not in sys.modules
        sys.stdout.buffer.write(pickle.dumps((clip, keys.fold_in(3, 1))))
        """
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=pickle.dumps(frames),
        capture_output=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    clip, folded = pickle.loads(done.stdout)
    expected = decode_tf.sample_tf(ClipSpec(**spec), frames_t).numpy()
    np.testing.assert_array_equal(clip, expected)  # half-size decode exactly: no resize step
    assert folded == keys.fold_in(3, 1)


def test_decoder_survives_pickling_after_use(video):
    frames, frames_t, _ = video
    decoder = ClipDecoder(3, flip=True)
    decoder.sample(frames_t)  # draws from the TF generator
    clone = pickle.loads(pickle.dumps(decoder))
    assert clone.sample(frames_t).shape == (3, H, W, 3)
    assert clone.sample_np(frames).shape == (3, H, W, 3)
    seeded = ClipDecoder(3, seed=9, crop_size=(8, 8))
    clone = pickle.loads(pickle.dumps(seeded))
    assert clone.spec == seeded.spec
    np.testing.assert_array_equal(clone.sample_np(frames), seeded.sample(frames_t).numpy())


# ----------------------------------------------------------------------------
# short_side: read-time resize
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("crop_size", [None, (12, 20)])
def test_short_side_at_half_size_is_the_jpeg_decoders_own_half_size_decode(crop_size):
    frames = make_frames(12, 32, 48, seed=7)
    half_tf = full_decode(frames, ratio=2)
    half_cv = np.stack([opencv_half_decode(f) for f in frames])
    spec = ClipSpec(4, stride=2, num_clips=2, crop_size=crop_size, flip=True, short_side=16)
    for seed in range(4):
        plan = decode_np.plan_np(spec, frames, seed)
        tf_clips = decode_tf.sample_tf(spec, tf.constant(frames), seed).numpy()
        np_clips = decode_np.sample_np(spec, frames, seed)
        h, w = crop_size or (16, 24)
        assert tf_clips.shape == np_clips.shape == (2, 4, h, w, 3)
        for c in range(2):
            y, x = plan["crop_offsets"][c]
            for reference, clips in ((half_tf, tf_clips), (half_cv, np_clips)):
                expected = reference[plan["indices"][c], y : y + h, x : x + w]
                if plan["flip"][c]:
                    expected = expected[:, :, ::-1]
                np.testing.assert_array_equal(clips[c], expected)


def test_short_side_keeps_the_frames_and_flips_and_places_the_box_in_the_resized_frame():
    frames = make_frames(30, 40, 60, seed=8)
    for crop in ("random", "center"):
        base = ClipSpec(4, stride=(1, 3), num_clips=3, crop_size=(10, 12), crop=crop, flip=True)
        resized = dataclasses.replace(base, short_side=20)  # frames become 20x30
        for seed in range(20):
            a = decode_np.plan_np(base, frames, seed)
            b = decode_np.plan_np(resized, frames, seed)
            np.testing.assert_array_equal(a["indices"], b["indices"])
            np.testing.assert_array_equal(a["flip"], b["flip"])
            offsets = b["crop_offsets"]
            assert (offsets >= 0).all() and (offsets <= [20 - 10, 30 - 12]).all()
            if crop == "center":
                assert offsets.tolist() == [[5, 9]] * 3


@pytest.mark.parametrize(
    "size,short_side,ratio",
    [
        ((32, 48), 12, 2),  # half size (16x24), then area to 12x18
        ((32, 47), 16, 1),  # odd width: full size, then area
        ((48, 32), 16, 2),  # portrait, half size exactly
        ((32, 48), 24, 1),  # more than half: full size, then area
        ((16, 24), 24, 1),  # upscaling
        ((64, 96), 16, 4),  # a quarter (16x24) exactly
        ((64, 96), 8, 8),  # an eighth (8x12) exactly
    ],
)
@pytest.mark.parametrize("crop_size", [None, (8, 8)])
def test_short_side_geometry_and_pixels(size, short_side, ratio, crop_size):
    frames = make_frames(8, *size, seed=9)
    decoded = full_decode(frames, ratio)  # the JPEG decoder's own DCT-scaled decode
    spec = ClipSpec(3, stride=2, crop_size=crop_size, short_side=short_side, num_clips=2)
    short = min(size)
    out_h, out_w = ((s * short_side + short // 2) // short for s in size)
    assert min(out_h, out_w) == short_side
    for seed in range(3):
        plan = decode_np.plan_np(spec, frames, seed)
        np_clips = decode_np.sample_np(spec, frames, seed)
        tf_clips = decode_tf.sample_tf(spec, tf.constant(frames), seed).numpy()
        assert np_clips.shape == tf_clips.shape == (2, 3, *(crop_size or (out_h, out_w)), 3)
        # TF's and OpenCV's resizes round differently: within one grey level.
        assert np.abs(np_clips.astype(int) - tf_clips).max() <= 1
        for c in range(2):
            y, x = plan["crop_offsets"][c]
            for t, i in enumerate(plan["indices"][c]):
                if crop_size is None:  # the whole frame, resized
                    reference = decoded[i]
                    if reference.shape[:2] != (out_h, out_w):
                        reference = area_resized(reference, out_h, out_w)
                else:  # the box alone, resized from the decoded frame
                    reference = box_reference.resized_box(
                        decoded[i], (y, x), crop_size, (out_h, out_w), crop_size
                    )
                np.testing.assert_array_equal(np_clips[c, t], reference)


def test_a_box_resized_alone_is_close_to_the_box_of_the_resized_frame():
    # Resizing a 224-like box instead of the frame moves its edges by < half a source pixel.
    frames = camera_like(3, 96, 128)
    full = full_decode(frames)
    for short_side in ((112, 140), 120, 80):
        spec = ClipSpec(3, short_side=short_side, crop_size=(64, 64), num_clips=4, seed=5)
        plan = decode_np.plan_np(spec, frames)
        clips = decode_np.sample_np(spec, frames)
        sides = plan.get("short_side", [short_side] * 4)
        for c in range(4):
            out_h, out_w = int(sides[c]), (128 * int(sides[c]) + 48) // 96
            y, x = plan["crop_offsets"][c]
            for t, i in enumerate(plan["indices"][c]):
                frame = cv2.resize(full[i], (out_w, out_h), interpolation=cv2.INTER_LINEAR)
                assert psnr(clips[c, t], frame[y : y + 64, x : x + 64]) >= 30.0, (short_side, c)


@pytest.mark.parametrize("short_side,min_psnr", [(64, 45.0), (48, 40.0), (32, 45.0), (16, 45.0)])
def test_short_side_psnr_against_full_decode_then_area_resize(short_side, min_psnr):
    frames = camera_like(4, 128, 192)
    spec = ClipSpec(4, mode="center", short_side=short_side)
    clips = {"numpy": decode_np.sample_np(spec, frames)}
    clips["tf"] = decode_tf.sample_tf(spec, tf.constant(frames)).numpy()
    out_w = 192 * short_side // 128
    reference = np.stack([area_resized(f, short_side, out_w) for f in full_decode(frames)])
    for path, clip in clips.items():
        assert clip.shape == reference.shape
        assert psnr(clip, reference) >= min_psnr, path


def test_short_side_in_tf_data_with_frame_sizes_known_only_at_run_time():
    # Videos of several sizes in one pipeline: the graph picks the DCT scaling per video.
    videos = [make_frames(6, 32, 48, 1), make_frames(6, 30, 45, 2), make_frames(6, 64, 40, 3)]
    for crop_size in (None, (8, 8)):
        decoder = ClipDecoder(3, seed=4, short_side=12, crop_size=crop_size)
        for frames in videos:
            ds = tf.data.Dataset.from_tensors(tf.constant(frames)).map(decoder.decode_batch_example)
            (in_graph,) = list(ds.as_numpy_iterator())
            eager = decoder.sample(tf.constant(frames)).numpy()  # sizes read eagerly: one branch
            np.testing.assert_array_equal(in_graph, eager)
            assert np.abs(decoder.sample_np(frames).astype(int) - in_graph).max() <= 1


# ----------------------------------------------------------------------------
# Shapes and arguments
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,shape",
    [
        ({"num_frames": 4, "crop_size": (4, 6)}, (2, 4, 4, 6, 3)),
        (
            {"num_frames": 4, "mode": "uniform", "num_clips": 3, "crop_size": (8, 8)},
            (2, 3, 4, 8, 8, 3),
        ),
        (
            {"num_frames": 2, "num_clips": 2, "stride": (1, 3), "flip": True, "crop_size": (5, 5)},
            (2, 2, 2, 5, 5, 3),
        ),
        ({"num_frames": 4}, (2, 4, None, None, 3)),
        ({"num_frames": 4, "short_side": 4}, (2, 4, None, None, 3)),
    ],
)
def test_static_shapes_after_batching(kwargs, shape):
    videos = tf.constant(_videos(3, length=12, seed=0))
    decoder = ClipDecoder(**kwargs)
    ds = tf.data.Dataset.from_tensor_slices(videos).map(decoder.decode_batch_example)
    ds = ds.batch(2, drop_remainder=True)
    assert tuple(ds.element_spec.shape) == shape
    assert ds.element_spec.dtype == tf.uint8
    assert next(iter(ds)).shape[0] == 2


def test_decoder_arguments_are_those_of_clip_spec():
    decoder = ClipDecoder(4, stride=[1, 3], crop_size=[8, 8], seed=np.int64(3), short_side=112)
    assert decoder.spec == ClipSpec(4, stride=(1, 3), crop_size=(8, 8), seed=3, short_side=112)
    assert (decoder.num_frames, decoder.stride, decoder.short_side) == (4, (1, 3), 112)
    assert decoder.seed == 3
    assert decoder.min_span == 4 and not decoder.multi_clip
    assert repr(decoder).startswith("ClipDecoder(num_frames=4, stride=(1, 3)")
    with pytest.raises(ValueError, match="stride"):
        ClipDecoder(4, stride=0)
    with pytest.raises(TypeError):
        ClipDecoder(4, crop_sizes=(8, 8))  # a misspelt argument is not ignored
    with pytest.raises(AttributeError):
        decoder.not_an_argument  # noqa: B018


# ----------------------------------------------------------------------------
# Through TFDS feature decoding
# ----------------------------------------------------------------------------


def _video_features(encoding="jpeg", height=H, width=W):
    return tfds.features.FeaturesDict(
        {
            "video": tfds.features.Video(shape=(None, height, width, 3), encoding_format=encoding),
            "label": tfds.features.ClassLabel(num_classes=3),
        }
    )


def test_decoder_in_tfds_feature_decoding():
    features = _video_features()
    rng = np.random.default_rng(5)
    videos = [rng.integers(0, 256, (n, H, W, 3), dtype=np.uint8) for n in (9, 12, 10)]
    serialized = [
        features.serialize_example({"video": v, "label": i}) for i, v in enumerate(videos)
    ]
    # The bytes TFDS stored, decoded whole as the reference.
    skip = {"video": tfds.decode.SkipDecoding()}
    references = [
        full_decode(features.deserialize_example(s, decoders=skip)["video"].numpy())
        for s in serialized
    ]
    decoders = {"video": ClipDecoder(4, stride=2, seed=1)}
    ds = tf.data.Dataset.from_tensor_slices(serialized).map(
        lambda s: features.deserialize_example(s, decoders=decoders)
    )
    assert tuple(ds.element_spec["video"].shape) == (4, H, W, 3)  # H, W from the feature
    examples = list(ds.as_numpy_iterator())
    for example, reference, raw in zip(examples, references, serialized):
        assert np.all(np.diff(frame_ids(example["video"], reference)) == 2)
        # The NumPy decode path (tfds.data_source) picks the same clip.
        np_example = features.deserialize_example_np(raw, decoders=decoders)
        np.testing.assert_array_equal(np_example["video"], example["video"])
    assert [e["label"] for e in examples] == [0, 1, 2]
    assert tuple(ds.batch(3).element_spec["video"].shape) == (None, 4, H, W, 3)


@pytest.mark.parametrize("crop_size,shape", [(None, (32, 48)), ((20, 24), (20, 24))])
def test_short_side_output_shape_is_static_when_the_feature_fixes_the_frame_size(crop_size, shape):
    features = _video_features(height=64, width=96)
    video = np.random.default_rng(6).integers(0, 256, (5, 64, 96, 3), dtype=np.uint8)
    serialized = features.serialize_example({"video": video, "label": 0})
    decoders = {"video": ClipDecoder(3, seed=2, short_side=32, crop_size=crop_size, flip=True)}
    ds = tf.data.Dataset.from_tensors(serialized).map(
        lambda s: features.deserialize_example(s, decoders=decoders)
    )
    assert tuple(ds.element_spec["video"].shape) == (3, *shape, 3)
    (example,) = list(ds.as_numpy_iterator())
    np_example = features.deserialize_example_np(serialized, decoders=decoders)
    np.testing.assert_array_equal(np_example["video"], example["video"])


def test_encoded_frames_are_the_parsed_frames_without_a_per_frame_loop():
    features = _video_features()
    video = np.random.default_rng(6).integers(0, 256, (7, H, W, 3), dtype=np.uint8)
    serialized = features.serialize_example({"video": video, "label": 1})
    decoders = {"video": EncodedFrames()}
    frames = features.deserialize_example(serialized, decoders=decoders)["video"]
    skipped = features.deserialize_example(
        serialized, decoders={"video": tfds.decode.SkipDecoding()}
    )["video"]
    assert frames.dtype == tf.string
    assert frames.shape == (7,)
    assert list(frames.numpy()) == list(skipped.numpy())
    np_frames = features.deserialize_example_np(serialized, decoders=decoders)["video"]
    assert list(np_frames) == list(frames.numpy())
    # SkipDecoding reaches the same tensor through a tf.map_fn over the frames
    # (a while loop over tensor lists, which copies every frame twice).
    deserialize = tf.function(lambda s: features.deserialize_example(s, decoders=decoders))
    graph = deserialize.get_concrete_function(tf.TensorSpec([], tf.string)).graph
    op_types = {op.type for op in graph.get_operations()}
    assert "ParseExampleV2" in op_types
    assert not op_types & {"While", "StatelessWhile", "TensorListFromTensor", "TensorListStack"}


def test_decoder_rejects_non_jpeg_video_feature():
    features = _video_features(encoding="png")
    serialized = features.serialize_example({"video": np.zeros((3, H, W, 3), np.uint8), "label": 0})
    with pytest.raises(ValueError, match="needs JPEG frames"):
        features.deserialize_example(serialized, decoders={"video": ClipDecoder(2)})
