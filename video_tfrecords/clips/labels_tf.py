"""The clip's labels and caption(s) in a TF graph (`ClipDecoder.decode_features`): the plan's
frame indices and the clip's key in TF, then `labels.annotate` itself through
`tf.numpy_function`, so that TF and NumPy readers give the same result for a seed; its
CorruptRecordError (stored annotations that do not fit) names the video, as ClipSource's."""

from __future__ import annotations

import contextlib

import numpy as np
import tensorflow as tf

from video_tfrecords.clips import backends, decode_tf, labels
from video_tfrecords.clips.plan import clip_key
from video_tfrecords.util.errors import CorruptRecordError

__all__ = ["annotate_tf", "example_key", "segment_range_tf"]


def example_key(spec, frames, seed, fingerprint=None):
    """The whole example's clip key as an int64 tensor (its bits: a uint64), as `ClipSource`
    draws the segment and the captions with."""
    ops = backends.tf_ops()
    if fingerprint is not None:
        fingerprint = tf.reshape(tf.cast(fingerprint, tf.int64), [])
    frames = tf.convert_to_tensor(frames, tf.string)
    return ops.signed(clip_key(ops, spec, frames, seed, fingerprint))


def segment_range_tf(timestamps, segment_start, segment_end, key, *, name=None):
    """`labels.segment_range` in a graph: int64 (first, stop); `name` (a string tensor, or
    None) names the video in errors."""

    def run(times, starts, ends, key, name):
        with _naming(name):
            first, stop = labels.segment_range(times, starts, ends, _u64(key))
        return np.int64(first), np.int64(stop)

    first, stop = tf.numpy_function(
        run, [timestamps, segment_start, segment_end, key, _name(name)], [tf.int64, tf.int64]
    )
    return tf.reshape(first, []), tf.reshape(stop, [])


def annotate_tf(
    spec, frames, seed, stored: dict, example_times, num_classes, *, key, first=0, **plan_inputs
) -> dict:
    """{"labels": float32 [(views,) classes]} with `stored` labels; {"caption": tf.string
    [(views)]} or {"captions": tf.string [(views,) n]} with `stored` captions (`labels.annotate`;
    several views' caption lists padded with ""). `frames` are those the clip was sampled from,
    frame `first` of the example's (timed `example_times`); `key`: `example_key`;
    `plan_inputs`: the plan's (`timestamps` of `frames` with `spec.fps`)."""
    frames = tf.convert_to_tensor(frames, tf.string)
    plan = decode_tf.plan_tf(spec, frames, seed, **plan_inputs)
    indices = plan["indices"]
    indices = tf.where(indices >= 0, indices + tf.cast(first, tf.int64), indices)
    names = sorted(stored)
    mode = labels.caption_mode(spec)

    def run(indices, times, key, name, *values):
        found = dict(zip(names, values))
        if "text" in found:
            found["text"] = list(found["text"])
        found["num_classes"] = num_classes or 0
        with _naming(name):
            out = labels.annotate(spec, found, indices, times, _u64(key))
        results = []
        if "labels" in out:
            results.append(np.asarray(out["labels"], np.float32))
        if "caption" in out:
            results.append(np.asarray(out["caption"], object))
        if "captions" in out:
            results.append(_padded(out["captions"], spec.multi_clip))
        return results

    types = ([tf.float32] if "labels" in stored else []) + ([tf.string] if "text" in stored else [])
    values = [stored[name] for name in names]
    inputs = [indices, example_times, key, _name(plan_inputs.get("name")), *values]
    found = tf.numpy_function(run, inputs, types)
    out, views = {}, [spec.num_views] if spec.multi_clip else []
    if "labels" in stored:
        out["labels"] = found.pop(0)
        out["labels"].set_shape([*views, num_classes])
    if "text" in stored:
        name = "caption" if mode == "random" else "captions"
        out[name] = found.pop(0)
        out[name].set_shape(views if mode == "random" else [*views, None])
    return out


def _name(name):
    """The video's name as a string tensor ("" without one)."""
    return tf.constant("") if name is None else tf.convert_to_tensor(name, tf.string)


@contextlib.contextmanager
def _naming(name: bytes):
    """CorruptRecordError raised within names the video `name` (bytes; none if empty), as
    ClipSource's errors do."""
    try:
        yield
    except CorruptRecordError as e:
        if not name:
            raise
        video = name.decode("utf-8", "replace")
        raise CorruptRecordError(f"{e} (video `{video}`)") from None


def _u64(key) -> np.uint64:
    """An int64 key's bits as the uint64 they are."""
    return np.int64(key).astype(np.uint64)


def _padded(captions: list, multi_clip: bool) -> np.ndarray:
    """Each view's list of captions as one array: [n], or [views, most] padded with b""."""
    if not multi_clip:
        return np.asarray(captions, object).reshape(-1)
    most = max((len(c) for c in captions), default=0)
    return np.asarray([list(c) + [b""] * (most - len(c)) for c in captions], object).reshape(
        len(captions), most
    )
