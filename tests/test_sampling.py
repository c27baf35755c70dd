"""Tests of video_tfrecords.sampling (clip selection and partial JPEG decoding).

Videos here are lists of JPEG-encoded noise frames: every frame is distinct, and
decoding the same bytes is deterministic, so a sampled frame is identified by
*exact* equality with the fully decoded video.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from hypothesis import given, settings
from hypothesis import strategies as st

from video_tfrecords import clip_plan, pipeline, sampling
from video_tfrecords.sampling import ClipDecoder, EncodedFrames

H, W = 32, 48


# ----------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------


def make_frames(length, height=H, width=W, seed=0):
    """`length` distinct JPEG frames (4:2:0 chroma, like OpenCV/PIL writers)."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (length, height, width, 3), dtype=np.uint8)
    return [tf.io.encode_jpeg(p, quality=90).numpy() for p in pixels]


def full_decode(frames):
    """Reference: every frame decoded whole (accurate IDCT, like OpenCV/PIL)."""
    return np.stack(
        [tf.io.decode_jpeg(f, channels=3, dct_method="INTEGER_ACCURATE").numpy() for f in frames]
    )


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
    length = len(frames)
    decoder = ClipDecoder(**kwargs)
    t = decoder.num_frames
    lo, hi = (decoder.stride, decoder.stride) if isinstance(decoder.stride, int) else decoder.stride
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
            assert 0 <= ids[0] <= length - span(t, step)


def test_sample_decodes_exactly_the_planned_frames(video):
    _frames, frames_t, full = video
    decoder = ClipDecoder(4, stride=2)
    for seed in range(5):
        plan = decoder.plan(frames_t, seed)["indices"].numpy()[0]
        clip = decoder.sample(frames_t, seed).numpy()
        assert frame_ids(clip, full) == plan.tolist()


def test_center_start_formula():
    checked = 0
    for length in (7, 8, 20, 24, 31):
        frames = [b"\xff\xd8\xff not decoded"] * length  # plan() decodes no pixels
        for num_frames, stride in [(4, 1), (4, 2), (3, 3), (7, 1)]:
            needed = span(num_frames, stride)
            if needed > length:
                continue
            decoder = ClipDecoder(num_frames, stride=stride, mode="center")
            indices = decoder.plan(tf.constant(frames))["indices"].numpy()
            start = (length - needed) // 2
            assert indices.tolist() == [list(range(start, start + needed, stride))]
            assert decoder.plan_np(frames)["indices"].tolist() == indices.tolist()
            checked += 1
    assert checked == 20


