"""The field's recipes (issue 23): time-based and segment sampling, three-crop test views.

References are written here, from the recipes' own definitions, never taken
from the package: MMAction2's `SampleFrames(clip_len=1)` formulas for
segments, PySlowFast's `uniform_crop` offsets for the three test crops, and
"the frame on screen at each tick" computed by scanning a variable-frame-rate
fixture's timestamps. Frames are distinct noise JPEGs, so a decoded frame is
identified by exact equality with TensorFlow's full decode of the video.
"""

from __future__ import annotations

import math
import pathlib
import random

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

import box_reference
from video_tfrecords.clips import decode_np, decode_tf
from video_tfrecords.clips.spec import ClipSpec
from video_tfrecords.decoders import ClipDecoder

H, W = 32, 48


def make_frames(length, height=H, width=W, seed=0):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (length, height, width, 3), dtype=np.uint8)
    return [tf.io.encode_jpeg(p, quality=90).numpy() for p in pixels]


def full_decode(frames):
    return np.stack(
        [tf.io.decode_jpeg(f, channels=3, dct_method="INTEGER_ACCURATE").numpy() for f in frames]
    )


def frame_ids(clip, full):
    """The index of each frame of `clip` [T, h, w, 3] in the fully decoded video (exact match)."""
    ids = []
    for image in clip:
        hits = [i for i, f in enumerate(full) if np.array_equal(f[: image.shape[0]], image)]
        ids.append(hits[0] if hits else None)
    return ids


# ----------------------------------------------------------------------------
# Segments: MMAction2 SampleFrames(clip_len=1, frame_interval=1, num_clips=T).
# ----------------------------------------------------------------------------


def mmaction_test_offsets(num_frames, num_segments):
    """MMAction2 `_get_test_clips` with clip_len=1: int(avg * k + avg / 2), avg = L / T."""
    avg_interval = num_frames / float(num_segments)
    base_offsets = np.arange(num_segments) * avg_interval
    return (base_offsets + avg_interval / 2.0).astype(np.int32)


@pytest.mark.parametrize("length", [3, 8, 9, 10, 17, 31, 64, 100, 301])
@pytest.mark.parametrize("t", [1, 3, 8])
def test_segment_centers_are_mmaction2_test_offsets(length, t):
    frames = make_frames(length, 8, 8)
    plan = decode_np.plan_np(ClipSpec(t, mode="segment_centers"), frames)
    np.testing.assert_array_equal(plan["indices"][0], mmaction_test_offsets(length, t))


@pytest.mark.parametrize("length", [5, 8, 9, 30, 101])
def test_segments_draw_one_frame_within_each_segment_and_reach_all_of_it(length):
    t = 8
    frames = make_frames(length, 8, 8)
    seen = [set() for _ in range(t)]
    for seed in range(300):
        indices = decode_np.plan_np(ClipSpec(t, mode="segments", seed=seed), frames)["indices"]
        for k, index in enumerate(indices[0].tolist()):
            # Segment k covers [k L / T, (k + 1) L / T); a frame of it has its start in it
            # (an empty segment, L < T, holds the frame its start falls in).
            lo = math.floor(k * length / t)
            hi = max(lo, math.ceil((k + 1) * length / t) - 1)
            assert lo <= index <= hi, (k, index, lo, hi)
            seen[k].add(index)
    for k in range(t):  # random offsets reach every frame of each segment
        lo, hi = k * length // t, max(k * length // t, (k + 1) * length // t - 1)
        assert seen[k] == set(range(lo, hi + 1))


def test_segments_decode_the_planned_frames_on_both_paths():
    frames = make_frames(40)
    full = full_decode(frames)
    for mode in ("segments", "segment_centers"):
        spec = ClipSpec(8, mode=mode, seed=5)
        plan = decode_np.plan_np(spec, frames)
        np_clip = decode_np.sample_np(spec, frames)
        tf_clip = decode_tf.sample_tf(spec, frames).numpy()
        assert frame_ids(np_clip, full) == plan["indices"][0].tolist()
        np.testing.assert_array_equal(np_clip, tf_clip)


def test_segments_with_several_clips_differ_per_clip():
    frames = make_frames(80, 8, 8)
    indices = decode_np.plan_np(ClipSpec(8, mode="segments", num_clips=4, seed=1), frames)
    rows = {tuple(r) for r in indices["indices"].tolist()}
    assert len(rows) > 1


