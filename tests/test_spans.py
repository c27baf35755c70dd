"""Spans of a video (issue 43): a JSON Lines line's `start`/`end` stores only those frames.

The reference is FFmpeg's own decode of the whole file through plain PyAV (`videos.reference`):
a span's stored frames must be the reference's frames timed from `start` up to `end`, the
first at or after `start`, on the whole video's clock. Each test frame carries its own index
in pixels (`videos.flash_frame`), so a wrong frame shows as a wrong number, not a small error.
"""

import dataclasses
import fractions
import json

import av
import numpy as np
import pytest

import videos
from conftest import decode_jpegs, psnr
from video_tfrecords import VideoConfig
from video_tfrecords.ingest import demux, encoding, frame_index, manifest, spans, video_io

FPS = 25
NUM_FRAMES = 300  # 12 s
SOURCES = {  # codec, container, encoder options: keyframes every 1.6 to 2 s, B-frames
    "h264.mp4": ("libx264", {"g": "40", "bf": "3"}),
    "h264.mkv": ("libx264", {"g": "50", "bf": "2"}),
    "mpeg4.avi": ("mpeg4", {"g": "45", "bf": "2"}),
    "vp9.webm": ("libvpx-vp9", {"g": "50"}),
}


@pytest.fixture(scope="module", params=sorted(SOURCES))
def long_video(request, tmp_path_factory):
    codec, options = SOURCES[request.param]
    frames = np.stack([videos.flash_frame(i, i % 7 == 0) for i in range(NUM_FRAMES)])
    path = tmp_path_factory.mktemp("spans") / f"long.{request.param.split('.')[1]}"
    return videos.write(path, frames, codec, fps=FPS, options=options)


@pytest.fixture(scope="module")
def reference(long_video):
    return videos.reference(long_video)


def task_of(path, lines: list[dict], tmp_path, **config) -> encoding.Task:
    """The build task of one video named by JSON `lines` (as `Builder.plan` makes it)."""
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    dataset = manifest.read_dataset(tmp_path)
    kinds = spans.feature_kinds(dataset.splits["train"])
    parts = tuple(spans.part_of(e, dataset.ids, kinds) for e in dataset.splits["train"])
    config = VideoConfig(name="spans", short_side=None, **config)
    return encoding.Task("train", parts[0].entry, parts[0].label, str(path), config, "", 1, parts)


def encoded(task) -> tuple[dict[int, list[dict]], dict]:
    """The examples of each part of `task`, and the summary."""
    made = []
    summary = encoding.encode_video(task, made.append)
    by_part = {}
    for example in made:
        by_part.setdefault(example["part"], []).append(example)
    return by_part, summary


def expected(reference, start, end):
    """(index, time, RGB) of the reference frames timed from `start` up to `end`."""
    return [
        (i, t, rgb)
        for i, (t, rgb) in enumerate(zip(reference.times, reference.rgb))
        if start - 1e-6 <= t < end - 1e-6
    ]


def assert_ffmpegs_frames(examples: list[dict], reference, start: float, end: float):
    frames = np.concatenate([decode_jpegs(e["video"]) for e in examples])
    times = np.concatenate([e["timestamps"] for e in examples])
    wanted = expected(reference, start, end)
    assert [videos.frame_index(f) for f in frames] == [i % 256 for i, _, _ in wanted]  # 8 bits
    np.testing.assert_allclose(times, [t for _, t, _ in wanted], atol=1e-5)
    assert times[0] >= start - 1e-6 and (len(wanted) == NUM_FRAMES or times[0] - start < 1 / FPS)
    assert min(psnr(a, rgb) for a, (_, _, rgb) in zip(frames, wanted)) >= 30


def test_a_spans_frames_are_ffmpegs_frames_at_those_times(long_video, reference, tmp_path):
    line = {"path": "v", "label": "x", "start": 4.3, "end": 7.0}
    by_part, summary = encoded(task_of(long_video, [line], tmp_path))
    assert_ffmpegs_frames(by_part[0], reference, 4.3, 7.0)
    (fields,) = summary["parts"]
    assert (fields["span_start"], fields["span_end"]) == (4.3, 7.0)
    assert fields["source_num_frames"] == len(expected(reference, 4.3, 7.0))
    assert summary["notes"] == [] and summary["damage"] is None