@pytest.mark.parametrize("num_clips", [1, 2, 3, 5])
def test_uniform_clips_shape_and_spacing(video, num_clips):
    frames, frames_t, full = video
    length, t, stride = len(frames), 4, 2
    decoder = ClipDecoder(t, stride=stride, mode="uniform", num_clips=num_clips)
    clips = decoder.sample(frames_t).numpy()
    assert clips.shape == (num_clips, t, H, W, 3)
    starts = [frame_ids(c, full)[0] for c in clips]
    last = length - span(t, stride)
    if num_clips == 1:
        assert starts == [last // 2]
    else:
        assert starts == [c * last // (num_clips - 1) for c in range(num_clips)]
        assert starts[0] == 0 and starts[-1] == last
    for c in clips:
        assert np.all(np.diff(frame_ids(c, full)) == stride)


# ----------------------------------------------------------------------------
# Short videos
# ----------------------------------------------------------------------------


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
    decoder = ClipDecoder(6, stride=2, short_video=policy, mode=mode)
    clip = decoder.sample(tf.constant(frames)).numpy()
    clip = clip[0] if decoder.multi_clip else clip
    assert frame_ids(clip, full) == expected
    if policy == "pad":
        assert not clip[3:].any()
    np.testing.assert_array_equal(decoder.sample_np(frames).reshape(clip.shape), clip)


def test_short_video_error_names_the_video():
    frames = make_frames(5, seed=1)
    decoder = ClipDecoder(6, stride=2, short_video="error")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"`clip_007.mp4` has 5 frames.*11"):
        decoder.sample(tf.constant(frames), name="clip_007.mp4")
    # Without a name the video is identified by its fingerprint.
    fingerprint = clip_plan.video_fingerprint_np(frames)
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
    with pytest.raises(tf.errors.InvalidArgumentError, match="no frames"):
        decoder.sample(tf.constant([], tf.string), name="empty.mp4")
    with pytest.raises(ValueError, match="no frames"):
        decoder.sample_np([])


def test_stride_range_is_capped_so_the_clip_fits():
    frames = [b"\xff\xd8\xff"] * 20
    decoder = ClipDecoder(8, stride=(1, 5))  # at most (20 - 1) // 7 = 2 fits
    strides = set()
    for seed in range(40):
        ids = decoder.plan(tf.constant(frames), seed)["indices"].numpy()[0]
        assert ids[-1] < 20
        strides |= set(np.diff(ids).tolist())
    assert strides == {1, 2}
    # When even the smallest stride does not fit, the short-video policy applies.
    pad = ClipDecoder(8, stride=(3, 5), short_video="pad")
    ids = pad.plan(tf.constant(frames[:10]), 0)["indices"].numpy()[0]
    assert ids.tolist() == [0, 3, 6, 9, -1, -1, -1, -1]


# ----------------------------------------------------------------------------
# Randomness: seeds, epochs, uniformity
# ----------------------------------------------------------------------------


def _videos(n, length=30, seed=10):
    return [make_frames(length, 8, 8, seed=seed + i) for i in range(n)]


def test_same_seed_same_clip_whatever_the_order():
    videos = tf.constant(_videos(6))
    ids = tf.range(6)
    ds = tf.data.Dataset.from_tensor_slices((ids, videos))

    def clips(decoder, dataset):
        def plan(i, v):
            p = decoder.plan(v)
            flip = tf.cast(p["flip"], tf.int64)
            return i, tf.concat([p["indices"][0], p["crop_offsets"][0], flip], axis=0)

        return {int(i): p.tolist() for i, p in dataset.map(plan).as_numpy_iterator()}

    decoder = ClipDecoder(4, seed=123, crop_size=(4, 4), flip=True)
    in_order = clips(decoder, ds)
    shuffled = clips(decoder, ds.shuffle(6, seed=1))
    rotated = clips(
        ClipDecoder(4, seed=123, crop_size=(4, 4), flip=True), ds.skip(3).concatenate(ds.take(3))
    )
    assert in_order == shuffled == rotated
    assert clips(ClipDecoder(4, seed=124, crop_size=(4, 4), flip=True), ds) != in_order
    # Examples get different clips (the key depends on the video content).
    assert len({tuple(v) for v in in_order.values()}) == 6


def test_same_seed_same_pixels_including_crop_and_flip(video):
    _frames, frames_t, _ = video
    kwargs = {
        "num_frames": 4,
        "stride": (1, 3),
        "crop_size": (16, 16),
        "flip": True,
        "num_clips": 2,
    }
    a = ClipDecoder(**kwargs, seed=5).sample(frames_t).numpy()
    b = ClipDecoder(**kwargs, seed=5).decode_batch_example(frames_t).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, ClipDecoder(**kwargs, seed=6).sample(frames_t).numpy())


def test_fold_in_gives_per_epoch_seeds_that_replay():
    seeds = [clip_plan.fold_in(7, epoch) for epoch in range(4)]
    assert len(set(seeds)) == 4
    assert seeds == [clip_plan.fold_in(7, epoch) for epoch in range(4)]
    assert seeds == [int(clip_plan.fold_in(7, tf.constant(e, tf.int64))) for e in range(4)]
    assert all(-(2**63) <= s < 2**63 for s in seeds)

    frames = tf.constant(make_frames(30, 8, 8))
    decoder = ClipDecoder(4)
    per_epoch = [decoder.plan(frames, s)["indices"].numpy().tolist() for s in seeds]
    again = [decoder.plan(frames, s)["indices"].numpy().tolist() for s in seeds]
    assert per_epoch == again
    assert len({str(p) for p in per_epoch}) > 1


def _epoch_plans(dataset, n):
    items = [p.tolist() for p in dataset.as_numpy_iterator()]
    return items[:n], items[n:]


