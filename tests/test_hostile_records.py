"""Fuzzing the readers with damaged and hostile records (issue 49).

Records of a small prepared dataset (spans, labels, segments, captions, audio) are mutated by
Hypothesis: bit flips and truncations of the record or of a frame, frame headers claiming
other sizes and encodings, lists made longer, shorter or empty, values set to extremes,
features of another kind, swapped or dropped, record lengths that lie. Every checksum is
recomputed (`hostile`), so only what the values are can tell. Each mutated record is read on
ClipSource (two clip recipes), on the TF path (TFDS's parser with ClipDecoder, and with
`decode_features`), by `show report`'s record reader and as `ClipSource.stored_example`'s
typed example (every frame read): each read gives a clip or the
package's error (CorruptRecordError; on the TF path TensorFlow's InvalidArgumentError, the one
type a graph raises), within a second of CPU and 300 MB of resident memory over the reader's
own, and never crashes the process.
"""

import collections
import faulthandler
import json
import math
import os
import shutil
import struct

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hostile
import videos
from video_tfrecords import ClipDecoder, ClipSource, EncodedFrames, VideoConfig
from video_tfrecords.show.stored import SplitRecords
from video_tfrecords.util.errors import CorruptRecordError
from video_tfrecords.video_tfrecords_dataset_builder import Builder  # noqa: F401 (registers it)