# ----------------------------------------------------------------------------
# fps: the frame on screen at each tick of a 1/fps grid.
# ----------------------------------------------------------------------------

# A variable-frame-rate video: gaps of 10 to 120 ms (a phone's capture), float32 seconds.
VFR_MS = np.cumsum([0, 33, 33, 10, 10, 120, 40, 16, 17, 100, 33, 33, 50, 20, 20, 66, 80, 33, 10,
                    90, 33, 33, 33, 25, 45, 110, 30, 30, 12, 18])


def on_screen(times_s, tick_s):
    """Reference: scan for the last frame shown at or before the tick (0.1 ms slack)."""
    shown = 0
    for i, t in enumerate(times_s):
        if t <= tick_s + 1e-4:
            shown = i
    return shown


def ticks_in(times_s, fps):
    """Ticks of the grid from the first to the last frame's time."""
    return int(math.floor((float(times_s[-1]) - float(times_s[0]) + 1e-4) * fps)) + 1


@pytest.mark.parametrize("fps", [5.0, 12.5, 30.0])
@pytest.mark.parametrize("stride", [1, 2])
def test_fps_takes_the_frame_on_screen_at_each_tick_of_a_vfr_video(fps, stride):
    times = (VFR_MS / 1000.0).astype(np.float32)
    frames = make_frames(len(times))
    full = full_decode(frames)
    t = 4
    n = ticks_in(times, fps)
    span = (t - 1) * stride + 1
    start = max(n - span, 0) // 2  # mode="center" counts ticks
    # (5 fps, stride 2: 6 ticks for a span of 7, so the default "loop" policy wraps around.)
    expected = [on_screen(times, ((start + j * stride) % n) / fps) for j in range(t)]
    spec = ClipSpec(t, stride=stride, mode="center", fps=fps)
    clip = decode_np.sample_np(spec, frames, timestamps=times)
    assert frame_ids(clip, full) == expected
    np.testing.assert_array_equal(clip, decode_tf.sample_tf(spec, frames, timestamps=times))


def test_fps_random_clips_are_runs_of_ticks():
    times = (VFR_MS / 1000.0).astype(np.float32)
    frames = make_frames(len(times), 8, 8)
    fps, stride, t = 20.0, 2, 5
    n = ticks_in(times, fps)
    possible = {
        tuple(on_screen(times, (s + j * stride) / fps) for j in range(t))
        for s in range(n - (t - 1) * stride)
    }
    drawn = set()
    for seed in range(200):
        spec = ClipSpec(t, stride=stride, fps=fps, seed=seed)
        drawn.add(tuple(decode_np.plan_np(spec, frames, timestamps=times)["indices"][0]))
    assert drawn <= possible
    assert len(drawn) >= len(possible) // 2


def test_fps_at_the_stored_rate_keeps_every_frame_despite_float32_timestamps():
    frames = make_frames(90, 8, 8)
    times = (np.arange(90) / 30.0).astype(np.float32)  # 1/30 rounds up in float32
    spec = ClipSpec(90, fps=30.0, mode="center")
    np.testing.assert_array_equal(
        decode_np.plan_np(spec, frames, timestamps=times)["indices"][0], np.arange(90)
    )


def test_fps_without_timestamps_uses_the_stored_frame_rate():
    frames = make_frames(40, 8, 8)
    spec = ClipSpec(10, fps=12.5, mode="center")  # every other frame of a 25 fps video
    indices = decode_np.plan_np(spec, frames, source_fps=25.0)["indices"][0]
    n = ticks_in(np.arange(40) / 25.0, 12.5)
    start = (n - 10) // 2
    np.testing.assert_array_equal(indices, [2 * (start + j) for j in range(10)])
    with pytest.raises(ValueError, match="fps=12.5 needs each video's timestamps"):
        decode_np.plan_np(spec, frames)