def test_without_seed_each_epoch_of_a_pipeline_differs():
    n = 5
    videos = tf.constant(_videos(n))
    decoder = ClipDecoder(4, crop_size=(4, 4))

    def plan(v):
        p = decoder.plan(v)
        return tf.concat([p["indices"][0], p["crop_offsets"][0]], axis=0)

    ds = tf.data.Dataset.from_tensor_slices(videos).map(plan, num_parallel_calls=2)
    first, second = _epoch_plans(ds.repeat(2), n)
    assert first != second
    # Each read is fresh, also through the real decode hook.
    clips = tf.data.Dataset.from_tensor_slices(videos).map(decoder.decode_batch_example)
    clips = list(clips.repeat(2).as_numpy_iterator())
    assert any(not np.array_equal(clips[i], clips[i + n]) for i in range(n))


def test_without_seed_new_iterators_differ_even_with_a_global_seed():
    # With tf.random.set_seed, plain tf.random ops in a map function replay the
    # same values for every new iterator (e.g. every Keras epoch); the decoder
    # draws from a generator whose state lives outside the pipeline instead.
    n = 5
    tf.random.set_seed(0)
    try:
        decoder = ClipDecoder(4)
        ds = tf.data.Dataset.from_tensor_slices(tf.constant(_videos(n))).map(
            lambda v: decoder.plan(v)["indices"][0]
        )
        first = [p.tolist() for p in ds.as_numpy_iterator()]
        second = [p.tolist() for p in ds.as_numpy_iterator()]
        assert first != second
    finally:
        tf.random.set_seed(None)


def _chi_square(counts):
    counts = np.asarray(counts, np.float64)
    expected = counts.sum() / counts.size
    return float(((counts - expected) ** 2 / expected).sum())


def test_random_starts_are_uniform_over_the_valid_range():
    length, t, stride = 30, 8, 2  # valid starts 0..15
    num_starts = length - span(t, stride) + 1
    frames = tf.constant([b"\xff\xd8\xff"] * length)
    decoder = ClipDecoder(t, stride=stride)
    n = 3200
    starts = (
        tf.data.Dataset.range(n)
        .map(lambda s: decoder.plan(frames, clip_plan.fold_in(2024, s))["indices"][0, 0])
        .batch(n)
        .get_single_element()
        .numpy()
    )
    counts = np.bincount(starts, minlength=num_starts)
    assert counts.size == num_starts  # nothing outside [0, 15]
    assert counts.min() > 0
    # Chi-square critical value for 15 degrees of freedom at p = 0.001.
    assert _chi_square(counts) < 37.70
    # The same statistic flags a biased sampler (sanity check of the test).
    biased = np.bincount(np.minimum(starts, num_starts - 2), minlength=num_starts)
    assert _chi_square(biased) > 37.70


def test_random_crop_offsets_and_flips_cover_their_range():
    frames = make_frames(3, seed=3)
    decoder = ClipDecoder(1, crop_size=(28, 40), flip=True)
    ys, xs, flips = set(), set(), set()
    for seed in range(200):
        plan = decoder.plan_np(frames, seed)
        y, x = plan["crop_offsets"][0]
        ys.add(int(y))
        xs.add(int(x))
        flips.add(bool(plan["flip"][0]))
    assert ys == set(range(H - 28 + 1))
    assert xs == set(range(W - 40 + 1))
    assert flips == {True, False}


