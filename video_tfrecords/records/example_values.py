"""A parsed record's values as a reader takes them, each checked where it is taken.

A record may be damaged, or written by anyone who can write a shard: its checksums then pass,
and only what its values are can tell. Each value a reader uses is taken through `Values`,
which checks its kind (bytes, ints, floats) and count, and the checks here its range: the
label among the classes, times that are times, rates that are rates, audio that covers the
frames, a frame size a frame can have. A value that fails raises CorruptRecordError naming the
feature, the video and the record, in time and memory bounded by the record's own values
(`example_parser` bounds how many a record may hold).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from video_tfrecords.clips import jpeg, labels
from video_tfrecords.clips.backends import NP_OPS
from video_tfrecords.records import schema
from video_tfrecords.records.example_parser import ByteValues, parse_example
from video_tfrecords.util.errors import CorruptRecordError

__all__ = [
    "MAX_RATE", "Values", "audio_channels", "check_audio", "check_covers", "check_label",
    "check_times", "covers_frames", "example_of", "frames_span", "kind_of", "pcm_view", "scalars",
]  # fmt: skip

MAX_RATE = 1_000_000  # per second: above any frame rate the build stores and any sample rate


def kind_of(values) -> str:
    """What a parsed feature holds: "bytes", "int", "float" or "none" (an empty list)."""
    if isinstance(values, ByteValues):
        return "bytes"
    if isinstance(values, np.ndarray):
        return "float" if values.dtype == np.float32 else "int"
    return "none"


def kind_for(dtype: str | None, text: bool = False) -> str:
    """The kind a feature of `dtype` is stored as (TFDS: floats as a FloatList, other numbers
    and bools as an Int64List, text and encoded tensors as a BytesList)."""
    if text or dtype in (None, "string"):
        return "bytes"
    return "float" if dtype.startswith("float") else "int"


class Values:
    """The values of one parsed record, taken by name and checked (`where()` names the video
    and the record in errors)."""

    def __init__(self, parsed: dict, where: Callable[[], str]):
        self.parsed, self.where = parsed, where

    @classmethod
    def of(cls, record, where: Callable[[], str], tables: dict | None = None) -> Values:
        """The values of `record`'s bytes, parsed (`example_parser.parse_example`, with its
        size `tables`): a record that is no Example raises CorruptRecordError naming it."""
        try:
            return cls(parse_example(record, tables), where)
        except ValueError as e:
            raise CorruptRecordError(f"{where()}: {e}") from e

    def error(self, text: str) -> CorruptRecordError:
        return CorruptRecordError(f"{self.where()}: {text}.")

    def list(self, name: str, kind: str):
        """The values of feature `name`, which must hold `kind` (an empty list counts as none
        of any kind); None if the record does not have it."""
        values = self.parsed.get(name)
        if values is None:
            return None
        found = kind_of(values)
        if found not in (kind, "none"):
            raise self.error(f"its {name} holds {found}, where the dataset stores {kind}")
        return values

    def listed(self, name: str, kind: str):
        """`list`, with none for a feature the record does not have (an array's truth is not
        its length, so not `list(...) or ()`)."""
        values = self.list(name, kind)
        return () if values is None else values

    def one(self, name: str, kind: str):
        """The single value of feature `name` (bytes as a memoryview, numbers as Python numbers),
        None if the record does not have it."""
        values = self.list(name, kind)
        if values is None or not len(values):
            return None
        if len(values) != 1:
            raise self.error(f"its {name} holds {len(values)} values, where it has one")
        return values[0] if kind == "bytes" else values[0].item()

    def take(self, name: str):
        """Feature `name` as `schema.Example` declares it: a list's values, or its one value
        (text as str); None if the record does not have it."""
        kind, many, text = schema.record_kinds()[name]
        if not many:
            return self.text(name) if text else self.one(name, kind)
        values = self.list(name, kind)
        if text and values is not None:
            return [bytes(value).decode("utf-8", "replace") for value in values]
        return values

    def text(self, name: str) -> str | None:
        value = self.one(name, "bytes")
        return None if value is None else bytes(value).decode("utf-8", "replace")

    def count(self, name: str, top: int) -> int | None:
        """An int feature that counts something: 1 to `top`."""
        value = self.one(name, "int")
        if value is not None and not 0 < value <= top:
            raise self.error(f"its {name} is {value}, not 1 to {top}")
        return value

    def checksum(self, name: str) -> int | None:
        """A stored CRC32C: 0 to 2**32 - 1."""
        value = self.one(name, "int")
        if value is not None and not 0 <= value < 1 << 32:
            raise self.error(f"its {name} is {value}, not a CRC32C")
        return value

    def rate(self, name: str) -> float | None:
        """A rate (frames or samples per second): finite, above 0 and at most MAX_RATE."""
        value = self.take(name)
        if value is not None and not 0 < value <= MAX_RATE:
            raise self.error(f"its {name} is {value}: not a rate (above 0, at most {MAX_RATE})")
        return value

    def frame_size(self) -> tuple[int, int] | None:
        """The stored size of every frame (2.5.0 on), one a frame can have."""
        height = self.count(schema.FRAME_HEIGHT, jpeg.MAX_PIXELS)
        width = self.count(schema.FRAME_WIDTH, jpeg.MAX_PIXELS)
        if height is None or width is None:
            return None
        if height * width > jpeg.MAX_PIXELS:
            raise self.error(
                f"its frames are said to be {width}x{height}: more than the {jpeg.MAX_PIXELS} "
                "pixels a stored frame may have"
            )
        return height, width


def audio_channels(features: dict) -> int | None:
    """The channels of a dataset's stored audio, from its `features` (name ->
    `dataset_files.Feature`; audio is [samples, channels]); None if it stores none."""
    audio = features.get(schema.AUDIO)
    return int(audio.shape[1]) if audio is not None and len(audio.shape or ()) == 2 else None


def example_of(values: Values, features: dict | None = None) -> schema.Example:
    """The record as a `schema.Example`: each declared field it stores, taken checked
    (`Values.take`); a Sequence of fields as a dict of lists, a tensor stored as bytes as its
    array (audio: int16 [samples, channels], the channels of the dataset's `features`, name ->
    `dataset_files.Feature`)."""
    channels = audio_channels(features or {}) or 1
    found = {}
    for field in schema.declared():
        kind, encoded = field.metadata["kind"], field.metadata["encoded"]
        if isinstance(kind, dict):
            lists = {key: values.take(f"{field.name}/{key}") for key in kind}
            if any(value is not None for value in lists.values()):
                found[field.name] = {
                    key: [] if value is None else list(value) for key, value in lists.items()
                }
            continue
        value = values.take(field.name)
        if value is not None and encoded is not None:
            try:
                if field.name == schema.AUDIO:
                    value = pcm_view(value, channels)
                elif len(value) % np.dtype(encoded).itemsize:
                    raise ValueError(
                        f"its {field.name} is {len(value)} bytes, not {encoded} values"
                    )
                else:
                    value = np.frombuffer(value, encoded)
            except ValueError as e:
                raise values.error(str(e)) from None
        found[field.name] = value
    return schema.Example(**found)


def scalars(values: Values, features: dict) -> dict:
    """The record's values of the scalar `features` (name -> `dataset_files.Feature`), each
    taken checked: str for Text, else a NumPy scalar of the feature's dtype (a ClassLabel's
    int64); a feature the record lacks is left out."""
    found = {}
    for name, feature in features.items():
        kind = kind_for(feature.dtype, text=feature.kind == "Text")
        value = values.one(name, "int" if feature.kind == "ClassLabel" else kind)
        if value is None:
            continue
        if feature.kind == "Text":
            found[name] = bytes(value).decode("utf-8", "replace")
        elif feature.kind == "ClassLabel":
            found[name] = np.int64(value)
        else:
            found[name] = np.asarray(value).astype(feature.dtype or type(value))[()]
    return found


def check_label(values: Values, label: int, num_classes: int | None) -> int:
    """The example's label: one of the dataset's classes, or -1 (none) for a JSON Lines line
    without one (`clips.labels.valid_label`, the TF path's rule too)."""
    if num_classes is not None and not labels.valid_label(label, num_classes):
        raise values.error(f"its label is {label}, not one of the dataset's {num_classes} classes")
    return label


def check_times(values: Values, times: np.ndarray, num_frames: int) -> np.ndarray:
    """The frames' timestamps: one a frame, each finite and >= 0, none before the one before
    it; within the example's span when it stores one."""
    if len(times) != num_frames:
        raise values.error(f"it has {num_frames} frames but {len(times)} timestamps")
    if not NP_OPS.valid_times(times):
        raise values.error(
            "its timestamps are not times (each must be finite, >= 0, and none before the one "
            "before it)"
        )
    start = values.take(schema.SPAN_START)
    end = values.take(schema.SPAN_END)
    if start is not None and end is not None and len(times):
        slack = 1e-3  # s: float32 times and span ends
        if not (0 <= start <= end and times[0] >= start - slack and times[-1] <= end + slack):
            raise values.error(
                f"its frames ({times[0]:g} s to {times[-1]:g} s) are outside its span "
                f"({start:g} s to {end:g} s)"
            )
    return times


def pcm_view(data, channels: int) -> np.ndarray:
    """The stored int16 samples [samples, channels] of a record's audio bytes, as a view
    (little-endian, as the build writes them); ValueError unless they are whole samples."""
    if len(data) % (2 * channels):
        raise ValueError(f"its audio is {len(data)} bytes, not whole int16 samples of "
                         f"{channels} channel(s)")  # fmt: skip
    return np.frombuffer(data, "<i2").reshape(-1, channels)


def check_audio(values: Values, samples: np.ndarray, rate: int, times) -> None:
    """Audio that covers the frames (`covers_frames`, the TF path's rule too):
    sample j plays at (round(t0 * rate) + j) / rate, on to at least the last frame's time."""
    if times is None or not len(times):
        return
    if not covers_frames(NP_OPS, len(samples), rate, times):
        span = int(frames_span(NP_OPS, rate, times)[0])
        raise values.error(
            f"its audio is {len(samples)} samples at {rate}/s, short of its frames' "
            f"{times[-1] - times[0]:.3f} s ({span} samples)"
        )


# Stored audio runs on at least to the last frame's time (the build takes it to the next
# example's first frame): the rule on either backend, for ClipSource (`check_audio`) and the
# TF path (`check_covers`, in `ClipDecoder`).


def frames_span(ops, rate, timestamps):
    """int64 [1] ([0] without frames): the samples from the first frame's time to the last's,
    on the grid the build cut the audio on (round(t * rate))."""
    times, rate = ops.f64(timestamps), ops.f64(rate)
    nearest = lambda x: ops.floor_i64(x + 0.5)
    return nearest(times[-1:] * rate) - nearest(times[:1] * rate)


def covers_frames(ops, num_samples, rate, timestamps):
    """Whether `num_samples` of audio cover the frames timed `timestamps`: sample j plays at
    (round(timestamps[0] * rate) + j) / rate, on to at least the last frame's time (less 2
    samples: float32 times round a sample either way)."""
    return ops.all_of(num_samples >= frames_span(ops, rate, timestamps) - 2)


def check_covers(ops, samples, rate, timestamps, label):
    """A check that `samples` (int16 [N, C]) cover the frames (`covers_frames`): else a
    CorruptRecordError naming the video (`label()`: its message parts). A rate or times that
    are not one are left to their own checks (the window's, the plan's)."""
    if timestamps is None:  # times from the frame rate: nothing stored to hold the audio to
        return ops.identity(True)
    times = ops.f64(timestamps)
    sound = ops.logical_and(ops.valid_rate(rate), ops.valid_times(times))
    times = ops.where(sound, times, 0.0)  # (no NaN rounded to an integer)
    num_samples = ops.num_frames(samples)  # its rows
    ok = ops.logical_or(ops.logical_not(sound), covers_frames(ops, num_samples, rate, times))
    return ops.corrupt(
        ok, lambda: ("Video ", *label(), " has ", num_samples, " audio samples at ", rate,
                     "/s, short of the ", frames_span(ops, rate, times)[0], " its frames span."),
    )  # fmt: skip