@pytest.mark.parametrize("policy", ["loop", "repeat_last", "pad"])
def test_fps_short_video_policies_count_ticks(policy):
    times = (np.array([0, 100, 200, 300]) / 1000.0).astype(np.float32)  # 4 frames, 10 fps
    frames = make_frames(4, 8, 8)
    spec = ClipSpec(6, fps=20.0, mode="center", short_video=policy)  # 7 ticks of 50 ms
    indices = decode_np.plan_np(spec, frames, timestamps=times)["indices"][0].tolist()
    ticks = {"loop": [0, 1, 2, 3, 4, 5], "repeat_last": [0, 1, 2, 3, 4, 5], "pad": range(6)}
    expected = [on_screen(times, k / 20.0) for k in ticks[policy]]
    assert indices == expected  # 6 ticks fit in the 7 of the video: no policy needed
    spec = ClipSpec(9, fps=20.0, mode="center", short_video=policy)  # 9 ticks > 7
    indices = decode_np.plan_np(spec, frames, timestamps=times)["indices"][0].tolist()
    tick_of = {
        "loop": [k % 7 for k in range(9)],
        "repeat_last": [min(k, 6) for k in range(9)],
        "pad": [k if k < 7 else -1 for k in range(9)],
    }[policy]
    assert indices == [on_screen(times, k / 20.0) if k >= 0 else -1 for k in tick_of]
    with pytest.raises(ValueError, match="ticks of 1/20.0 s"):
        decode_np.plan_np(ClipSpec(9, fps=20.0, short_video="error"), frames, timestamps=times)


# ----------------------------------------------------------------------------
# Three test crops: PySlowFast's uniform_crop, spatial index 0, 1, 2.
# ----------------------------------------------------------------------------


def pyslowfast_offsets(height, width, size, spatial_idx):
    """PySlowFast `uniform_crop`: centred (ceil) on both axes, then 0 / end on the long side."""
    y_offset = int(math.ceil((height - size) / 2))
    x_offset = int(math.ceil((width - size) / 2))
    if height > width:
        if spatial_idx == 0:
            y_offset = 0
        elif spatial_idx == 2:
            y_offset = height - size
    else:
        if spatial_idx == 0:
            x_offset = 0
        elif spatial_idx == 2:
            x_offset = width - size
    return y_offset, x_offset


