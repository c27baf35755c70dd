"""The reader matrix (issue 47): every reader x every kind of build x the annotation arguments.

Readers: `ClipSource`; `tfds.load` with `ClipDecoder` as the video's feature decoder; `tfds.load`
with the frames left encoded and `ClipDecoder.decode_features` mapped over the examples;
`clip_dataset` in float32 and in uint8. Builds: a text manifest; JSON Lines with several labels
and their segments; with captions; with spans; with audio (and all of those). Arguments:
`labels="video"|"clip"`, `captions="random"|"all"` (the latter on evaluation views),
`segment=True`. Each reader gives one batch (two examples), its shapes and dtypes checked, its
values equal to ClipSource's seeded output for the same examples (pixels and audio too: the TF
and NumPy decoders give the same ones by design). ClipSource's own output is checked against the
manifests: the multi-hot labels against the segments the clip's frame times overlap, the
captions against the captions that overlap it, a `segment=True` clip inside one segment.
A combination refused by design must raise its documented error.

Every frame shows its own index in pixels (`videos.flash_frame`; each video its own range), so a
clip says which frames it holds; the clips keep the frames' full width (no flip), so that the
index stays readable.
"""

from __future__ import annotations

import json
import re

import cv2
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import videos
from video_tfrecords import ClipDecoder, ClipSource, EncodedFrames, VideoConfig, clip_dataset
from video_tfrecords.records import example_values
from video_tfrecords.show.stored import SplitRecords
from video_tfrecords.video_tfrecords_dataset_builder import Builder  # noqa: F401 (registers it)

FPS = 25
CLASSES = ["close", "open", "walk"]  # labels.txt
SEED = 5
BATCH = 2
# Whole frames, stored at one size (clip_dataset stacks them): the index stays legible, and the
# TF decoder's graph stays small (boxes and resizes are tested elsewhere; they cost seconds here).
SIZE = (64, 96)
CLIP = {"num_frames": 4, "stride": 2}
AUDIO_RATE = 16000
VIEWS = 2  # captions="all": evaluation views

# Each video's frames show the indices OFFSET + i (so that videos differ); "d" has audio.
LENGTHS = {"a.mp4": 50, "b.mp4": 40, "c.mp4": 30, "d.mp4": 50}
OFFSET = {"a.mp4": 0, "b.mp4": 100, "c.mp4": 200, "d.mp4": 0}

# Segment and caption times fall between frames (a frame every 0.04 s). The segments are short
# (10 frames), so that a clip drawn from the whole video seldom lies in one by chance.
LINES = {
    "labels": [
        {"path": "a.mp4", "labels": ["walk"], "segments": [
            {"label": "open", "start": 0.02, "end": 0.42},
            {"label": "close", "start": 1.42, "end": 1.82}]},
        {"path": "b.mp4", "labels": [], "segments": [
            {"label": "walk", "start": 0.62, "end": 1.02}]},
        {"path": "c.mp4", "labels": ["close", "open"]},
    ],
    "captions": [
        {"path": "a.mp4", "label": "open", "captions": [
            {"text": "a door opens", "start": 0.02, "end": 0.9},
            {"text": "someone walks in — 歩く", "start": 0.7, "end": 2.0}]},
        {"path": "b.mp4", "label": "close", "captions": ["Ein Mann schließt 🚪"]},
        {"path": "c.mp4", "label": "walk", "captions": [
            {"text": "late", "start": 1.0, "end": 1.2}]},
    ],
    "spans": [
        {"path": "a.mp4", "label": "open", "start": 0.2, "end": 1.2},
        {"path": "a.mp4", "label": "close", "start": 1.2},
        {"path": "b.mp4", "label": "walk", "end": 1.0},
    ],
    "audio": [
        {"path": "d.mp4", "labels": ["open"], "captions": [
            "always", {"text": "a flash", "start": 0.3, "end": 0.62}],
         "segments": [{"label": "walk", "start": 0.22, "end": 1.02}]},
        {"path": "d.mp4", "label": "close", "start": 1.0, "end": 2.0, "captions": ["the end"]},
    ],
}  # fmt: skip
TEXT_LINES = [("a.mp4", "open"), ("b.mp4", "close"), ("c.mp4", "walk")]
BUILDS = ["text", "labels", "captions", "spans", "audio"]
KINDS = {  # what each build stores beside one label: multi-labels, captions, audio
    "text": set(), "labels": {"labels"}, "captions": {"captions"}, "spans": set(),
    "audio": {"labels", "captions", "audio"},
}  # fmt: skip