# ----------------------------------------------------------------------------
# Crops and flips
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("crop", ["random", "center"])
def test_crop_equals_full_decode_then_crop(video, crop):
    _frames, frames_t, full = video
    size = (17, 23)  # odd sizes: box edges fall inside 4:2:0 chroma pairs
    decoder = ClipDecoder(3, stride=2, crop_size=size, crop=crop, num_clips=2)
    for seed in range(4):
        plan = decoder.plan(frames_t, seed)
        clips = decoder.sample(frames_t, seed).numpy()
        assert clips.shape == (2, 3, 17, 23, 3)
        for c in range(2):
            index, y, x = find_box(clips[c, 0], full, size)
            assert [y, x] == plan["crop_offsets"].numpy()[c].tolist()
            assert index == plan["indices"].numpy()[c, 0]
            if crop == "center":
                assert (y, x) == ((H - 17) // 2, (W - 23) // 2)
            for t, i in enumerate(plan["indices"].numpy()[c]):
                np.testing.assert_array_equal(clips[c, t], full[i, y : y + 17, x : x + 23])


def test_partial_decode_matches_full_decode_at_every_offset():
    # decode_and_crop_jpeg alone differs from decode-then-crop at box edges for
    # 4:2:0 JPEGs; the decoder's margin must make every box exact.
    (frame,) = make_frames(1, seed=4)
    full = full_decode([frame])[0]
    hw = tf.constant([H, W], tf.int64)
    for h, w in [(8, 8), (15, 21), (32, 48)]:
        offsets = np.array([(y, x) for y in range(H - h + 1) for x in range(W - w + 1)])
        decode_all = tf.function(
            lambda yxs, h=h, w=w: tf.map_fn(
                lambda row: sampling._decode_window_tf(frame, *row, (h, w)),
                sampling._crop_windows_tf(yxs, hw, (h, w)),
                fn_output_signature=tf.TensorSpec([h, w, 3], tf.uint8),
            )
        )
        boxes = decode_all(tf.constant(offsets, tf.int64)).numpy()
        for (y, x), box in zip(offsets, boxes):
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
    _frames, frames_t, full = video
    decoder = ClipDecoder(3, crop_size=(16, 16), flip=True)
    seen = set()
    for seed in range(12):
        plan = decoder.plan(frames_t, seed)
        clip = decoder.sample(frames_t, seed).numpy()
        flipped = bool(plan["flip"].numpy()[0])
        y, x = plan["crop_offsets"].numpy()[0]
        for t, i in enumerate(plan["indices"].numpy()[0]):
            box = full[i, y : y + 16, x : x + 16]
            np.testing.assert_array_equal(clip[t], box[:, ::-1] if flipped else box)
        seen.add(flipped)
    assert seen == {True, False}


def test_crop_larger_than_frame_is_a_clear_error(video):
    frames, frames_t, _ = video
    decoder = ClipDecoder(2, crop_size=(H + 1, 8))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"crop_size \(33, 8\).*32x48"):
        decoder.sample(frames_t)
    with pytest.raises(ValueError, match=r"crop_size \(33, 8\).*32x48"):
        decoder.sample_np(frames)
    ds = tf.data.Dataset.from_tensors(frames_t).map(decoder.decode_batch_example)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"crop_size \(33, 8\)"):
        list(ds)


# ----------------------------------------------------------------------------
# Only the window is decoded
# ----------------------------------------------------------------------------


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
    # A truncated JPEG (valid header) fails in libjpeg.
    truncated = list(frames)
    truncated[window[1]] = frames[window[1]][:300]
    with pytest.raises(tf.errors.InvalidArgumentError):
        decoder.sample(tf.constant(truncated))


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
        {
            "num_frames": 10,
            "stride": 3,
            "short_video": "loop",
            "crop_size": (8, 8),
            "crop": "center",
        },
        {"num_frames": 10, "stride": 3, "short_video": "pad", "flip": True},
    ],
)
def test_numpy_path_matches_tf_path(video, kwargs):
    frames, frames_t, _ = video
    decoder = ClipDecoder(**kwargs)
    for seed in (0, 1, 2**40, -3):
        tf_plan = {k: v.numpy() for k, v in decoder.plan(frames_t, seed).items()}
        np_plan = decoder.plan_np(frames, seed)
        for key in ("indices", "crop_offsets", "flip"):
            np.testing.assert_array_equal(tf_plan[key], np_plan[key])
        tf_clip = decoder.sample(frames_t, seed).numpy()
        np_clip = decoder.sample_np(np.array(frames, dtype=object), seed)
        assert np_clip.dtype == np.uint8
        np.testing.assert_array_equal(np_clip, tf_clip)
    assert clip_plan.video_fingerprint_np(frames) == int(clip_plan.video_fingerprint(frames_t))


@settings(max_examples=40, deadline=None)
@given(
    length=st.integers(1, 40),
    num_frames=st.integers(1, 12),
    stride=st.one_of(
        st.integers(1, 4),
        st.tuples(st.integers(1, 3), st.integers(0, 3)).map(lambda s: (s[0], s[0] + s[1])),
    ),
    mode=st.sampled_from(["random", "center", "uniform"]),
    num_clips=st.integers(1, 3),
    policy=st.sampled_from(["loop", "repeat_last", "pad"]),
    seed=st.integers(-(2**63), 2**64 - 1),
)
def test_plans_agree_and_stay_in_range(length, num_frames, stride, mode, num_clips, policy, seed):
    if mode == "center":
        num_clips = 1
    frames = [b"\xff\xd8\xff" + bytes([i % 256]) for i in range(length)]
    decoder = ClipDecoder(
        num_frames, stride=stride, mode=mode, num_clips=num_clips, short_video=policy
    )
    indices = decoder.plan(tf.constant(frames), seed)["indices"].numpy()
    np.testing.assert_array_equal(indices, decoder.plan_np(frames, seed)["indices"])
    assert indices.shape == (num_clips, num_frames)
    low = -1 if policy == "pad" else 0
    assert indices.min() >= low and indices.max() < length
    lo = stride if isinstance(stride, int) else stride[0]
    if length >= span(num_frames, lo) and num_frames > 1:  # fits: a plain run
        steps = np.diff(indices, axis=1)
        assert (steps == steps[:, :1]).all()
        assert (steps >= lo).all()


