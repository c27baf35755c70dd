"""The reused output arrays: one comes back only when nothing refers to it or its memory."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from video_tfrecords.clips import buffers
from video_tfrecords.clips.decode_np import sample_np
from video_tfrecords.clips.spec import ClipSpec


def test_a_released_array_comes_back_and_a_held_one_never_does():
    pool = buffers.ArrayPool(keep=4)
    held = pool.take((2, 3))
    released = pool.take((2, 3))
    assert released is not held
    released_id = id(released)
    del released
    again = pool.take((2, 3))
    assert id(again) == released_id and again is not held
    assert again.ctypes.data % 4096 == 0
    for _ in range(50):  # taking and releasing adds one array to the two held, not fifty
        batch = pool.take((2, 3))
        del batch
    assert pool.size == 3


@pytest.mark.parametrize(
    "keep_part",
    [lambda a: a[0], lambda a: a.reshape(-1), lambda a: memoryview(a), lambda a: a[:, ::-1]],
    ids=["row", "reshape", "memoryview", "reversed"],
)
def test_an_array_whose_view_is_held_is_not_handed_out_again(keep_part):
    pool = buffers.ArrayPool(keep=4)
    array = pool.take((2, 3))
    array[...] = 7
    part = keep_part(array)
    del array  # only a view of its memory is left
    other = pool.take((2, 3))
    other[...] = 0
    assert np.all(np.asarray(part) == 7)


def test_the_least_recently_used_free_array_makes_room():
    pool = buffers.ArrayPool(keep=2)
    first = pool.take((1,))
    first_ref = weakref.ref(first)
    second = pool.take((2,))
    del first, second  # both free; (1,) used least recently
    third = pool.take((3,))  # no room: (1,) goes
    gc.collect()
    assert first_ref() is None and pool.size == 2
    held = [pool.take((4,)), pool.take((5,))]  # (2,) goes, then nothing is free: not kept
    assert pool.size == 2 and third is not None and len(held) == 2


def test_kept_bytes_stay_under_the_limit():
    pool = buffers.ArrayPool(keep=10, max_bytes=1000)
    held = [pool.take((300,)) for _ in range(5)]
    assert pool.nbytes == 900 and pool.size == 3  # the last two not kept
    del held
    pool.take((800,))  # free arrays make room for it
    assert pool.nbytes <= 1000


def test_large_clips_reuse_released_memory_and_small_ones_are_plain_arrays(monkeypatch):
    monkeypatch.setattr(buffers, "SHARED", buffers.ArrayPool())
    monkeypatch.setattr(buffers, "LARGE", 64 * 48 * 3 * 4)
    frames = [_jpeg(i) for i in range(6)]
    small = sample_np(ClipSpec(2, mode="center"), frames)
    assert buffers.SHARED.size == 0 and small.shape == (2, 48, 64, 3)
    clip = sample_np(ClipSpec(4, mode="center"), frames)
    kept_first_frame = clip[0].copy()
    first_memory = clip.ctypes.data
    view = clip[0]
    del clip
    held = sample_np(ClipSpec(4, mode="center", flip=True, seed=1), frames)  # a view is held
    assert held.ctypes.data != first_memory
    np.testing.assert_array_equal(view, kept_first_frame)
    memories = {first_memory, held.ctypes.data}
    del view, held
    again = sample_np(ClipSpec(4, mode="center"), frames)
    assert again.ctypes.data in memories and buffers.SHARED.size == 2


def _jpeg(seed):
    import simplejpeg

    pixels = np.random.default_rng(seed).integers(0, 256, (48, 64, 3), np.uint8)
    return simplejpeg.encode_jpeg(pixels, quality=90, colorsubsampling="420")


def test_reused_test_view_arrays_never_overwrite_a_clip_still_held(monkeypatch):
    """The TF graph's test crops come from the pool too."""
    import tensorflow as tf

    from video_tfrecords.decoders import ClipDecoder

    monkeypatch.setattr(buffers, "SHARED", buffers.ArrayPool())
    monkeypatch.setattr(buffers, "LARGE", 1)
    frames = [_jpeg(i) for i in range(12)]
    kwargs = {"mode": "uniform", "num_clips": 2, "crop_size": (48, 48), "num_crops": 3}
    # In a graph TensorFlow keeps the returned array's memory (eagerly it copies it).
    sample = tf.function(ClipDecoder(4, **kwargs).sample)
    first = sample(tf.constant(frames), tf.constant(1, tf.int64))
    kept = first.numpy().copy()
    for seed in range(2, 6):  # more clips while `first` is held, then released ones reused
        second = sample(tf.constant(frames[::-1]), tf.constant(seed, tf.int64))
        expected = ClipDecoder(4, **kwargs).sample_np(frames[::-1], seed)
        np.testing.assert_array_equal(second, expected)
        del second
    np.testing.assert_array_equal(first.numpy(), kept)
    np.testing.assert_array_equal(kept, ClipDecoder(4, **kwargs).sample_np(frames, 1))
    assert 0 < buffers.SHARED.size <= 4  # first, then one of each kind reused (9 without reuse)