ARGUMENTS = {
    "labels_video": {"labels": "video"},
    "labels_clip": {"labels": "clip"},
    "captions_random": {"captions": "random"},
    "captions_all": {"captions": "all", "mode": "uniform", "num_clips": VIEWS},
    "segment": {"segment": True, "labels": "clip"},
}
READERS = ["source", "tfds_decoder", "tfds_features", "clip_dataset_float32", "clip_dataset_uint8"]


# -- the builds --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def video_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("videos")
    for name in ("a.mp4", "b.mp4", "c.mp4"):
        frames = [videos.flash_frame(OFFSET[name] + i, False) for i in range(LENGTHS[name])]
        videos.write(folder / name, np.stack(frames), fps=FPS)
    videos.flashes_and_tones(folder / "d.mp4", num_frames=LENGTHS["d.mp4"], flashes=[12, 31])
    return folder


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return tmp_path_factory.mktemp("data")


class Built:
    """One build of the matrix: its name (the config's), dataset folder and TFDS builder."""

    def __init__(self, kind, builder):
        self.kind, self.builder = kind, builder
        self.name = builder.builder_config.name
        self.dataset_dir = builder.data_dir
        self.num_classes = (
            builder.info.features["labels"].feature.num_classes
            if "labels" in builder.info.features
            else None
        )


@pytest.fixture(scope="module")
def built(video_dir, data_root, tmp_path_factory):
    """build(kind) -> the `Built` of that kind, built once a module, when first asked for."""
    done: dict[str, Built] = {}

    def build(kind: str) -> Built:
        if kind in done:
            return done[kind]
        manual = tmp_path_factory.mktemp(f"manual_{kind}")
        (manual / "labels.txt").write_text("\n".join(CLASSES) + "\n")
        if kind == "text":
            text = "".join(f"{video_dir / path} {label}\n" for path, label in TEXT_LINES)
            (manual / "train.txt").write_text(text)
        else:
            lines = [{**line, "path": str(video_dir / line["path"])} for line in LINES[kind]]
            (manual / "train.jsonl").write_text(
                "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                encoding="utf-8",
            )
        audio = {"audio_rate": AUDIO_RATE} if kind == "audio" else {}
        builder = tfds.builder(
            "video_tfrecords", data_dir=str(data_root),
            config=VideoConfig(name=f"matrix_{kind}", num_workers=1, size=SIZE, **audio),
        )  # fmt: skip
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(manual_dir=str(manual))
        )
        done[kind] = Built(kind, builder)
        return done[kind]

    return build


# -- what each combination asks and what it must give -----------------------------------------


def clip_arguments(kind: str, args: dict) -> dict:
    """The clip arguments every reader gets: CLIP, the matrix's, and on the audio build the
    audio with `fps` (clip_dataset needs one window length)."""
    audio = {"audio": True, "fps": FPS} if kind == "audio" else {}
    return {**CLIP, "mode": "random", **args, **audio}