def test_fingerprint_is_a_content_identity():
    frames = make_frames(9, seed=6)
    base = clip_plan.video_fingerprint_np(frames)
    assert base == clip_plan.video_fingerprint_np(list(frames))  # content, not object
    changed = [
        [make_frames(1, seed=99)[0]] + frames[1:],  # first frame
        frames[:4] + make_frames(1, seed=98) + frames[5:],  # middle frame
        frames[:-1] + make_frames(1, seed=97),  # last frame
        frames[:-1],  # length
    ]
    prints = {clip_plan.video_fingerprint_np(f) for f in changed}
    assert len(prints) == 4 and base not in prints
    for f in changed:
        assert int(clip_plan.video_fingerprint(tf.constant(f))) == clip_plan.video_fingerprint_np(f)


def test_decoder_survives_pickling_after_use(video):
    frames, frames_t, _ = video
    decoder = ClipDecoder(3, flip=True)
    decoder.sample(frames_t)  # creates the tf.random.Generator
    clone = pickle.loads(pickle.dumps(decoder))
    assert clone.sample(frames_t).shape == (3, H, W, 3)
    assert clone.sample_np(frames).shape == (3, H, W, 3)
    seeded = ClipDecoder(3, seed=9, crop_size=(8, 8))
    clone = pickle.loads(pickle.dumps(seeded))
    np.testing.assert_array_equal(clone.sample_np(frames), seeded.sample(frames_t).numpy())


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


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_frames": 0},
        {"num_frames": -2},
        {"num_frames": 2.0},
        {"num_frames": True},
        {"num_frames": 4, "stride": 0},
        {"num_frames": 4, "stride": -1},
        {"num_frames": 4, "stride": 1.5},
        {"num_frames": 4, "stride": (3, 2)},
        {"num_frames": 4, "stride": (0, 2)},
        {"num_frames": 4, "stride": (1, 2, 3)},
        {"num_frames": 4, "stride": "2"},
        {"num_frames": 4, "mode": "middle"},
        {"num_frames": 4, "mode": "center", "num_clips": 2},
        {"num_frames": 4, "num_clips": 0},
        {"num_frames": 4, "short_video": "wrap"},
        {"num_frames": 4, "crop": "top-left"},
        {"num_frames": 4, "crop_size": 16},
        {"num_frames": 4, "crop_size": (16,)},
        {"num_frames": 4, "crop_size": (16, 0)},
        {"num_frames": 4, "crop_size": (16, 8.5)},
        {"num_frames": 4, "crop_size": (16, 8, 3)},
        {"num_frames": 4, "flip": "yes"},
        {"num_frames": 4, "seed": "7"},
    ],
)
def test_invalid_arguments_raise_at_construction(kwargs):
    with pytest.raises(ValueError):
        ClipDecoder(**kwargs)


def test_valid_argument_forms():
    assert ClipDecoder(4, stride=(2, 2)).stride == 2
    assert ClipDecoder(4, stride=[1, 3]).stride == (1, 3)
    assert ClipDecoder(4, crop_size=[8, 8]).crop_size == (8, 8)
    assert ClipDecoder(4, seed=np.int64(3)).seed == 3
    assert "num_frames=4" in repr(ClipDecoder(4))


# ----------------------------------------------------------------------------
# Through TFDS feature decoding
# ----------------------------------------------------------------------------