SEED = 7
SOURCE_CLIPS = [  # the recipes' reads: crops, scales, audio, labels, a segment; whole frames
    {"num_frames": 4, "stride": 2, "crop_size": (32, 32), "short_side": 48, "flip": True,
     "audio": True, "labels": "clip"},
    {"num_frames": 3, "num_clips": 2, "mode": "uniform", "fps": 12.5, "captions": "all",
     "segment": True},
]  # fmt: skip
MUTATED_EXAMPLES = 220  # x 5 reads: over 1,000 mutated reads, about a minute here
SECONDS, MEGABYTES = 1.0, 300
FLOATS = [math.nan, math.inf, -math.inf, -1.0, 0.0, 1e-30, 1e30, 3.0e38, 1e6 + 1, 0.5]
INTS = [-1, 0, 1, 3, 2**31 - 1, 2**63 - 1, -(2**63), 65536, 30000]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A small prepared dataset of every kind of feature: (its folder, its records, classes)."""
    manual = tmp_path_factory.mktemp("manual")
    videos.flashes_and_tones(manual / "a.mp4", num_frames=40, flashes=[5, 20], audio_start=0.0)
    videos.flashes_and_tones(manual / "b.mp4", num_frames=24, flashes=[3], audio_start=0.2)
    lines = [
        {"path": "a.mp4", "labels": ["x"],
         "segments": [{"label": "y", "start": 0.2, "end": 1.0}],
         "captions": ["hello", {"text": "bye", "start": 0.5, "end": 1.2}]},
        {"path": "b.mp4", "label": "y", "start": 0.1, "end": 0.8},
    ]  # fmt: skip
    (manual / "train.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    builder = tfds.builder(
        "video_tfrecords", data_dir=str(tmp_path_factory.mktemp("data")),
        config=VideoConfig(name="fuzz", num_workers=1, short_side=None, audio_rate=16000,
                           segment_frames=10),
    )  # fmt: skip
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual))
    )
    folder = os.fspath(builder.data_path)
    data = [r for shard in hostile.shards(folder) for r in hostile.records(shard)]
    return folder, data, builder.info.features["labels"].feature.num_classes


class Readers:
    """Every reader of one mutated record, each read measured."""

    def __init__(self, folder: str, scratch, num_classes: int):
        self.root = os.path.join(str(scratch), "fuzz")
        shutil.copytree(folder, self.root)
        first = hostile.shards(self.root)[0]
        for path in hostile.shards(self.root):  # one shard of one record
            os.remove(path)
        self.shard = first[: first.rindex("-of-")] + "-of-00001"
        info_path = os.path.join(self.root, "dataset_info.json")
        info = json.load(open(info_path))
        info["splits"] = [{**info["splits"][0], "shardLengths": ["1"]}]
        json.dump(info, open(info_path, "w"))
        features = tfds.builder_from_directory(folder).info.features
        plain = ClipDecoder(4, crop_size=(32, 32), seed=SEED, flip=True)
        timed = ClipDecoder(4, seed=SEED, audio=True, fps=12.5, labels="clip")
        signature = [tf.TensorSpec([], tf.string)]

        @tf.function(input_signature=signature)
        def tf_plain(serialized):
            return features.deserialize_example(serialized, decoders={"video": plain})["video"]

        @tf.function(input_signature=signature)
        def tf_features(serialized):
            example = features.deserialize_example(
                serialized, decoders={"video": EncodedFrames()}
            )
            decoded = timed.decode_features(example, num_classes=num_classes)
            return decoded["video"], decoded["audio"], decoded["labels"]

        self.tf_readers = {"tfds+ClipDecoder": tf_plain, "tfds+decode_features": tf_features}
        self.results = collections.Counter()
        self.worst = {"seconds": 0.0, "megabytes": 0.0}

    def write(self, framed: bytes) -> None:
        """The one record (framed) as the shard, by a rename: a source still mapping the old
        file keeps it."""
        with open(self.shard + ".new", "wb") as f:
            f.write(framed)
        os.replace(self.shard + ".new", self.shard)

    def read_all(self, record: bytes, framed: bytes, start_up: bool = False) -> None:
        """Reads the record on every reader; `start_up`: a sound record read first (tracing
        the graphs, first decodes), whose cost is not checked."""
        self.write(framed)
        for number, clip in enumerate(SOURCE_CLIPS):
            source = ClipSource("train", dataset_dir=self.root, seed=SEED, **clip)
            read = lambda: source[0]
            self.check(f"ClipSource {number}", read, corrupt_record_error, start_up)
        for name, read in self.tf_readers.items():
            read_record = lambda: read(tf.constant(record))
            self.check(name, read_record, tf_error, start_up)
        records = SplitRecords(self.root, "train")  # `show report`'s reader of what is stored
        self.check("show report", lambda: records.video(0), corrupt_record_error, start_up)
        stored = lambda: [bytes(frame) for frame in source.stored_example(0).video or ()]
        self.check("ClipSource.stored_example", stored, corrupt_record_error, start_up)

    def check(self, name: str, read, allowed, start_up: bool) -> None:
        wall_limit = None if start_up else hostile.WALL_LIMIT
        _, error, seconds, megabytes = hostile.measured(read, wall_limit)
        self.results[name, "ok" if error is None else type(error).__name__] += 1
        assert error is None or allowed(error), f"{name}: {error!r}"
        if start_up:
            return
        self.worst["seconds"] = max(self.worst["seconds"], seconds)
        self.worst["megabytes"] = max(self.worst["megabytes"], megabytes)
        assert seconds < SECONDS, f"{name} took {seconds:.2f} s"
        assert megabytes < MEGABYTES, f"{name} took {megabytes:.0f} MB"


def corrupt_record_error(error) -> bool:
    return isinstance(error, CorruptRecordError)


def tf_error(error) -> bool:
    """What the TF path raises: InvalidArgumentError; but where TensorFlow's own parser cannot
    parse the record as an Example, TF 2.21 fails to decode its own message (which quotes the
    record's bytes) and raises UnicodeDecodeError, before the package's code sees the record."""
    if isinstance(error, UnicodeDecodeError):
        return b"Could not parse example input" in error.object
    return isinstance(error, tf.errors.InvalidArgumentError)


# -- mutations ----------------------------------------------------------------------------------


def frames_of(example):
    return example.features.feature["video"].bytes_list.value


def sof(frame: bytes) -> int:
    """Where a frame's start-of-frame marker is (the build writes baseline JPEGs), -1 if none
    (a frame mutated before)."""
    return frame.find(b"\xff\xc0")


def frame_step(kind, index, a, b):
    """A mutation of one frame of the example (its checksum recomputed after)."""

    def apply(example):
        frames = frames_of(example)
        if not len(frames):
            return
        i = index % len(frames)
        data = bytearray(frames[i])
        at = sof(bytes(data))
        if at < 0 or len(data) < at + 10:  # no header left to mutate
            return
        if kind == "size":
            data = bytearray(hostile.set_size(bytes(data), a % 65536, b % 65536))
        elif kind == "bytes":  # a few bytes anywhere, overwritten
            at = a % len(data)
            data[at : at + 4] = bytes([b % 256]) * 4
        elif kind == "cut":
            data = data[: a % (len(data) + 1)]
        elif kind == "encoding":  # progressive, lossless, arithmetic; 12-bit; 1 or 4 components
            edits = {0: (1, 0xC2), 1: (1, 0xC3), 2: (1, 0xC9), 3: (4, 12), 4: (9, 1), 5: (9, 4)}
            offset, value = edits[a % 6]
            data[at + offset] = value
        elif kind == "bomb":
            data = bytearray(hostile.bomb(bytes(data), [8193, 30000, 65535][a % 3]))
        elif kind == "other":  # another frame of the video, or none
            data = bytearray(frames[a % len(frames)] if b % 2 else b"")
        frames[i] = bytes(data)

    return apply


def list_step(kind, name, a, b):
    """A mutation of one feature's list: its length, one value, its kind; the feature swapped
    with another, or dropped."""

    def apply(example):
        feature = example.features.feature
        if name not in feature:
            return
        which = feature[name].WhichOneof("kind")
        values = getattr(feature[name], which).value if which else None
        if kind == "length" and values is not None:
            if a % 4 == 0:
                del values[:]
            elif a % 4 == 1 and len(values):
                del values[b % len(values)]
            elif len(values):
                values.extend([values[b % len(values)]] * (1 + b % 3) * (1 + 50 * (a % 4 == 3)))
        elif kind == "value" and values is not None and len(values) and which != "bytes_list":
            i = b % len(values)
            values[i] = FLOATS[a % len(FLOATS)] if which == "float_list" else INTS[a % len(INTS)]
        elif kind == "kind":
            replacement = [
                lambda f: f.bytes_list.value.extend([b"\x00" * (b % 9)] * (1 + a % 3)),
                lambda f: f.float_list.value.extend([FLOATS[b % len(FLOATS)]] * (1 + a % 3)),
                lambda f: f.int64_list.value.extend([INTS[b % len(INTS)]] * (1 + a % 3)),
            ][a % 3]
            feature[name].Clear()
            replacement(feature[name])
        elif kind == "swap":
            others = sorted(feature)
            other = others[b % len(others)]
            copy = type(feature[name])()
            copy.CopyFrom(feature[name])
            feature[name].CopyFrom(feature[other])
            feature[other].CopyFrom(copy)
        elif kind == "drop":
            del feature[name]

    return apply


def raw_step(kind, a, b):
    """A mutation of the serialized record itself: a bit flipped, or cut short."""

    def apply(data: bytes) -> bytes:
        if not data:
            return data
        if kind == "flip":
            at = a % len(data)
            return data[:at] + bytes([data[at] ^ (1 << b % 8)]) + data[at + 1 :]
        return data[: a % len(data)]

    return apply


@st.composite
def mutations(draw, names):
    """(record index, mutations of its Example, mutations of its bytes, a lying length)."""
    number = st.integers(0, 2**20)
    example_steps = draw(st.lists(st.one_of(
        st.builds(frame_step, st.sampled_from(["size", "bytes", "cut", "encoding", "bomb",
                                               "other"]), number, number, number),
        st.builds(list_step, st.sampled_from(["length", "value", "kind", "swap", "drop"]),
                  st.sampled_from(names), number, number),
    ), max_size=3))  # fmt: skip
    raw = draw(st.lists(st.builds(raw_step, st.sampled_from(["flip", "cut"]), number, number),
                        max_size=1 if not example_steps else 0))  # fmt: skip
    if not example_steps and not raw:
        example_steps = [frame_step("size", 0, draw(number), draw(number))]
    length = draw(st.one_of(st.none(), st.integers(0, 2**64 - 1))) if draw(st.booleans()) else None
    return draw(st.integers(0, 2**10)), example_steps, raw, length


def mutated(data: bytes, example_steps, raw, length) -> tuple[bytes, bytes]:
    """(the mutated record, it framed as a TFRecord), every checksum valid."""
    if example_steps:
        example = hostile.Example.FromString(data)
        for step in example_steps:
            step(example)
        data = hostile.with_frame_checksums(example).SerializeToString()
    for step in raw:
        data = step(data)
    framed = hostile.framed(data)
    if length is not None:  # a length field that lies (its own checksum valid)
        field = struct.pack("<Q", length)
        framed = field + struct.pack("<I", hostile.masked_crc(field)) + framed[12:]
    return data, framed


def test_mutated_records_give_a_clip_or_the_packages_error(dataset, tmp_path):
    folder, data, num_classes = dataset
    names = sorted(hostile.Example.FromString(data[0]).features.feature)
    readers = Readers(folder, tmp_path / "mutated", num_classes)
    for record in data:  # each reader's start-up (tracing, first decode) on sound records
        readers.read_all(record, hostile.framed(record), start_up=True)
    assert set(readers.results) == {(name, "ok") for name, _ in readers.results}, readers.results
    readers.results.clear()
    faulthandler.dump_traceback_later(600, exit=True)  # a hang ends the run, with its stack

    @settings(max_examples=MUTATED_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(mutations(names))
    def read_mutated(mutation):
        index, example_steps, raw, length = mutation
        readers.read_all(*mutated(data[index % len(data)], example_steps, raw, length))

    try:
        read_mutated()
    finally:
        faulthandler.cancel_dump_traceback_later()
        shutil.rmtree(tmp_path / "mutated", ignore_errors=True)
    reads = sum(readers.results.values())
    print(f"{reads} mutated reads; worst {readers.worst}; {dict(readers.results)}")
    assert reads >= 1000
    # The mutations reach past the checksums into the checks, and leave some records readable.
    for name in ("ClipSource 0", "tfds+ClipDecoder"):
        outcomes = {outcome for reader, outcome in readers.results if reader == name}
        assert "ok" in outcomes and len(outcomes) > 1, (name, readers.results)


# -- each value, its own error --------------------------------------------------------------------


def set_values(name, values):
    """An example step: feature `name` holds `values` (its kind as it was)."""

    def apply(example):
        feature = example.features.feature[name]
        which = feature.WhichOneof("kind")
        del getattr(feature, which).value[:]
        getattr(feature, which).value.extend(values)

    return apply


def first_video(data, index=0):
    return hostile.Example.FromString(data[index]).features.feature["filename"].bytes_list.value[0]


VALUE_CASES = [  # (mutation of record 0, clip arguments, words of the error)
    (set_values("label", [2]), {}, "its label is 2, not one of the dataset's 2 classes"),
    (set_values("labels", [5]), {}, "labels name class 5, not one of its 2 classes"),
    (set_values("timestamps", [0.0]), {}, "frames but 1 timestamps"),
    (list_step("value", "timestamps", 0, 3), {}, "timestamps are not times"),  # NaN
    (list_step("value", "timestamps", 3, 0), {}, "timestamps are not times"),  # -1 s
    (set_values("span_start", [50.0]), {}, "are outside its span"),
    (set_values("label_segments/start", [-3.0]), {}, "label segments have times outside"),
    (set_values("captions/start", [0.5]), {}, "captions have 2 items but 1 starts"),
    (set_values("fps", [0.0]), {"audio": True}, "its fps is 0.0: not a rate"),
    (set_values("audio_rate", [10**9]), {"audio": True}, "its audio_rate is 1000000000"),
    (set_values("audio", [b"\x00\x00" * 10]), {"audio": True}, "audio is 10 samples at 16000/s"),
    (set_values("frame_height", [10**6]), {}, "frames are said to be 96x1000000"),
    (set_values("frame_height", [30000]), {}, "is 96x64, but its video's frames are 96x30000"),
    (set_values("frame_width", [95]), {}, "Frame 4 of video"),  # the frames disagree with it
    (list_step("kind", "label", 0, 0), {}, "its label holds bytes, where the dataset stores int"),
    (list_step("kind", "filename", 2, 1), {}, "its filename holds int, where the dataset st"),
]


@pytest.mark.parametrize("mutation, clip, words", VALUE_CASES)
def test_each_value_a_reader_takes_is_checked(dataset, tmp_path, mutation, clip, words):
    folder, data, _ = dataset
    record, _ = mutated(data[0], [mutation], [], None)
    shard = hostile.records(hostile.shards(folder)[0])
    copy = hostile.copy_with(folder, tmp_path / "copy", {0: [record, *shard[1:]]})
    source = ClipSource("train", dataset_dir=copy, num_frames=2, mode="center", seed=SEED, **clip)
    with pytest.raises(CorruptRecordError) as error:
        source[0]
    message = str(error.value)
    assert words in message and "record 0 of" in message, message
    if "filename" not in words:
        assert f"`{first_video(data).decode()}`" in message, message


def test_a_record_without_frames_is_refused_as_a_clip_and_as_stored(dataset, tmp_path):
    # The fuzz's find: `stored_example` checked the frames' CRC32C before it knew there were any.
    folder, data, _ = dataset
    record, _ = mutated(data[0], [list_step("drop", "video", 0, 0)], [], None)
    shard = hostile.records(hostile.shards(folder)[0])
    copy = hostile.copy_with(folder, tmp_path / "copy", {0: [record, *shard[1:]]})
    source = ClipSource("train", dataset_dir=copy, num_frames=2, seed=SEED)
    for read in (lambda: source[0], lambda: source.stored_example(0)):
        with pytest.raises(CorruptRecordError, match=r"record 0 of .* has no video\."):
            read()


# -- the dataset's own files ----------------------------------------------------------------------


def edit_json(path, edit):
    value = json.load(open(path))
    json.dump(edit(value), open(path, "w"))


def split_lengths(lengths):
    def edit(info):
        info["splits"][0]["shardLengths"] = lengths
        return info

    return edit


def feature_shape(name, dims):
    def edit(features):
        feature = features["featuresDict"]["features"][name]
        (feature.get("video") or feature["tensor"])["shape"]["dimensions"] = dims
        return features

    return edit


FILE_CASES = [  # (file, edit of its JSON or None for bytes, what the error says)
    ("dataset_info.json", split_lengths(["abc"]), "shardLengths[0] is 'abc', not a count"),
    ("dataset_info.json", split_lengths([-1]), "shardLengths[0] is -1"),
    ("dataset_info.json", split_lengths(["99999999"]), "holds 99999999 records: more than its"),
    ("dataset_info.json", lambda info: {**info, "splits": {"a": 1}}, "splits is not a list"),
    ("dataset_info.json", lambda info: {**info, "splits": [{**info["splits"][0], "numBytes": "-"}]},
     "splits[0].numBytes is '-', not a count"),
    ("dataset_info.json", lambda info: [info], "holds a JSON list, not an object"),
    ("features.json", feature_shape("video", ["-1", "30000", "30000", "3"]), "of a frame size"),
    ("features.json", feature_shape("timestamps", ["x"]), "has the shape ['x']"),
    ("features.json", lambda f: {"featuresDict": {"features": [1]}}, "not an object of feat"),
    ("label.labels.txt", b"\xff\xfe\n", "is not UTF-8 text"),
    ("label.labels.txt", 300 << 20, "more than the 268435456"),  # a sparse file
    ("built_from.json", lambda value: [value], "holds a JSON list"),
    ("built_from.json", b"{", "Cannot read"),
    ("metadata.json", lambda value: {"skipped": "all"}, "skipped is not a list"),
]


@pytest.mark.parametrize("name, edit, words", FILE_CASES)
def test_the_datasets_own_files_are_checked_as_read(dataset, tmp_path, name, edit, words):
    from video_tfrecords.records import dataset_files

    folder = shutil.copytree(dataset[0], tmp_path / "copy")
    path = folder / name
    if isinstance(edit, bytes):
        path.write_bytes(edit)
    elif isinstance(edit, int):
        with open(path, "wb") as f:
            f.truncate(edit)
    else:
        edit_json(path, edit)
    with pytest.raises(CorruptRecordError) as error:
        ClipSource("train", dataset_dir=folder, num_frames=2).built_from  # noqa: B018
        dataset_files.read_metadata(str(folder))
    assert words in str(error.value) and str(path if "records" not in words else folder) in str(
        error.value
    ), str(error.value)


def test_the_default_config_file_is_checked(tmp_path):
    from video_tfrecords.records import dataset_files

    (tmp_path / ".config").mkdir()
    (tmp_path / ".config" / "metadata.json").write_text('{"default_config_name": 5}')
    with pytest.raises(CorruptRecordError, match="default_config_name is 5, not a name"):
        dataset_files.default_config("not_a_registered_dataset", str(tmp_path))


def test_a_record_of_many_frames_is_checked_whole_on_its_first_read(dataset, tmp_path):
    """Past 4,096 frames a record's first read checks its CRC32C over all its bytes (folding in
    a checksum a frame would cost a Python step each): damage outside the frames is caught."""
    folder, data, _ = dataset
    example = hostile.Example.FromString(data[0])
    frames = frames_of(example)
    frames.extend([frames[0]] * 5000)
    stamps = example.features.feature["timestamps"].float_list.value
    stamps.extend([stamps[-1]] * 5000)  # (times may repeat, not go back)
    record = hostile.with_frame_checksums(example).SerializeToString()
    copy = hostile.copy_with(folder, tmp_path / "many", {0: [record]})
    source = ClipSource("train", dataset_dir=copy, num_frames=2, mode="center")
    assert source[0]["video"].shape[0] == 2
    name = first_video(data)
    damaged = record.replace(name, name[:-1] + b"X")  # the filename, outside the frames
    stale = hostile.framed(record)  # its data CRC is the undamaged record's
    with open(hostile.shards(copy)[0], "wb") as f:  # (a fresh source maps the file anew)
        f.write(stale[:12] + damaged + stale[-4:])
    with pytest.raises(CorruptRecordError, match="corrupt outside its frames"):
        ClipSource("train", dataset_dir=copy, num_frames=2, mode="center")[0]