def refusal(reader: str, kind: str, args: dict) -> str | None:
    """The documented error (a regex) a combination must raise, None if it is allowed."""
    if args.get("segment") and kind == "audio":
        return re.escape("segment=True cuts no audio")
    if reader == "tfds_decoder":  # sees the frames only, whatever the dataset stores
        if kind == "audio":
            return re.escape("ClipDecoder(fps=25.0) needs each video's timestamps")
        if set(args) & {"captions", "segment"} or args.get("labels") == "clip":
            return r"ClipDecoder\((labels='clip'|captions='\w+'|segment=True)\) needs the example's"
        return None
    if "labels" not in KINDS[kind]:
        for name, value in args.items():
            if name == "segment" or value == "clip":
                return re.escape(f"{name}={value!r} needs a dataset built with several labels")
    if "captions" not in KINDS[kind] and args.get("captions"):
        return re.escape(f"captions={args['captions']!r} needs a dataset built with captions")
    return None


# -- the readers, each giving its first batch as rows of NumPy values --------------------------


def read(reader: str, build: Built, clip: dict) -> list[dict]:
    """The reader's first BATCH examples: dicts of NumPy values, as that reader gives them."""
    if reader == "source":
        source = ClipSource("train", dataset_dir=build.dataset_dir, seed=SEED, **clip)
        return [source[i] for i in range(BATCH)]
    if reader == "tfds_decoder":
        decoder = ClipDecoder(seed=SEED, **clip)
        ds = build.builder.as_dataset("train", decoders={"video": decoder}, shuffle_files=False)
        return list(tfds.as_numpy(ds.take(BATCH)))
    if reader == "tfds_features":
        decoder = ClipDecoder(seed=SEED, **clip)
        frames = {"video": EncodedFrames()}  # left encoded: decode_features samples them
        ds = build.builder.as_dataset("train", decoders=frames, shuffle_files=False)
        ds = ds.map(lambda e: decoder.decode_features(e, num_classes=build.num_classes))
        return list(tfds.as_numpy(ds.take(BATCH)))
    dtype = tf.float32 if reader.endswith("float32") else tf.uint8
    training = clip["mode"] == "random"
    ds = clip_dataset(
        "train", training=training, batch_size=BATCH, seed=SEED,
        data_dir=build.builder.data_dir_root, builder_kwargs={"config": build.name}, dtype=dtype,
        **clip,
    )  # fmt: skip
    inputs, labels = next(iter(tfds.as_numpy(ds.take(1))))
    inputs = inputs if isinstance(inputs, dict) else {"video": inputs}
    return [
        {**{name: values[k] for name, values in inputs.items()}, "labels": np.asarray(labels[k])}
        for k in range(len(labels))
    ]


# -- shapes and dtypes ----------------------------------------------------------------------------


def expected_shapes(kind: str, clip: dict, reader: str) -> dict:
    """Each output's shape and dtype, per example, for `reader`."""
    views = [VIEWS] if clip.get("mode") == "uniform" else []
    found = {"video": ([*views, CLIP["num_frames"], *SIZE, 3], np.uint8)}
    if reader == "clip_dataset_float32":
        found["video"] = (found["video"][0], np.float32)
    if kind == "audio":
        window = round(CLIP["num_frames"] * CLIP["stride"] * AUDIO_RATE / FPS)
        found["audio"] = ([*views, window, 1], np.float32)
    if "labels" in KINDS[kind] and reader != "tfds_decoder":
        found["labels"] = ([*views, len(CLASSES)], np.float32)
    elif reader.startswith("clip_dataset"):
        found["labels"] = ([], np.int64)  # the batch's labels: the one label
    if "captions" in KINDS[kind] and reader != "tfds_decoder":
        mode = clip.get("captions") or ("random" if clip["mode"] == "random" else "all")
        found["caption" if mode == "random" else "captions"] = (views, object)
    return found