def _video_features(encoding="jpeg"):
    return tfds.features.FeaturesDict(
        {
            "video": tfds.features.Video(shape=(None, H, W, 3), encoding_format=encoding),
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
    references = [
        full_decode(
            features.deserialize_example(s, decoders={"video": tfds.decode.SkipDecoding()})[
                "video"
            ].numpy()
        )
        for s in serialized
    ]

    decoders = {"video": ClipDecoder(4, stride=2, seed=1)}
    ds = tf.data.Dataset.from_tensor_slices(serialized).map(
        lambda s: features.deserialize_example(s, decoders=decoders)
    )
    assert tuple(ds.element_spec["video"].shape) == (4, H, W, 3)  # H, W from the feature
    examples = list(ds.as_numpy_iterator())
    for example, reference, raw in zip(examples, references, serialized):
        ids = frame_ids(example["video"], reference)
        assert np.all(np.diff(ids) == 2)
        # The NumPy decode path (tfds.data_source) picks the same clip.
        np_example = features.deserialize_example_np(raw, decoders=decoders)
        np.testing.assert_array_equal(np_example["video"], example["video"])
    assert [e["label"] for e in examples] == [0, 1, 2]

    batched = ds.batch(3)
    assert tuple(batched.element_spec["video"].shape) == (None, 4, H, W, 3)


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


# ----------------------------------------------------------------------------
# clip_dataset through tfds.load (tiny dataset written in a tmp dir)
# ----------------------------------------------------------------------------

NUM_VIDEOS = 5


class SamplingTestVideos(tfds.core.GeneratorBasedBuilder):
    """Five short JPEG videos, labels 0..4 (test fixture for clip_dataset)."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict(
                {
                    "video": tfds.features.Video(shape=(None, H, W, 3), encoding_format="jpeg"),
                    "label": tfds.features.ClassLabel(num_classes=NUM_VIDEOS),
                    "filename": tfds.features.Text(),
                }
            ),
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        rng = np.random.default_rng(0)
        for i in range(NUM_VIDEOS):
            frames = rng.integers(0, 256, (12 + 2 * i, H, W, 3), dtype=np.uint8)
            yield i, {"video": frames, "label": i, "filename": f"video_{i}.mp4"}


@pytest.fixture(scope="module")
def tiny_data_dir(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("tfds")
    SamplingTestVideos(data_dir=str(data_dir)).download_and_prepare()
    return str(data_dir)


def test_decoder_with_tfds_data_source_matches_tfds_load(tiny_data_dir, tmp_path):
    pytest.importorskip("array_record")
    SamplingTestVideos(data_dir=str(tmp_path), file_format="array_record").download_and_prepare()
    kwargs = {"num_frames": 4, "stride": (1, 2), "crop_size": (16, 16), "flip": True, "seed": 8}
    source = tfds.data_source(
        "sampling_test_videos",
        split="train",
        data_dir=str(tmp_path),
        decoders={"video": ClipDecoder(**kwargs)},
    )
    from_source = {int(source[i]["label"]): source[i]["video"] for i in range(len(source))}
    loaded = tfds.load(
        "sampling_test_videos",
        split="train",
        data_dir=tiny_data_dir,
        decoders={"video": ClipDecoder(**kwargs)},
    )
    from_load = {int(ex["label"]): ex["video"] for ex in loaded.as_numpy_iterator()}
    assert from_source.keys() == from_load.keys() == set(range(NUM_VIDEOS))
    for label, clip in from_load.items():
        assert clip.shape == (4, 16, 16, 3)
        np.testing.assert_array_equal(from_source[label], clip)


def _run(ds):
    return [(clip, label) for clip, label in ds.as_numpy_iterator()]


def _by_label(batches):
    out = {}
    for clips, labels in batches:
        for clip, label in zip(clips, labels):
            out.setdefault(int(label), []).append(clip)
    return out


def test_clip_dataset_training(tiny_data_dir):
    kwargs = {
        "name": "sampling_test_videos",
        "data_dir": tiny_data_dir,
        "num_frames": 4,
        "batch_size": 2,
        "stride": (1, 2),
        "crop_size": (16, 16),
        "flip": True,
        "shuffle_buffer": 8,
        "num_epochs": 2,
    }
    ds = pipeline.clip_dataset(seed=3, **kwargs)
    assert tuple(ds.element_spec[0].shape) == (2, 4, 16, 16, 3)
    assert ds.element_spec[0].dtype == tf.float32
    batches = _run(ds)
    assert len(batches) == 2 * NUM_VIDEOS // 2  # epochs are concatenated, then batched
    clips = np.concatenate([c for c, _ in batches])
    labels = np.concatenate([lab for _, lab in batches])
    assert 0.0 <= clips.min() and clips.max() <= 1.0
    # Each epoch sees every video once.
    assert sorted(labels[:NUM_VIDEOS]) == sorted(labels[NUM_VIDEOS:]) == list(range(NUM_VIDEOS))

    # Epoch e samples every video with the seed fold_in(3, e).
    raw = tfds.load(
        "sampling_test_videos",
        split="train",
        data_dir=tiny_data_dir,
        decoders={"video": tfds.decode.SkipDecoding()},
    )
    frames = {int(ex["label"]): ex["video"] for ex in raw}
    decoder = ClipDecoder(4, stride=(1, 2), crop_size=(16, 16), flip=True)
    for position, (clip, label) in enumerate(zip(clips, labels)):
        epoch_seed = clip_plan.fold_in(3, position // NUM_VIDEOS)
        expected = decoder.sample(frames[int(label)], epoch_seed).numpy()
        np.testing.assert_array_equal(np.round(clip * 255).astype(np.uint8), expected)
    # So clips change between epochs ...
    first = {int(lab): c for lab, c in zip(labels[:NUM_VIDEOS], clips[:NUM_VIDEOS])}
    second = {int(lab): c for lab, c in zip(labels[NUM_VIDEOS:], clips[NUM_VIDEOS:])}
    assert any(not np.array_equal(first[i], second[i]) for i in first)
    # ... and a run replays exactly with the same seed, not with another one.
    again = _run(pipeline.clip_dataset(seed=3, **kwargs))
    for (c1, l1), (c2, l2) in zip(batches, again):
        np.testing.assert_array_equal(c1, c2)
        np.testing.assert_array_equal(l1, l2)
    other = _run(pipeline.clip_dataset(seed=4, **kwargs))
    assert any(not np.array_equal(a[0], b[0]) for a, b in zip(batches, other))


def test_clip_dataset_without_seed_differs_between_runs(tiny_data_dir):
    kwargs = {
        "name": "sampling_test_videos",
        "data_dir": tiny_data_dir,
        "num_frames": 4,
        "batch_size": 5,
        "crop_size": (16, 16),
        "num_epochs": 1,
        "dtype": tf.uint8,
    }
    a = _by_label(_run(pipeline.clip_dataset(**kwargs)))
    b = _by_label(_run(pipeline.clip_dataset(**kwargs)))
    assert a.keys() == b.keys() == set(range(NUM_VIDEOS))
    assert any(not np.array_equal(a[i][0], b[i][0]) for i in a)


def test_clip_dataset_errors_name_the_file(tiny_data_dir):
    ds = pipeline.clip_dataset(
        name="sampling_test_videos",
        data_dir=tiny_data_dir,
        num_frames=13,  # video_0 has 12 frames
        batch_size=1,
        training=False,
        short_video="error",
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="`video_0.mp4` has 12 frames"):
        _run(ds)


def test_clip_dataset_static_frame_size_without_crop(tiny_data_dir):
    ds = pipeline.clip_dataset(
        name="sampling_test_videos",
        data_dir=tiny_data_dir,
        num_frames=2,
        batch_size=2,
        num_epochs=1,
        dtype=tf.uint8,
    )
    assert tuple(ds.element_spec[0].shape) == (2, 2, H, W, 3)
    assert next(iter(ds))[0].shape == (2, 2, H, W, 3)


def test_clip_dataset_evaluation(tiny_data_dir):
    ds = pipeline.clip_dataset(
        "train",
        name="sampling_test_videos",
        data_dir=tiny_data_dir,
        num_frames=4,
        batch_size=2,
        training=False,
        mode="uniform",
        num_clips=2,
        crop_size=(16, 16),
        dtype=tf.uint8,
    )
    assert tuple(ds.element_spec[0].shape) == (None, 2, 4, 16, 16, 3)
    batches = _run(ds)
    assert [len(labels) for _, labels in batches] == [2, 2, 1]  # remainder kept
    assert sorted(int(x) for _, labels in batches for x in labels) == list(range(NUM_VIDEOS))
    # Deterministic: a second pass gives the same clips.
    for (c1, _), (c2, _) in zip(batches, _run(ds)):
        np.testing.assert_array_equal(c1, c2)
