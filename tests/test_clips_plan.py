"""Tests of the clip plan: which frames, box and flip (clips/plan.py and the modules it runs).

Plans need no pixels: most videos here are fake JPEGs (a start-of-frame header
giving the size, then a few distinct bytes), so a plan is checked against its
definition, against values recorded from the code before the #15 refactor
(users' seeded clips must not change), and TF against NumPy.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from video_tfrecords.clips import backends, decode_np, decode_tf, geometry, jpeg, keys
from video_tfrecords.clips.spec import ClipSpec


def fake_jpeg(height: int, width: int, index: int) -> bytes:
    """A JPEG start marker and size header followed by `index`-dependent bytes."""
    sof = b"\xff\xc0\x00\x11\x08" + height.to_bytes(2, "big") + width.to_bytes(2, "big")
    sof += b"\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    payload = bytes((index * 7 + k) % 256 for k in range(index % 5 + 3))
    return b"\xff\xd8" + sof + payload + b"\xff\xd9"


def fake_video(length: int, height: int = 40, width: int = 60) -> list[bytes]:
    return [fake_jpeg(height, width, i) for i in range(length)]


def jpeg_video(length: int, height: int = 40, width: int = 60) -> list[bytes]:
    """`length` distinct real JPEGs (what TF's header reader needs): one image, a comment each."""
    image = np.full((height, width, 3), 128, np.uint8)
    data = cv2.imencode(".jpg", image)[1].tobytes()
    comments = [b"\xff\xfe\x00\x06" + i.to_bytes(4, "big") for i in range(length)]
    return [data[:2] + comment + data[2:] for comment in comments]


def span(num_frames, stride):
    return (num_frames - 1) * stride + 1


# ----------------------------------------------------------------------------
# Plans recorded from the code before the refactor
# ----------------------------------------------------------------------------

# (spec, (length, height, width), seed, indices, crop offsets, flips), recorded
# with the NumPy planner of sampling.py at d4339e8 on `fake_video` inputs.
PLAIN = {"num_frames": 8, "stride": 2}
JITTER = {"num_frames": 4, "stride": (1, 4), "crop_size": (16, 16), "flip": True}
UNIFORM = {"num_frames": 3, "stride": 2, "mode": "uniform", "num_clips": 3, "crop_size": (20, 24)}
PAD = {"num_frames": 5, "num_clips": 2, "crop_size": (9, 13), "flip": True, "short_video": "pad"}
REPEAT = {
    "num_frames": 16,
    "stride": 3,
    "short_video": "repeat_last",
    "crop": "center",
    "crop_size": (30, 30),
}
LONG, SHORT = (30, 40, 60), (7, 32, 48)  # (length, height, width) of `fake_video`s
RECORDED = [
    (PLAIN, LONG, 0, [[11, 13, 15, 17, 19, 21, 23, 25]], [[0, 0]], [0]),
    (PLAIN, LONG, 2**40 + 3, [[12, 14, 16, 18, 20, 22, 24, 26]], [[0, 0]], [0]),
    (PLAIN, LONG, -5, [[15, 17, 19, 21, 23, 25, 27, 29]], [[0, 0]], [0]),
    (PLAIN, SHORT, 0, [[0, 2, 4, 6, 1, 3, 5, 0]], [[0, 0]], [0]),
    (JITTER, LONG, 0, [[3, 5, 7, 9]], [[12, 37]], [0]),
    (JITTER, LONG, 2**40 + 3, [[7, 8, 9, 10]], [[20, 7]], [0]),
    (JITTER, SHORT, 0, [[0, 2, 4, 6]], [[4, 15]], [1]),
    (JITTER, SHORT, -5, [[0, 2, 4, 6]], [[5, 9]], [1]),
    (
        UNIFORM,
        LONG,
        0,
        [[0, 2, 4], [12, 14, 16], [25, 27, 29]],
        [[19, 36], [16, 33], [7, 31]],
        [0, 0, 0],
    ),
    (UNIFORM, SHORT, 0, [[0, 2, 4], [1, 3, 5], [2, 4, 6]], [[8, 20], [10, 2], [0, 18]], [0, 0, 0]),
    (PAD, LONG, 0, [[15, 16, 17, 18, 19], [9, 10, 11, 12, 13]], [[26, 25], [31, 11]], [0, 1]),
    (PAD, SHORT, 0, [[1, 2, 3, 4, 5], [2, 3, 4, 5, 6]], [[13, 33], [3, 21]], [1, 0]),
    (REPEAT, SHORT, 0, [[0, 3, 6] + [6] * 13], [[1, 9]], [0]),
]


@pytest.mark.parametrize("kwargs,video,seed,indices,offsets,flips", RECORDED)
def test_seeded_plans_are_those_of_the_code_before_the_refactor(
    kwargs, video, seed, indices, offsets, flips
):
    frames = fake_video(*video)
    plan = decode_np.plan_np(ClipSpec(**kwargs), frames, seed)
    assert plan["indices"].tolist() == indices
    assert plan["crop_offsets"].tolist() == offsets
    assert plan["flip"].astype(int).tolist() == flips
    if "crop_size" not in kwargs:  # TF reads frame sizes with libjpeg: fake frames fail there
        tf_plan = decode_tf.plan_tf(ClipSpec(**kwargs), tf.constant(frames), seed)
        assert {k: v.numpy().tolist() for k, v in tf_plan.items()} == {
            k: v.tolist() for k, v in plan.items()
        }


def test_fingerprint_and_fold_in_are_those_of_the_code_before_the_refactor():
    assert keys.video_fingerprint(fake_video(30, 40, 60)) == 4711788444782296839
    assert keys.video_fingerprint(fake_video(7, 32, 48)) == 2386161518777156911
    assert [keys.fold_in(7, e) for e in range(3)] == [
        236966933211079599,
        -5480067580650932058,
        3270201391739464176,
    ]
    assert keys.fold_in(-1, 2**40) == 2966176977432226172


# ----------------------------------------------------------------------------
# Plan properties
# ----------------------------------------------------------------------------


def test_center_start_formula():
    checked = 0
    for length in (7, 8, 20, 24, 31):
        frames = fake_video(length)
        for num_frames, stride in [(4, 1), (4, 2), (3, 3), (7, 1)]:
            needed = span(num_frames, stride)
            if needed > length:
                continue
            spec = ClipSpec(num_frames, stride=stride, mode="center")
            start = (length - needed) // 2
            expected = [list(range(start, start + needed, stride))]
            assert decode_np.plan_np(spec, frames)["indices"].tolist() == expected
            assert decode_tf.plan_tf(spec, frames)["indices"].numpy().tolist() == expected
            checked += 1
    assert checked == 20


@pytest.mark.parametrize("num_clips", [1, 2, 3, 5])
def test_uniform_starts_are_evenly_spaced_from_first_to_last(num_clips):
    length, t, stride = 24, 4, 2
    spec = ClipSpec(t, stride=stride, mode="uniform", num_clips=num_clips)
    indices = decode_np.plan_np(spec, fake_video(length))["indices"]
    assert indices.shape == (num_clips, t)
    last = length - span(t, stride)
    if num_clips == 1:
        assert indices[:, 0].tolist() == [last // 2]
    else:
        assert indices[:, 0].tolist() == [c * last // (num_clips - 1) for c in range(num_clips)]
    assert (np.diff(indices, axis=1) == stride).all()


def test_stride_range_is_capped_so_the_clip_fits():
    frames = fake_video(20)
    spec = ClipSpec(8, stride=(1, 5))  # at most (20 - 1) // 7 = 2 fits
    strides = set()
    for seed in range(40):
        ids = decode_np.plan_np(spec, frames, seed)["indices"][0]
        assert ids[-1] < 20
        strides |= set(np.diff(ids).tolist())
    assert strides == {1, 2}
    # When even the smallest stride does not fit, the short-video policy applies.
    pad = ClipSpec(8, stride=(3, 5), short_video="pad")
    ids = decode_np.plan_np(pad, frames[:10], 0)["indices"][0]
    assert ids.tolist() == [0, 3, 6, 9, -1, -1, -1, -1]


def _chi_square(counts):
    counts = np.asarray(counts, np.float64)
    expected = counts.sum() / counts.size
    return float(((counts - expected) ** 2 / expected).sum())


def test_random_starts_are_uniform_over_the_valid_range():
    length, t, stride = 30, 8, 2  # valid starts 0..15
    num_starts = length - span(t, stride) + 1
    frames = fake_video(length)
    spec = ClipSpec(t, stride=stride)
    seeds = [keys.fold_in(2024, s) for s in range(3200)]
    starts = [decode_np.plan_np(spec, frames, s)["indices"][0, 0] for s in seeds]
    counts = np.bincount(starts, minlength=num_starts)
    assert counts.size == num_starts  # nothing outside [0, 15]
    assert counts.min() > 0
    # Chi-square critical value for 15 degrees of freedom at p = 0.001.
    assert _chi_square(counts) < 37.70
    # The same statistic flags a biased sampler (sanity check of the test).
    biased = np.bincount(np.minimum(starts, num_starts - 2), minlength=num_starts)
    assert _chi_square(biased) > 37.70


def test_random_crop_offsets_and_flips_cover_their_range():
    frames = fake_video(3, 32, 48)
    spec = ClipSpec(1, crop_size=(28, 40), flip=True)
    ys, xs, flips = set(), set(), set()
    for seed in range(200):
        plan = decode_np.plan_np(spec, frames, seed)
        y, x = plan["crop_offsets"][0]
        ys.add(int(y))
        xs.add(int(x))
        flips.add(bool(plan["flip"][0]))
    assert ys == set(range(32 - 28 + 1))
    assert xs == set(range(48 - 40 + 1))
    assert flips == {True, False}


def test_without_seed_every_plan_is_fresh():
    frames = fake_video(50)
    spec = ClipSpec(4, crop_size=(8, 8))
    plans = {str(decode_np.plan_np(spec, frames)) for _ in range(10)}
    assert len(plans) > 1
    seeds = {keys.fresh_seed() for _ in range(10)}
    assert len(seeds) == 10 and all(-(2**63) <= s < 2**63 for s in seeds)


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
    crop=st.sampled_from([None, (8, 8)]),
    seed=st.integers(-(2**63), 2**64 - 1),
)
def test_tf_and_numpy_plans_agree_and_stay_in_range(
    length, num_frames, stride, mode, num_clips, policy, crop, seed
):
    if mode == "center":
        num_clips = 1
    frames = jpeg_video(length, 20, 30)
    spec = ClipSpec(
        num_frames,
        stride=stride,
        mode=mode,
        num_clips=num_clips,
        short_video=policy,
        crop_size=crop,
        flip=True,
    )
    plan = decode_np.plan_np(spec, frames, seed)
    tf_plan = decode_tf.plan_tf(spec, tf.constant(frames), seed)
    for key in ("indices", "crop_offsets", "flip"):
        np.testing.assert_array_equal(tf_plan[key].numpy(), plan[key])
    indices = plan["indices"]
    assert indices.shape == (num_clips, num_frames)
    assert indices.min() >= (-1 if policy == "pad" else 0) and indices.max() < length
    if crop:
        assert (plan["crop_offsets"] >= 0).all() and (plan["crop_offsets"] <= [12, 22]).all()
    if length >= span(num_frames, spec.min_stride) and num_frames > 1:  # fits: a plain run
        steps = np.diff(indices, axis=1)
        assert (steps == steps[:, :1]).all() and (steps >= spec.min_stride).all()


# ----------------------------------------------------------------------------
# Video identity and seeds
# ----------------------------------------------------------------------------


def test_fingerprint_is_a_content_identity():
    frames = fake_video(9)
    base = keys.video_fingerprint(frames)
    assert base == keys.video_fingerprint([bytes(f) for f in frames])  # content, not object
    assert base == keys.video_fingerprint(np.array(frames, dtype=object))
    assert base == keys.video_fingerprint([memoryview(f) for f in frames])
    other = fake_jpeg(40, 60, 99)
    changed = [
        [other, *frames[1:]],  # first frame
        [*frames[:4], other, *frames[5:]],  # middle frame
        [*frames[:-1], other],  # last frame
        frames[:-1],  # length
    ]
    prints = {keys.video_fingerprint(f) for f in changed}
    assert len(prints) == 4 and base not in prints
    for f in [*changed, frames, []]:
        as_tensor = keys.video_fingerprint(tf.constant(f, tf.string))
        assert as_tensor.dtype == tf.int64
        assert int(as_tensor) == keys.video_fingerprint(f)


def test_fingerprint_hashes_both_ends_of_large_frames():
    big = bytes(range(256)) * 100  # 25,600 bytes: head and tail are hashed apart
    frames = [b"\xff\xd8\xff" + big]
    middle = [b"\xff\xd8\xff" + big[:12800] + b"x" + big[12801:]]  # outside head and tail
    tail = [b"\xff\xd8\xff" + big[:-1] + b"x"]
    base = keys.video_fingerprint(frames)
    assert keys.video_fingerprint(middle) == base  # bounded cost: the middle is not read
    assert keys.video_fingerprint(tail) != base
    assert int(keys.video_fingerprint(tf.constant(tail))) == keys.video_fingerprint(tail)


def test_numpy_fingerprint_equals_tensorflows_around_the_hashed_run_length():
    # NumPy hashes in its own fast code: TF's graph of the generic plan is the reference.
    rng = np.random.default_rng(5)
    sizes = (0, 1, 3, 8191, 8192, 8193, 16383, 16384, 16385, 40000)
    for first, middle, last in zip(sizes, sizes[3:] + sizes[:3], sizes[6:] + sizes[:6]):
        frames = [rng.bytes(n) for n in (first, 5, middle, 7, last)]
        for video in (frames, frames[:1], frames[:2]):
            expected = int(keys.video_fingerprint(tf.constant(video, tf.string)))
            assert keys.video_fingerprint(video) == expected
    for video_sizes in ((8192, 9000, 20000, 5, 8192), (40000, 1, 2, 16385, 3, 30000)):
        video = [rng.bytes(n) for n in video_sizes]  # three distinct frames of >= 8192 bytes
        expected = int(keys.video_fingerprint(tf.constant(video, tf.string)))
        assert keys.video_fingerprint(video) == expected


def test_fold_in_gives_per_epoch_seeds_that_replay():
    seeds = [keys.fold_in(7, epoch) for epoch in range(4)]
    assert len(set(seeds)) == 4
    assert seeds == [keys.fold_in(7, epoch) for epoch in range(4)]
    assert seeds == [int(keys.fold_in(7, tf.constant(e, tf.int64))) for e in range(4)]
    assert seeds == [int(keys.fold_in(tf.constant(7), e)) for e in range(4)]
    assert all(-(2**63) <= s < 2**63 for s in seeds)
    frames = fake_video(30)
    per_epoch = [decode_np.plan_np(ClipSpec(4), frames, s)["indices"].tolist() for s in seeds]
    assert len({str(p) for p in per_epoch}) > 1


def test_same_seed_same_plan_different_videos_different_plans():
    spec = ClipSpec(4, crop_size=(8, 8), flip=True, seed=11)
    videos = [fake_video(30 + i) for i in range(6)]
    plans = [str(decode_np.plan_np(spec, v)) for v in videos]
    assert plans == [str(decode_np.plan_np(spec, v)) for v in videos]
    assert len(set(plans)) == 6  # the key depends on the video content
    # A seed passed to the call overrides the spec's.
    assert str(decode_np.plan_np(spec, videos[0], 12)) != plans[0]


# ----------------------------------------------------------------------------
# Frame geometry
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "size,short_side,resized,ratio",
    [
        ((256, 340), 128, (128, 170), 2),  # half size exactly: decode at 1/2, no resize
        ((256, 455), 128, (128, 228), 1),  # odd width: 1/2 would shift the pixel grid
        ((256, 602), 112, (112, 263), 2),  # 1/2, then area-resize 128 -> 112
        ((256, 602), 64, (64, 151), 2),  # 602 is not a multiple of 4: 1/4 would shift the grid
        ((256, 340), 64, (64, 85), 4),  # a quarter exactly
        ((256, 344), 32, (32, 43), 8),  # an eighth exactly
        ((256, 340), 32, (32, 43), 4),  # 340 is not a multiple of 8
        ((256, 340), 160, (160, 213), 1),  # more than half: full size
        ((340, 256), 128, (170, 128), 2),  # portrait
        ((100, 100), 150, (150, 150), 1),  # upscaling
    ],
)
def test_resized_size_and_reduction(size, short_side, resized, ratio):
    for ops in (backends.NP_OPS, backends.tf_ops()):
        got = geometry.resized_size(ops, *size, short_side)
        assert tuple(int(v) for v in got) == resized
        assert int(geometry.reduction(ops, *size, short_side)) == ratio
    assert min(resized) == short_side


def _jpeg(height, width, **params):
    rng = np.random.default_rng(height * width)
    image = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    flags = [cv2.IMWRITE_JPEG_QUALITY, 90]
    for name, value in params.items():
        flags += [getattr(cv2, name), value]
    return cv2.imencode(".jpg", image, flags)[1].tobytes()


@pytest.mark.parametrize(
    "data",
    [
        _jpeg(32, 48),
        _jpeg(255, 17),
        _jpeg(64, 96, IMWRITE_JPEG_PROGRESSIVE=1),  # SOF2
        _jpeg(40, 30, IMWRITE_JPEG_RST_INTERVAL=2),
    ],
)
def test_jpeg_header_size_matches_tensorflow(data):
    expected = tuple(tf.io.extract_jpeg_shape(data).numpy()[:2])
    assert jpeg.jpeg_size(data) == expected
    assert jpeg.jpeg_size(memoryview(data)) == expected
    # An APP segment before the frame header (EXIF-like) is skipped.
    app1 = b"\xff\xe1\x00\x10" + b"Exif\x00\x00" + bytes(8)
    assert jpeg.jpeg_size(data[:2] + app1 + data[2:]) == expected


@pytest.mark.parametrize("data", [b"", b"corrupt", b"\xff\xd8\xff", b"\xff\xd8\xff\xe0\x00"])
def test_jpeg_header_size_of_non_jpegs_is_none(data):
    assert jpeg.jpeg_size(data) is None