def check_shapes(row: dict, kind: str, clip: dict, reader: str) -> None:
    for name, (shape, dtype) in expected_shapes(kind, clip, reader).items():
        value = row[name]
        if dtype is object:  # captions: str (ClipSource) or bytes (TF), in lists or arrays
            if name == "caption" and not shape:
                assert isinstance(value, (str, bytes)), (name, value)
            else:
                assert len(value) == (shape[0] if shape else len(value)), (name, value)
            continue
        assert isinstance(value, np.ndarray), (name, type(value))
        assert value.dtype == dtype, (name, value.dtype)
        assert list(value.shape) == shape, (name, value.shape, shape)


# -- values ---------------------------------------------------------------------------------------


def text(value):
    """Captions as str, in nested lists; the TF readers' padding ("") dropped from lists."""
    if isinstance(value, (bytes, str)):
        return value.decode("utf-8") if isinstance(value, bytes) else value
    items = [text(v) for v in value]
    return [v for v in items if v != ""]


def assert_same(row: dict, reference: dict, reader: str, kind: str) -> None:
    """A reader's example equals ClipSource's: pixels, audio, labels, caption(s)."""
    video = row["video"]
    if video.dtype == np.float32:  # [0, 1]: the uint8 values / 255
        np.testing.assert_allclose(video, reference["video"] / np.float32(255), rtol=1e-6)
        video = np.rint(video * 255).astype(np.uint8)
    np.testing.assert_array_equal(video, reference["video"], err_msg=f"{reader}: pixels")
    if "audio" in reference:
        np.testing.assert_array_equal(row["audio"], reference["audio"], err_msg="audio")
    if not reader.startswith("clip_dataset"):
        assert int(row["label"]) == reference["label"]
        assert text(row["filename"]) == reference["filename"]
    if "labels" in reference and reader != "tfds_decoder":
        np.testing.assert_array_equal(row["labels"], reference["labels"])
    elif reader.startswith("clip_dataset"):
        assert int(row["labels"]) == reference["label"]
    if reader == "tfds_decoder" and "labels" in KINDS[kind]:  # the stored ids, as TFDS reads them
        assert set(row["labels"].tolist()) == set(np.flatnonzero(whole_labels(reference)))
    for name in ("caption", "captions"):
        if name in reference and reader != "tfds_decoder":
            assert text(row[name]) == text(reference[name]), (reader, name)


def find_reference(row: dict, references: list[dict], reader: str, kind: str) -> int:
    """The index of the reference example a (shuffled) clip_dataset row equals."""
    video = row["video"]
    if video.dtype == np.float32:
        video = np.rint(video * 255).astype(np.uint8)
    same = [i for i, ref in enumerate(references) if np.array_equal(ref["video"], video)]
    nearest = min(np.abs(ref["video"] - video.astype(int)).max() for ref in references)
    assert same, f"{reader}: a clip of no example's pixels (nearest: {nearest} grey levels off)"
    errors = []
    for index in same:  # (two examples may show the same frames: then either may be the row)
        try:
            assert_same(row, references[index], reader, kind)
            return index
        except AssertionError as error:
            errors.append(error)
    raise errors[0]


# -- independent checks of ClipSource's output -----------------------------------------------


def line_of(kind: str, example: dict) -> dict:
    """The manifest line an example was built from (by its video and span start)."""
    name, start = example_key(example)
    if kind == "text":
        return {"path": name, "label": dict(TEXT_LINES)[name]}
    (line,) = [
        line for line in LINES[kind]
        if line["path"] == name and round(line.get("start", 0.0), 3) == start
    ]  # fmt: skip
    return line


def example_key(example: dict) -> tuple[str, float]:
    """(video file name, span start) of a ClipSource example."""
    return example["filename"].rsplit("/", 1)[-1], round(float(example.get("span_start", 0)), 3)


def whole_labels(example: dict) -> np.ndarray:
    return np.asarray(example["labels"]).reshape(-1, len(CLASSES)).max(axis=0)


