"""Array backends for the clip plan: the few ops it needs, on NumPy or TensorFlow.

The plan (`plan`, `sampling`, `boxes`, `geometry`, `keys`) is written once
over these ops, so the NumPy path and the TF path draw identical clips.
`tf_ops()` imports TensorFlow on first use, so a process without TensorFlow
can plan clips.
"""

from __future__ import annotations

import contextlib
import functools
import numbers
import os
import sys
import threading

import numpy as np

from video_tfrecords.clips import jpeg
from video_tfrecords.util.errors import CorruptRecordError

__all__ = ["NP_OPS", "U64", "NumpyOps", "TensorFlowOps", "ops_for", "tf_ops"]

U64 = 2**64

class NumpyOps:
    """NumPy (and plain Python) implementations; checks raise ValueError."""

    u64 = staticmethod(np.uint64)
    i64 = staticmethod(np.int64)
    maximum = staticmethod(np.maximum)
    minimum = staticmethod(np.minimum)
    where = staticmethod(np.where)
    logical_and = staticmethod(np.logical_and)
    logical_or = staticmethod(np.logical_or)
    logical_not = staticmethod(np.logical_not)
    all_of = staticmethod(np.all)

    @staticmethod
    def stack(values):
        """`np.stack`; one `np.array` call (a tenth of the cost) for values of one NumPy type
        and shape, where the two give the same array."""
        first = values[0] if len(values) else None
        kind = type(first)
        if kind is np.ndarray and first.dtype.kind != "O":
            dtype, shape = first.dtype, first.shape
            if all(type(v) is np.ndarray and v.dtype == dtype and v.shape == shape for v in values):
                return np.array(values)
        elif isinstance(first, np.generic) and all(type(v) is kind for v in values):
            return np.array(values)
        return np.stack(values)

    @staticmethod
    def shr(x, n):
        return x >> np.uint64(n)

    @staticmethod
    def f64(x):
        return np.asarray(x, np.float64)

    @staticmethod
    def floor_i64(x):
        return np.floor(x).astype(np.int64)

    @staticmethod
    def round_i64(x):
        """Round half to even (Python's `round`), to int64."""
        return np.rint(x).astype(np.int64)

    sqrt = staticmethod(np.sqrt)
    exp = staticmethod(np.exp)

    @staticmethod
    def last_at_or_before(sorted_values, values):
        """Index of the last element <= each value (-1 if none)."""
        return np.searchsorted(sorted_values, values, side="right").astype(np.int64) - 1

    @staticmethod
    def repeat(values, n):
        return np.repeat(values, n, axis=0)

    gather = staticmethod(np.take)

    @staticmethod
    def arange(n):
        return np.arange(n, dtype=np.int64)

    @staticmethod
    def zeros(shape, dtype):
        return np.zeros(shape, {"int64": np.int64, "bool": bool}[dtype])

    @staticmethod
    def size(values):
        return len(values)

    @staticmethod
    def num_frames(frames):
        return np.int64(len(frames))

    @staticmethod
    def frame_or_empty(frames, index):
        return frames[int(index)] if len(frames) else b""

    @staticmethod
    def byte_length(data):
        return memoryview(data).nbytes

    @staticmethod
    def byte_values(data, start, size):
        start = int(start)
        return np.frombuffer(data, np.uint8)[start : start + size].astype(np.uint64)

    @staticmethod
    def sum_u64(values):
        return np.uint64(values.sum(dtype=np.uint64))

    @staticmethod
    def seed_u64(seed):
        return np.uint64(int(seed) % U64)

    @staticmethod
    def signed(u):
        """uint64 -> Python int in the int64 range."""
        v = int(u)
        return v - U64 if v >= 2**63 else v

    @staticmethod
    def fresh_u64():
        return np.uint64(int.from_bytes(os.urandom(8), "little"))

    @staticmethod
    def wrapping():
        """uint64 arithmetic wraps around by design: silence NumPy's scalar overflow warning."""
        return np.errstate(over="ignore")

    @staticmethod
    def valid_times(times):
        """Whether every time is finite and >= 0, and none is before the one before it."""
        times = np.asarray(times)
        return bool((times >= 0).all() and np.isfinite(times[-1:]).all()
                    and (times[1:] >= times[:-1]).all())  # fmt: skip

    @staticmethod
    def valid_rate(rate):
        """Whether a stored rate (frames or samples per second) is a finite number > 0."""
        return bool(0 < float(rate) < np.inf)

    @staticmethod
    def jpeg_problem(data):
        """(whether the header is one a reader decodes, what is wrong with it if not)."""
        problem = jpeg.frame_problem(data)
        return problem is None, problem

    @staticmethod
    def jpeg_size(data):
        return tuple(np.int64(v) for v in jpeg.jpeg_size(data))

    @staticmethod
    def message(parts):
        return "".join(
            p.decode("utf-8", "replace") if isinstance(p, bytes) else str(p) for p in parts
        )

    def check(self, ok, parts_fn, error=ValueError):
        """Raises `error`(message) when `ok` is false; the message is built only then."""
        if not ok:
            raise error(self.message(parts_fn()))

    def corrupt(self, ok, parts_fn):
        """`check` for stored data: raises CorruptRecordError."""
        self.check(ok, parts_fn, CorruptRecordError)

    @staticmethod
    def after(checks, fn):
        del checks  # Checks have already raised.
        return fn()

    @staticmethod
    def identity(x):
        return x