@pytest.mark.parametrize(
    ("height", "width", "size"), [(32, 48, 24), (48, 32, 24), (33, 51, 21), (40, 40, 31)]
)
def test_three_crops_are_pyslowfast_offsets_clip_major(height, width, size):
    frames = make_frames(20, height, width)
    full = full_decode(frames)
    spec = ClipSpec(4, mode="uniform", num_clips=2, crop_size=(size, size), num_crops=3)
    plan = decode_np.plan_np(spec, frames)
    expected = [pyslowfast_offsets(height, width, size, i) for i in range(3)] * 2
    assert [tuple(o) for o in plan["crop_offsets"].tolist()] == expected
    clips = decode_np.sample_np(spec, frames)
    assert clips.shape == (6, 4, size, size, 3)
    clip_indices = decode_np.plan_np(ClipSpec(4, mode="uniform", num_clips=2), frames)
    for v in range(6):
        frames_of_clip = clip_indices["indices"][v // 3]
        y, x = expected[v % 3]
        reference = full[frames_of_clip][:, y : y + size, x : x + size]
        np.testing.assert_array_equal(clips[v], reference)
    np.testing.assert_array_equal(clips, decode_tf.sample_tf(spec, frames).numpy())


def test_three_crops_after_short_side_are_placed_in_the_resized_frame():
    frames = make_frames(10, 32, 48)
    spec = ClipSpec(2, mode="center", short_side=24, crop_size=(20, 20), num_crops=3)
    plan = decode_np.plan_np(spec, frames)
    expected = [pyslowfast_offsets(24, 36, 20, i) for i in range(3)]
    assert [tuple(o) for o in plan["crop_offsets"].tolist()] == expected


# ----------------------------------------------------------------------------
# Scale jitter: a short side per clip, uniform over the integers, before the crop.
# ----------------------------------------------------------------------------


def test_scale_jitter_draws_every_short_side_uniformly():
    frames = make_frames(8, 64, 96)
    lo, hi = 40, 49
    counts = np.zeros(hi - lo + 1, int)
    for seed in range(400):
        spec = ClipSpec(1, short_side=(lo, hi), crop_size=(32, 32), num_clips=5, seed=seed)
        sides = decode_np.plan_np(spec, frames)["short_side"]
        assert ((sides >= lo) & (sides <= hi)).all()
        counts += np.bincount(sides - lo, minlength=hi - lo + 1)
    expected = counts.sum() / len(counts)  # 200 per value
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 27.9  # 9 degrees of freedom, p = 0.001


@pytest.mark.parametrize("short_side", [(36, 64), (20, 30)])
def test_scale_jitter_crops_each_clip_from_its_own_resized_frame(short_side):
    frames = make_frames(6, 64, 96)
    spec = ClipSpec(2, short_side=short_side, crop_size=(16, 16), num_clips=4, flip=True, seed=7)
    plan = decode_np.plan_np(spec, frames)
    clips = decode_np.sample_np(spec, frames)
    # The JPEG decoder halves the frame when even the largest short side still fits in half.
    ratio = 2 if short_side[1] * 2 <= 64 else 1
    for c in range(4):
        side = int(plan["short_side"][c])
        height, width = side, (96 * side + 32) // 64  # short side 64 -> side, long side rounded
        y, x = plan["crop_offsets"][c]
        assert 0 <= y <= height - 16 and 0 <= x <= width - 16
        for t, index in enumerate(plan["indices"][c]):
            decoded = tf.io.decode_jpeg(
                frames[index], channels=3, ratio=ratio, dct_method="INTEGER_ACCURATE"
            ).numpy()
            box = box_reference.resized_box(decoded, (y, x), (16, 16), (height, width), (16, 16))
            np.testing.assert_array_equal(clips[c, t], box[:, ::-1] if plan["flip"][c] else box)


# ----------------------------------------------------------------------------
# Random-resized crop: torchvision's RandomResizedCrop.get_params, rewritten here.
# ----------------------------------------------------------------------------


def torchvision_box(rng, height, width, scale, ratio):
    """torchvision.transforms.RandomResizedCrop.get_params, with Python's random."""
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target_area = area * rng.uniform(scale[0], scale[1])
        aspect_ratio = math.exp(rng.uniform(log_ratio[0], log_ratio[1]))
        w = int(round(math.sqrt(target_area * aspect_ratio)))
        h = int(round(math.sqrt(target_area / aspect_ratio)))
        if 0 < w <= width and 0 < h <= height:
            i = rng.randint(0, height - h)
            j = rng.randint(0, width - w)
            return i, j, h, w
    in_ratio = float(width) / float(height)
    if in_ratio < min(ratio):
        w = width
        h = int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        h = height
        w = int(round(h * max(ratio)))
    else:
        w = width
        h = height
    return (height - h) // 2, (width - w) // 2, h, w


@pytest.mark.parametrize(
    ("size", "area", "aspect"),
    [((64, 96), (0.08, 1.0), (3 / 4, 4 / 3)), ((96, 64), (0.3, 1.0), (0.5, 2.0))],
)
def test_resized_crop_boxes_follow_torchvision_distribution(size, area, aspect):
    height, width = size
    frames = make_frames(2, height, width)
    ours = []
    for seed in range(60):
        spec = ClipSpec(
            1, crop="resized", crop_size=(16, 16), crop_area=area, crop_aspect=aspect,
            num_clips=50, seed=seed,
        )
        plan = decode_np.plan_np(spec, frames)
        for (y, x), (h, w) in zip(plan["crop_offsets"].tolist(), plan["box_size"].tolist()):
            assert 0 <= y <= height - h and 0 <= x <= width - w and h > 0 and w > 0
            ours.append((y, x, h, w))
    rng = random.Random(0)
    theirs = [torchvision_box(rng, height, width, area, aspect) for _ in range(len(ours))]
    ours, theirs = np.array(ours, float), np.array(theirs, float)
    for name, of in [
        ("area fraction", lambda b: b[:, 2] * b[:, 3] / (height * width)),
        ("log aspect", lambda b: np.log(b[:, 3] / b[:, 2])),
        ("relative y", lambda b: b[:, 0] / np.maximum(height - b[:, 2], 1)),
    ]:
        result = stats.ks_2samp(of(ours), of(theirs))
        assert result.pvalue > 0.001, (name, result)


def test_resized_crop_falls_back_to_torchvisions_centre_crop():
    frames = make_frames(2, 60, 60)  # no box of aspect 3..4 with 90 % of the area fits
    spec = ClipSpec(
        1, crop="resized", crop_size=(8, 8), crop_area=(0.9, 1.0), crop_aspect=(3.0, 4.0), seed=1
    )
    plan = decode_np.plan_np(spec, frames)
    y, x, h, w = torchvision_box(random.Random(0), 60, 60, (0.9, 1.0), (3.0, 4.0))
    assert (y, x, h, w) == (20, 0, 20, 60)
    assert plan["crop_offsets"].tolist() == [[y, x]] and plan["box_size"].tolist() == [[h, w]]


def test_resized_crop_pixels_are_the_box_resized():
    frames = make_frames(12, 48, 64)
    full = full_decode(frames)
    spec = ClipSpec(3, crop="resized", crop_size=(24, 24), num_clips=4, flip=True, seed=3)
    plan = decode_np.plan_np(spec, frames)
    clips = decode_np.sample_np(spec, frames)
    for c in range(4):
        (y, x), (h, w) = plan["crop_offsets"][c], plan["box_size"][c]
        for t, index in enumerate(plan["indices"][c]):
            box = box_reference.resized(full[index, y : y + h, x : x + w], (24, 24))
            np.testing.assert_array_equal(clips[c, t], box[:, ::-1] if plan["flip"][c] else box)


# ----------------------------------------------------------------------------
# TF and NumPy paths: the same clips for every new argument, with a seed.
# ----------------------------------------------------------------------------

NEW_ARGS = [
    {"mode": "segments"},
    {"mode": "segments", "num_clips": 3, "crop_size": (16, 16), "flip": True},
    {"mode": "segment_centers", "crop_size": (16, 24), "crop": "center"},
    {"fps": 15.0},
    {"fps": 7.0, "mode": "uniform", "num_clips": 3, "stride": 2},
    {"fps": 25.0, "stride": (1, 3), "short_video": "pad"},
    {"fps": 9.0, "mode": "segments"},
    {"num_crops": 3, "crop_size": (24, 24), "mode": "uniform", "num_clips": 2},
    {"num_crops": 3, "crop_size": (20, 20), "short_side": 24, "flip": True},
    {"short_side": (20, 32), "crop_size": (20, 20), "flip": True, "num_clips": 2},
    {"short_side": (24, 40), "crop_size": (20, 20), "num_crops": 3, "fps": 12.0},
    {"crop": "resized", "crop_size": (24, 24), "flip": True, "num_clips": 3},
    {"crop": "resized", "crop_size": (16, 28), "crop_area": (0.3, 1), "crop_aspect": (0.5, 2)},
    {"crop": "resized", "crop_size": (20, 20), "short_side": (24, 30), "mode": "segments"},
    {"crop": "resized", "crop_size": (8, 8), "crop_area": (0.5, 1), "num_clips": 2},  # 1/2, 1/4
    # Overlapping clips (frames decoded once) whose flips differ: each view keeps its own flip.
    {"crop": "center", "short_side": 24, "crop_size": (20, 20), "flip": True, "num_clips": 8,
     "mode": "uniform"},
]


def test_a_drawn_box_decodes_at_the_coarsest_scale_that_covers_it():
    frames = make_frames(6, 128, 192)
    spec = ClipSpec(
        2, crop="resized", crop_size=(16, 16), crop_area=(0.3, 1.0), num_clips=6, seed=2
    )
    plan = decode_np.plan_np(spec, frames)
    clips = decode_np.sample_np(spec, frames)
    sizes = plan["box_size"]
    # Reference: the largest of 2, 4, 8 at which every box still covers 16x16 (128 and 192
    # divide by 8, so the grid maps exactly at every scale).
    ratio = max(r for r in (1, 2, 4, 8) if (sizes >= 16 * r).all())
    assert ratio > 1  # the boxes are large: this test is about a reduced decode
    for c in range(6):
        (y, x), (h, w) = plan["crop_offsets"][c], sizes[c]
        for t, index in enumerate(plan["indices"][c]):
            decoded = tf.io.decode_jpeg(
                frames[index], channels=3, ratio=ratio, dct_method="INTEGER_ACCURATE"
            ).numpy()
            box = box_reference.resized_box(decoded, (y, x), (h, w), (128, 192), (16, 16))
            np.testing.assert_array_equal(clips[c, t], box)
    np.testing.assert_array_equal(clips, decode_tf.sample_tf(spec, tf.constant(frames)).numpy())


@pytest.mark.parametrize("kwargs", NEW_ARGS)
def test_numpy_and_tf_paths_give_the_same_clips(kwargs):
    times = (VFR_MS / 1000.0).astype(np.float32)
    frames = make_frames(len(times))
    for seed in (0, 1, 2):
        decoder = ClipDecoder(4, seed=seed, **kwargs)
        plan_np = decoder.plan_np(frames, timestamps=times)
        plan_tf = decoder.plan(frames, timestamps=times)
        for key, value in plan_np.items():
            np.testing.assert_array_equal(value, plan_tf[key].numpy(), err_msg=key)
        np_clips = decoder.sample_np(frames, timestamps=times).astype(int)
        tf_clips = decoder.sample(frames, timestamps=times).numpy().astype(int)
        assert np_clips.shape == tf_clips.shape == tuple(decoder.spec.output_shape((H, W)))
        # OpenCV's and TF's resizes round differently: one grey level per resize step.
        steps = ("short_side" in kwargs) + (kwargs.get("crop") == "resized")
        assert np.abs(np_clips - tf_clips).max() <= steps


def test_static_output_shape_of_three_crops_in_a_graph():
    frames = make_frames(12)
    decoder = ClipDecoder(4, num_crops=3, crop_size=(24, 24), mode="uniform", num_clips=2)
    fn = tf.function(decoder.sample, input_signature=[tf.TensorSpec([None], tf.string)])
    assert fn.get_concrete_function().structured_outputs.shape.as_list() == [6, 4, 24, 24, 3]
    assert fn(tf.constant(frames)).shape == (6, 4, 24, 24, 3)


def test_a_feature_decoder_with_fps_says_how_to_get_timestamps():
    decoder = ClipDecoder(4, fps=10.0)
    with pytest.raises(ValueError, match="EncodedFrames"):
        decoder.decode_example(tf.constant(make_frames(3, 8, 8)))
    times = tf.constant((np.arange(12) / 25.0).astype(np.float32))
    frames = make_frames(12, 8, 8)
    example = decoder.decode_features({"video": tf.constant(frames), "timestamps": times})
    assert example["video"].shape == (4, 8, 8, 3)


# ----------------------------------------------------------------------------
# Bad combinations: a ValueError naming the argument, at construction.
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"fps": 0}, "fps"),
        ({"fps": -30.0}, "fps"),
        ({"fps": float("nan")}, "fps"),
        ({"fps": True}, "fps"),
        ({"fps": "30"}, "fps"),
        ({"num_crops": 3}, "num_crops"),
        ({"num_crops": 0, "crop_size": (8, 8)}, "num_crops"),
        ({"mode": "segment_centers", "num_clips": 2}, "mode"),
        ({"mode": "segments", "stride": 2}, "stride"),
        ({"mode": "segment"}, "mode"),
        ({"short_side": (256, 320)}, "short_side"),
        ({"short_side": (320, 256), "crop_size": (224, 224)}, "short_side"),
        ({"short_side": (0, 256), "crop_size": (224, 224)}, "short_side"),
        ({"crop": "resized"}, "crop"),
        ({"crop": "resized", "crop_size": (8, 8), "num_crops": 3}, "num_crops"),
        ({"crop_area": (0.5, 0.2)}, "crop_area"),
        ({"crop_area": (0.1, 1.5)}, "crop_area"),
        ({"crop_area": (0.0, 1.0)}, "crop_area"),
        ({"crop_aspect": (2.0, 0.5)}, "crop_aspect"),
        ({"crop_aspect": (0, 1)}, "crop_aspect"),
        ({"crop_aspect": (0.5,)}, "crop_aspect"),
    ],
)
def test_bad_combinations_name_the_argument(kwargs, argument):
    for make in (lambda: ClipSpec(4, **kwargs), lambda: ClipDecoder(4, **kwargs)):
        with pytest.raises(ValueError, match=argument):
            make()


def test_the_readme_recipe_table_holds_valid_calls():
    frames = make_frames(12, 256, 340)
    times = np.arange(12, dtype=np.float32) / 30
    readme = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
    table = readme.split("| recipe | train | test |")[1].split("\n\n")[0]
    lines = [line for line in table.splitlines() if line.startswith("| ") and "`" in line]
    rows = [line.split(" | ") for line in lines]
    assert len(rows) >= 5
    for name, train, test in rows:
        train_args = eval(f"dict({train.strip('` ').replace('T=', 'num_frames=')})")  # noqa: S307
        test_args = eval(f"dict({test.strip('` |').replace('=N', '=4')})")  # noqa: S307
        kept = {k: train_args[k] for k in ("num_frames", "stride", "fps") if k in train_args}
        for args in (train_args, {**kept, **test_args}):
            spec = ClipSpec(**args)
            clip = decode_np.sample_np(spec, frames, seed=0, timestamps=times, source_fps=30.0)
            assert clip.shape == tuple(spec.output_shape((256, 340))), (name, args)