def view_times(view: np.ndarray, name: str, times: dict) -> tuple[float, float]:
    """When a view runs: its first frame's stored time to the end of its last frame (the next
    stored frame's time, or one frame period on)."""
    shown = [videos.frame_index(frame) - OFFSET[name] for frame in view]
    last = max(shown)
    return times[min(shown)], times.get(last + 1, times[last] + 1 / FPS)


def check_against_manifest(kind: str, example: dict, clip: dict, times: dict) -> None:
    """The example's labels and caption(s) are what its manifest line says for its frames."""
    line = line_of(kind, example)
    name = line["path"]
    assert example["label"] == (CLASSES.index(line["label"]) if "label" in line else -1)
    spans = [view_times(view, name, times) for view in views_of(example["video"], clip)]
    start, end = line.get("start", 0.0), line.get("end", LENGTHS[name] / FPS)
    segments = line.get("segments", [])
    if "labels" in example:
        own = {line.get("label"), *line.get("labels", [])} - {None}
        timed = {s["label"] for s in segments}
        rows = np.asarray(example["labels"]).reshape(len(spans), len(CLASSES))
        for row, (first, stop) in zip(rows, spans):
            if clip.get("labels") == "clip":
                wanted = (own - timed) | {
                    s["label"] for s in segments if s["start"] < stop and s["end"] > first
                }  # fmt: skip
            else:
                wanted = own | timed
            assert {CLASSES[i] for i in np.flatnonzero(row)} == wanted, (first, stop)
    if clip.get("segment") and segments:
        inside = [s for s in segments if all(s["start"] <= t < s["end"] for t in view_frames(
            example["video"], name, times))]  # fmt: skip
        assert inside, spans
    if "caption" in example or "captions" in example:
        captions = [
            (c, start, end) if isinstance(c, str) else (c["text"], c["start"], c["end"])
            for c in line.get("captions", [])
        ]  # fmt: skip
        chosen = example.get("caption", example.get("captions"))
        chosen = chosen if len(spans) > 1 else [chosen]
        for got, (first, stop) in zip(chosen, spans):
            seen = [t for t, s, e in captions if s < stop and e > first]
            if "captions" in example:
                assert got == seen, (first, stop)
            else:
                assert got in seen if seen else got == "", (got, seen)


def views_of(video: np.ndarray, clip: dict) -> np.ndarray:
    return video if clip.get("mode") == "uniform" else video[None]


def view_frames(video, name, times):
    return [times[videos.frame_index(frame) - OFFSET[name]] for frame in video]


@pytest.fixture(scope="module")
def stored_times(built):
    """stored_times(kind) -> {(filename, span start): {frame index: its stored time}}: from the
    stored frames (their index read from their pixels) and the stored timestamps."""
    found = {}

    def times_of(kind):
        if kind not in found:
            build = built(kind)
            raw = build.builder.as_dataset(
                "train", decoders={"video": tfds.decode.SkipDecoding()}, shuffle_files=False
            )  # fmt: skip
            found[kind] = {}
            for example in tfds.as_numpy(raw):
                name = example["filename"].decode().rsplit("/", 1)[-1]
                shown = [
                    videos.frame_index(cv2.imdecode(np.frombuffer(j, np.uint8), cv2.IMREAD_COLOR))
                    - OFFSET[name]
                    for j in example["video"]
                ]  # fmt: skip
                key = (name, round(float(example.get("span_start", 0.0)), 3))
                found[kind][key] = dict(zip(shown, example["timestamps"].tolist()))
        return found[kind]

    return times_of