def keyframe_times(path) -> list[float]:
    """When each keyframe shows, from the container's packets (PyAV's demux)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stamps = [p.pts for p in container.demux(stream) if p.is_keyframe and p.pts is not None]
        first = min(p.pts for p in av.open(str(path)).demux(video=0) if p.pts is not None)
        return sorted(float((s - first) * stream.time_base) for s in stamps)


def test_a_span_decodes_from_the_keyframe_before_it_not_the_video_before(long_video, reference):
    start, end = 8.1, 9.0
    before = max(t for t in keyframe_times(long_video) if t <= start + 1e-6)
    assert before > 2.0  # a whole decode would be far more
    with video_io.Video(long_video) as video:
        opened = video.pictures_decoded  # the first picture, for the stream's geometry
        frames = list(video.frames(start, end))
        decoded = video.pictures_decoded - opened
    assert [f.time for f in frames] == pytest.approx(
        [t for _, t, _ in expected(reference, start, end)]
    )
    needed = len(expected(reference, before, end))
    assert needed <= decoded <= needed + 4  # + the decoder's reordering delay


def test_overlapping_and_separate_spans_of_one_video_are_decoded_once(
    long_video, reference, tmp_path, monkeypatch
):
    opened = []

    class Counted(video_io.Video):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            opened.append(self)

    monkeypatch.setattr(video_io, "Video", Counted)
    lines = [
        {"path": "v", "labels": ["a"], "start": 1.0, "end": 3.0},
        {"path": "v", "labels": ["b"], "start": 2.0, "end": 5.0},
        {"path": "v", "labels": ["c"], "start": 10.5, "end": 11.0},
        {"path": "v", "labels": ["c"], "start": 10.5, "end": 11.0 + 1e-9},
    ]
    by_part, summary = encoded(task_of(long_video, lines, tmp_path))
    for number, line in enumerate(lines):
        assert_ffmpegs_frames(by_part[number], reference, line["start"], line["end"])
    (video,) = opened
    keyframes = keyframe_times(long_video)
    needed = sum(
        len(expected(reference, max(t for t in keyframes if t <= start + 1e-6), end))
        for start, end in [(1.0, 5.0), (10.5, 11.0)]
    )
    assert video.pictures_decoded <= needed + 10  # no frame twice, the reorder delay aside
    counts = [len(expected(reference, line["start"], line["end"])) for line in lines]
    assert [p["source_num_frames"] for p in summary["parts"]] == counts == [50, 75, 12, 12]


def test_a_span_past_the_end_is_clipped_with_a_note_and_one_after_it_has_no_example(
    long_video, reference, tmp_path
):
    lines = [
        {"path": "v", "label": "a", "start": 11.0, "end": 15.0},
        {"path": "v", "label": "a", "start": 13.0, "end": 14.0},
        {"path": "v", "label": "a", "start": 0.5, "end": 1.0},
    ]
    task = task_of(long_video, lines, tmp_path)
    outcome = encoding.encode(dataclasses.replace(task, cache_root=str(tmp_path / "cache")))
    where = str(tmp_path / "train.jsonl")
    assert encoding.line_findings(outcome) == (
        [{"split": "train", "path": "v", "where": f"{where}:2",
          "reason": "span [13 s, 14 s) has no frame: the video ends at 12.000 s"}],
        [{"split": "train", "path": "v", "where": f"{where}:1",
          "reason": "span [11 s, 15 s) ends past the video's end (12.000 s): clipped"}],
    )  # fmt: skip
    parts = outcome.entry.summary["parts"]
    assert parts[0]["span_end"] == pytest.approx(12.0) and parts[1] is None
    examples = dict(encoding.examples_of(outcome))
    assert sorted(examples) == ["v@0.5-1.0#0", "v@11.0-15.0#0"]
    assert_ffmpegs_frames([examples["v@11.0-15.0#0"]], reference, 11.0, 15.0)


def test_a_task_whose_spans_have_no_frame_is_a_skip_record_for_each_line(long_video, tmp_path):
    lines = [{"path": "v", "label": "a", "start": 20}, {"path": "v", "label": "a", "start": 30}]
    task = task_of(long_video, lines, tmp_path)
    outcome = encoding.encode(dataclasses.replace(task, cache_root=str(tmp_path / "cache")))
    skipped, notes = encoding.line_findings(outcome)
    where = str(tmp_path / "train.jsonl")
    assert [(r["where"], r["reason"]) for r in skipped] == [
        (f"{where}:1", "span [20 s, inf s) has no frame: the video ends at 12.000 s"),
        (f"{where}:2", "span [30 s, inf s) has no frame: the video ends at 12.000 s"),
    ]
    assert notes == [] and list(encoding.examples_of(outcome)) == []


@pytest.mark.parametrize(
    ("fields", "ticks"),
    [({"fps": 10}, 10.0), ({"num_frames": 5}, None), ({"max_frames": 4}, None)],
)
def test_frame_choices_apply_to_the_span_alone(long_video, reference, tmp_path, fields, ticks):
    start, end = 4.3, 6.3
    line = {"path": "v", "label": "x", "start": start, "end": end}
    by_part, _ = encoded(task_of(long_video, [line], tmp_path, **fields))
    (example,) = by_part[0]
    stored = [videos.frame_index(f) for f in decode_jpegs(example["video"])]
    inside = [i for i, _, _ in expected(reference, start, end)]  # frames 108 to 157
    assert example["start_frame"] == stored[0]  # the source frame's index, not a count
    if ticks is not None:  # the frame on screen at each tick from the span's first frame
        first = reference.times[inside[0]]
        wanted_times = [first + k / ticks for k in range(round((end - first) * ticks))]
        on_screen = [max(i for i in inside if reference.times[i] <= t + 1e-6) for t in wanted_times]
        np.testing.assert_allclose(example["timestamps"], wanted_times, atol=1e-5)
        assert stored == on_screen
    elif "num_frames" in fields:
        assert stored == [inside[round(k * (len(inside) - 1) / 4)] for k in range(5)]
    else:
        assert stored == inside[:4]


def test_segments_of_a_span_start_at_their_first_frames_index_in_the_video(
    long_video, reference, tmp_path
):
    line = {"path": "v", "label": "x", "start": 2.0, "end": 4.7}  # frames 50 to 117
    by_part, _ = encoded(task_of(long_video, [line], tmp_path, segment_frames=30))
    examples = by_part[0]
    first = expected(reference, 2.0, 4.7)[0][0]  # FFmpeg's decode from the file's start
    assert [(e["segment"], e["start_frame"], len(e["video"])) for e in examples] == [
        (0, first, 30),
        (1, first + 30, 30),
        (2, first + 60, 8),
    ]
    assert videos.frame_index(decode_jpegs(examples[1]["video"][:1])[0]) == first + 30 == 80


def test_a_spans_start_frame_is_its_first_frames_index_in_the_video(
    long_video, reference, tmp_path
):
    lines = [
        {"path": "v", "label": "a", "start": 0.5, "end": 1.0},
        {"path": "v", "label": "a", "start": 7.31, "end": 9.5},  # a run of its own: sought
        {"path": "v", "label": "a", "start": 7.9, "end": 8.3},
        {"path": "v", "label": "a", "end": 0.3},  # from the first frame
    ]
    by_part, _ = encoded(task_of(long_video, lines, tmp_path))
    for number, line in enumerate(lines):
        (example,) = by_part[number]
        first = expected(reference, line.get("start", 0.0), line["end"])[0][0]
        assert example["start_frame"] == first, line
        assert videos.frame_index(decode_jpegs(example["video"][:1])[0]) == first % 256


def vp8_with_a_hidden_frame(path) -> str:
    """A VP8 WebM with a hidden inter frame (show_frame 0, as alt-ref frames are) just before
    its keyframe at 2 s: a packet that decodes to no frame a player shows."""
    frames = np.stack([videos.flash_frame(i, False) for i in range(100)])
    plain = videos.write(str(path) + ".plain.webm", frames, "libvpx", options={"g": "25"})
    with av.open(plain) as source, av.open(str(path), "w") as container:
        base = source.streams.video[0].time_base
        stream = container.add_stream_from_template(source.streams.video[0])
        previous = None
        for index, packet in enumerate(p for p in source.demux(video=0) if p.size):
            data, pts, key = bytes(packet), packet.pts, packet.is_keyframe
            hidden = bytes([previous[0] & ~0x10]) + previous[1:] if index == 50 else None
            previous = data
            for payload, stamp, keyframe in [(hidden, pts - 1, False), (data, pts, key)]:
                if payload is not None:
                    out = av.Packet(payload)
                    out.stream, out.time_base, out.pts, out.dts = stream, base, stamp, stamp
                    out.is_keyframe = keyframe
                    container.mux(out)
    return str(path)


def test_start_frame_counts_the_frames_ffmpeg_shows_not_hidden_ones(tmp_path):
    path = vp8_with_a_hidden_frame(tmp_path / "hidden.webm")
    reference = videos.reference(path)
    with av.open(path) as container:
        assert sum(1 for p in container.demux(video=0) if p.size) == len(reference.times) + 1
    line = {"path": "v", "label": "a", "start": 2.5, "end": 3.0}
    by_part, _ = encoded(task_of(path, [line], tmp_path))
    ((example,),) = by_part.values()
    assert example["start_frame"] == expected(reference, 2.5, 3.0)[0][0] == 63


def test_a_spans_audio_runs_from_its_first_frame_to_its_end(tmp_path):
    flashes = [20, 55, 70, 90, 130]  # tone bursts start at each flash frame's time
    path = videos.flashes_and_tones(
        tmp_path / "tones.mp4", num_frames=150, flashes=flashes, audio_start=0.0
    )
    rate, start, end = 16000, 2.1, 4.5  # frames 53 to 112
    line = {"path": "v", "label": "x", "start": start, "end": end}
    by_part, summary = encoded(task_of(path, [line], tmp_path, audio_rate=rate))
    ((example,),) = by_part.values()
    first = float(example["timestamps"][0])
    assert first == pytest.approx(53 / FPS) and summary["fields"]["has_audio"]
    audio = example["audio"][:, 0].astype(np.float32) / 32768
    assert len(audio) == round(end * rate) - round(first * rate)  # to the span's end
    loud = np.flatnonzero(np.abs(audio) > videos.TONE_AMPLITUDE / 4)
    onsets = [i / rate for k, i in enumerate(loud) if k == 0 or i - loud[k - 1] > rate // 100]
    wanted = [f / FPS - first for f in flashes if first <= f / FPS < end]
    np.testing.assert_allclose(onsets, wanted, atol=0.001)


def test_a_span_between_two_frames_is_noted_not_lost(long_video, tmp_path):
    lines = [
        {"path": "v", "label": "a", "start": 1.0, "end": 2.0},
        {"path": "v", "label": "a", "start": 4.001, "end": 4.002},  # frames at 4.0 and 4.04
    ]
    task = task_of(long_video, lines, tmp_path)
    by_part, summary = encoded(task)
    assert list(by_part) == [0] and summary["parts"][1] is None
    ((part, note),) = summary["notes"]  # cached without its FILE:LINE, which is the line's
    assert note.startswith("span [4.001 s, 4.002 s) holds no frame of the video")
    assert task.parts[part].entry.where.endswith("train.jsonl:2")


STRUCTURES = {  # how each file is written (videos.write): where counting frames goes wrong
    "edit_list.mp4": dict(times=[fractions.Fraction(i - 5, 25) for i in range(40)]),
    "vfr.mp4": dict(times=[fractions.Fraction(i * i, 900) for i in range(60)]),
    "fragmented.mp4": dict(container_options={"movflags": "dash+global_sidx"}),  # DASH
    "open_gop.mpg": dict(codec="mpeg2video", options={"g": "15", "bf": "2"}),  # MPEG-2 PS
    "open_gop.ts": dict(codec="mpeg2video", options={"g": "15", "bf": "2"}),  # starts > 0
    "packed_b_frames.avi": None,  # XviD's, as UCF101 and HMDB51 hold them
}


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_frames_before_a_time_are_those_a_decode_from_the_start_shows(name, tmp_path):
    path, how = tmp_path / name, STRUCTURES[name]
    if how is None:
        videos.packed_b_frames_avi(path, num_frames=62)
    else:
        count = len(how.get("times", range(90)))
        frames = np.stack([videos.flash_frame(i, False) for i in range(count)])
        videos.write(path, frames, **{"options": {"g": "12", "bf": "2"}, **how})
    shown = videos.reference(path).times
    wanted = [0.5, 1.0, 1.37, 2.0, 3.5]
    assert frame_index.frames_before(str(path), wanted) == [
        sum(1 for t in shown if t < w - 1e-6) for w in wanted
    ]


def test_where_the_index_lists_every_packet_only_those_after_a_keyframe_are_read(
    long_video, reference, monkeypatch
):
    read = []

    def counted(*args):
        for packet in stream_packets(*args):
            read.append(packet)
            yield packet

    stream_packets = demux.stream_packets
    monkeypatch.setattr(demux, "stream_packets", counted)
    (before,) = frame_index.frames_before(long_video, [10.0])
    assert before == sum(1 for t in reference.times if t < 10.0 - 1e-6) == 250
    indexed = long_video.endswith((".mp4", ".avi"))  # MP4's sample tables, AVI's idx1
    assert (len(read) < before) == indexed, len(read)  # counted from the index, not read