class TensorFlowOps:
    """TensorFlow implementations (graph or eager); checks raise InvalidArgumentError."""

    def __init__(self):
        import tensorflow as tf  # only processes that use the TF path import it

        self.tf = tf
        self._generator = None
        self._lock = threading.Lock()
        self.maximum, self.minimum, self.where = tf.maximum, tf.minimum, tf.where
        self.stack, self.logical_and = tf.stack, tf.logical_and
        self.logical_or, self.logical_not = tf.logical_or, tf.logical_not
        self.all_of = tf.reduce_all

    def u64(self, x):
        return self.tf.cast(x, self.tf.uint64)

    def i64(self, x):
        return self.tf.cast(x, self.tf.int64)

    def shr(self, x, n):
        return self.tf.bitwise.right_shift(x, self.tf.constant(n, self.tf.uint64))

    def f64(self, x):
        return self.tf.cast(x, self.tf.float64)

    def floor_i64(self, x):
        return self.tf.cast(self.tf.floor(x), self.tf.int64)

    def round_i64(self, x):
        return self.tf.cast(self.tf.math.round(x), self.tf.int64)  # half to even

    def sqrt(self, x):
        return self.tf.sqrt(x)

    def exp(self, x):
        return self.tf.exp(x)

    def last_at_or_before(self, sorted_values, values):
        tf = self.tf
        flat = tf.reshape(values, [1, -1])  # searchsorted wants matching leading dimensions
        found = tf.searchsorted(sorted_values[None], flat, side="right", out_type=tf.int64)
        return tf.reshape(found, tf.shape(values, out_type=tf.int64)) - 1

    def repeat(self, values, n):
        return self.tf.repeat(values, n, axis=0)

    def gather(self, values, indices):
        return self.tf.gather(values, indices)

    def arange(self, n):
        return self.tf.range(n, dtype=self.tf.int64)

    def zeros(self, shape, dtype):
        return self.tf.zeros(shape, dtype)

    def size(self, values):
        return self.tf.size(values, out_type=self.tf.int64)

    def num_frames(self, frames):
        return self.tf.shape(frames, out_type=self.tf.int64)[0]

    def frame_or_empty(self, frames, index):
        return self.tf.strings.reduce_join(frames[index : index + 1])

    def byte_length(self, data):
        return self.tf.strings.length(data)

    def byte_values(self, data, start, size):
        chunk = self.tf.strings.substr(data, start, size)
        return self.u64(self.tf.io.decode_raw(chunk, self.tf.uint8))

    def sum_u64(self, values):
        return self.tf.reduce_sum(values)

    def seed_u64(self, seed):
        tf = self.tf
        if isinstance(seed, numbers.Integral):
            return tf.constant(int(seed) % U64, tf.uint64)
        seed = tf.convert_to_tensor(seed)
        if seed.dtype == tf.uint64:
            return seed
        return tf.bitcast(tf.cast(seed, tf.int64), tf.uint64)

    def signed(self, u):
        return self.tf.bitcast(u, self.tf.int64)

    def fresh_u64(self):
        """A fresh uint64 per run of the op, from a generator that outlives pipelines."""
        tf = self.tf
        with self._lock:
            if self._generator is None:
                # Created eagerly even while a tf.data function is being traced,
                # so its state persists across iterators and epochs.
                with tf.init_scope(), tf.device("/cpu:0"):
                    self._generator = tf.random.Generator.from_non_deterministic_state()
        return tf.bitcast(self._generator.uniform_full_int([], tf.int64), tf.uint64)

    @staticmethod
    def wrapping():
        return contextlib.nullcontext()

    def valid_times(self, times):
        tf = self.tf
        ordered = tf.reduce_all(times[1:] >= times[:-1])
        finite = tf.reduce_all(tf.math.is_finite(times[-1:]))
        return tf.reduce_all(times >= 0) & finite & ordered

    def valid_rate(self, rate):
        rate = self.tf.cast(rate, self.tf.float64)
        return self.tf.logical_and(rate > 0, self.tf.math.is_finite(rate))

    def jpeg_problem(self, data):
        """(whether it starts like a JPEG, what is wrong if not): the whole header of every
        frame a clip decodes is checked before any is decoded (`decode_tf`)."""
        magic = self.tf.strings.substr(data, 0, 3)
        return self.tf.reduce_all(self.tf.equal(magic, jpeg.JPEG_MAGIC)), "is not a valid JPEG"

    def jpeg_size(self, data):
        size = self.i64(self.tf.io.extract_jpeg_shape(data))
        return size[0], size[1]

    def message(self, parts):
        """Joins str / string-tensor / number-tensor parts into one string tensor."""
        tf = self.tf
        pieces = []
        for part in parts:
            if isinstance(part, (str, bytes)):
                pieces.append(part)
            else:
                part = tf.convert_to_tensor(part)
                pieces.append(part if part.dtype == tf.string else tf.strings.as_string(part))
        return tf.strings.join(pieces)

    def check(self, ok, parts_fn):
        """A check to depend on: raises InvalidArgumentError when `ok` is false.

        The message (which may hash frames) is only computed on failure.
        """
        tf = self.tf
        if tf.executing_eagerly():
            if not bool(ok):
                text = self.message(parts_fn()).numpy().decode("utf-8", "replace")
                raise tf.errors.InvalidArgumentError(None, None, text)
            return tf.constant(True)

        def fail():
            assert_op = tf.debugging.Assert(False, [self.message(parts_fn())], summarize=1)
            with tf.control_dependencies([assert_op]):
                return tf.constant(False)

        return tf.cond(ok, lambda: tf.constant(True), fail)

    def corrupt(self, ok, parts_fn):
        """`check` for stored data: its message starts "CorruptRecordError: " (a graph raises
        InvalidArgumentError, as `tf.numpy_function` turns the NumPy path's error)."""
        return self.check(ok, lambda: (f"{CorruptRecordError.__name__}: ", *parts_fn()))

    def after(self, checks, fn):
        with self.tf.control_dependencies(checks):
            return fn()

    def identity(self, x):
        """`x` as a new op (one made in `after` runs after its checks)."""
        return self.tf.identity(x)


NP_OPS = NumpyOps()


@functools.cache
def tf_ops() -> TensorFlowOps:
    """The TensorFlow backend (imports TensorFlow on the first call)."""
    return TensorFlowOps()


def _is_tensor(x) -> bool:
    tf = sys.modules.get("tensorflow")  # Nothing is a tensor unless TensorFlow is loaded.
    return tf is not None and isinstance(x, (tf.Tensor, tf.Variable))


def ops_for(*values):
    """TF ops if any of `values` is a tensor, else NumPy ops."""
    return tf_ops() if any(map(_is_tensor, values)) else NP_OPS