# -- the matrix ---------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments", list(ARGUMENTS))
@pytest.mark.parametrize("kind", BUILDS)
@pytest.mark.parametrize("reader", READERS)
def test_reader_matrix(built, stored_times, reader, kind, arguments):
    args = ARGUMENTS[arguments]
    build = built(kind)
    clip = clip_arguments(kind, args)
    refused = refusal(reader, kind, args)
    if refused:
        with pytest.raises(ValueError, match=refused):
            read(reader, build, clip)
        return
    source = ClipSource("train", dataset_dir=build.dataset_dir, seed=SEED, **clip)
    references = [source[i] for i in range(len(source))]
    rows = read(reader, build, clip)
    assert len(rows) == BATCH
    for row in rows:
        check_shapes(row, kind, clip, reader)
    if reader.startswith("clip_dataset") and clip["mode"] == "random":  # shuffled: match them
        found = [find_reference(row, references, reader, kind) for row in rows]
        assert len(set(found)) == BATCH, found  # an epoch holds each example once
    else:
        for row, reference in zip(rows, references):
            assert_same(row, reference, reader, kind)
    if reader == "source":
        times = stored_times(kind)
        for example in references:
            check_against_manifest(kind, example, clip, times[example_key(example)])


def test_the_issues_call_gives_float_clips_beside_captions(built):
    """Issue 47's own call on a captioned build: it failed before its first batch."""
    build = built("captions")
    ds = clip_dataset(
        "train", num_frames=8, batch_size=2, seed=0, crop_size=(112, 112),
        data_dir=build.builder.data_dir_root, builder_kwargs={"config": build.name},
    )  # fmt: skip
    inputs, labels = next(iter(ds))
    assert inputs["video"].dtype == tf.float32 and inputs["video"].shape == (2, 8, 112, 112, 3)
    assert 0 <= float(tf.reduce_min(inputs["video"])) <= float(tf.reduce_max(inputs["video"])) <= 1
    assert inputs["caption"].dtype == tf.string and inputs["caption"].shape == (2,)
    assert labels.dtype == tf.int64 and labels.shape == (2,)


@pytest.mark.parametrize("kind", BUILDS)
def test_each_record_read_as_the_typed_example_holds_what_tfds_load_gives(built, kind):
    """The typed example a record is read as without TensorFlow (`schema.Example`: `show`'s
    reader, and `ClipSource.stored_example`) against TFDS's own decode of the same records:
    every feature equal, and no field set that the dataset does not store."""
    build = built(kind)
    loaded = tfds.as_numpy(
        build.builder.as_dataset(split="train", decoders={"video": tfds.decode.SkipDecoding()})
    )
    by_key = {(e["filename"].decode(), int(e["start_frame"])): e for e in loaded}
    records = SplitRecords(build.dataset_dir, "train")
    source = ClipSource("train", dataset_dir=build.dataset_dir, num_frames=1)
    try:
        assert len(records) == len(source) == len(by_key)
        for index in range(len(records)):
            values = example_values.Values.of(records.reader.read(index), lambda: "a record")
            for example in (example_values.example_of(values, records.features),
                            source.stored_example(index)):  # fmt: skip
                typed = vars(example)
                reference = by_key[(typed["filename"], typed["start_frame"])]
                assert {name for name, value in typed.items() if value is not None} == set(
                    reference
                )
                for name, expected in reference.items():
                    if isinstance(expected, dict):  # a Sequence of fields: lists by field
                        assert set(typed[name]) == set(expected), name
                        for field, values_ in expected.items():
                            assert_typed_equal(typed[name][field], values_, f"{name}/{field}")
                    else:
                        assert_typed_equal(typed[name], expected, name)
    finally:
        records.close()
        source.close()


def assert_typed_equal(got, expected, name: str) -> None:
    """A typed example's value against tfds.load's: bytes lists (frames) as bytes, text as the
    UTF-8 of TFDS's bytes, numbers equal in TFDS's dtype."""
    if isinstance(expected, bytes):
        assert got == expected.decode("utf-8"), name
    elif isinstance(expected, np.ndarray) and expected.dtype == object:  # frames, caption texts
        decoded = [v.encode() if isinstance(v, str) else bytes(v) for v in got]
        assert decoded == list(expected), name
    else:
        expected = np.asarray(expected)
        assert np.array_equal(np.asarray(got).astype(expected.dtype), expected), name
