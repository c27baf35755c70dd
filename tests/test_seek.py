"""A span's frames are those of a decode from the file's start, whatever the container (issue 47).

A span past a video's first frame is decoded from a keyframe FFmpeg seeks to. Where seeking goes
wrong (MPEG program and transport streams and AVIs seek by decode time; open GOPs drop their
leading pictures; XviD's packed B-frames stamp an I-frame with two times), each span is checked
against two references: FFmpeg's own decode of the whole file through plain PyAV
(`videos.reference`: each frame's time, and its index, drawn into its pixels by
`videos.marked_frames`), and the build's own frames of the whole video, made by the same code
from the file's start (same pixels).
"""

import fractions
import json
import math

import av
import numpy as np
import pytest

import videos
from conftest import decode_jpegs, psnr
from video_tfrecords import VideoConfig
from video_tfrecords.ingest import demux, encoding, manifest, spans, video_io

FPS = 25
F = fractions.Fraction


def build(path, spans_, tmp_path, damage=None, **fields) -> list[list[dict]]:
    """The build's examples of `path`: one list per span (JSON Lines lines, as `BuildRun.encoding_tasks`
    makes the task), or of the whole video (None). No resize, one example a span; `fields`: more
    of the config, `damage`: the note the build must make."""
    config = VideoConfig(name="seek", short_side=None, segment_frames=None, **fields)
    folder = tmp_path / f"manifest{len(list(tmp_path.glob('manifest*')))}"
    folder.mkdir()
    if spans_ is None:
        (folder / "train.txt").write_text("v x\n")
        entry = manifest.read_dataset(folder).splits["train"][0]
        task = encoding.Task("train", entry, 0, str(path), config, "")
    else:
        lines = [{"path": "v", "label": "x", "start": s, "end": e} for s, e in spans_]
        (folder / "train.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        dataset = manifest.read_dataset(folder)
        entries = dataset.splits["train"]
        kinds = spans.feature_kinds(entries)
        parts = tuple(spans.part_of(e, dataset.ids, kinds) for e in entries)
        task = encoding.Task("train", entries[0], 0, str(path), config, "", 1, parts)
    made = []
    summary = encoding.encode_video(task, made.append)
    assert summary["damage"] == damage and summary["notes"] == []
    by_part = {}
    for example in made:
        by_part.setdefault(example.get("part", 0), []).append(example)
    return [by_part.get(number, []) for number in range(len(spans_ or [None]))]


def stored(examples: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(times, RGB frames) the examples store."""
    times = np.concatenate([e["timestamps"] for e in examples])
    return times, np.concatenate([decode_jpegs(e["video"]) for e in examples])


def check_spans(path, spans_, tmp_path, *, bwdif=False, times=None, exact=True, alone=False):
    """Each span's stored frames are the reference's from its start to its end: the same frame
    (index drawn in it), at the same time (the reference's pts, or `times[index]`), the same
    pixels as the build's own frames of the whole video (`exact`), or within JPEG's loss.
    The spans are one video's lines of one build, or each a build of its own (`alone`: each
    span's decode starts with its own seek, overlapping spans' being one)."""
    reference = videos.reference(path, bwdif=bwdif)
    marks = [videos.frame_index(rgb) for rgb in reference.rgb]
    assert marks == list(range(marks[0], marks[0] + len(marks)))  # every frame, once
    clock = reference.times if times is None else [times[m] for m in marks]
    (whole,) = build(path, None, tmp_path)
    whole_times, whole_rgb = stored(whole)
    np.testing.assert_allclose(whole_times, clock, atol=1e-5)
    built = [b for span in spans_ for b in build(path, [span], tmp_path)] if alone else None
    for (start, end), examples in zip(spans_, built or build(path, spans_, tmp_path), strict=True):
        inside = [i for i, t in enumerate(clock) if start - 1e-6 <= t < end - 1e-6]
        where = f"span [{start}, {end})"
        assert examples, f"{where} stored no frame, the reference has {len(inside)}"
        got_times, got_rgb = stored(examples)
        assert [videos.frame_index(f) for f in got_rgb] == [marks[i] for i in inside], where
        np.testing.assert_allclose(got_times, [clock[i] for i in inside], atol=1e-5, err_msg=where)
        for got, i in zip(got_rgb, inside, strict=True):
            if exact:
                np.testing.assert_array_equal(got, whole_rgb[i], err_msg=where)
            else:
                assert psnr(got, whole_rgb[i]) >= 40, where
            assert psnr(got, reference.rgb[i]) >= 25, where  # q90 JPEG of noise; another: ~10


# -- MPEG-2 program and transport streams: open GOPs, sought by decode time -----------------------

# The span [0.9 s, 2.5 s), one from the second frame (both inside the first GOP: the
# second keyframe is at 0.72 s or later), one after it.
MPEG2_SPANS = [(0.04, 0.5), (0.9, 2.5), (2.6, 3.3)]


@pytest.mark.parametrize("interlaced", [False, True], ids=["progressive", "interlaced"])
@pytest.mark.parametrize("ext", ["mpg", "ts"])
def test_spans_in_the_first_gop_of_an_mpeg2_stream_hold_its_frames(tmp_path, ext, interlaced):
    frames = videos.marked_frames(100, 96, 128, top="noise")  # 4 s, pictures of 6 KB or more
    options = {"g": "50", "bf": "2", "b": "12M", "qmax": "4", "threads": "1"}
    path = videos.write(
        tmp_path / f"broadcast.{ext}", frames, "mpeg2video", options=options, interlaced=interlaced
    )
    with av.open(path) as container:  # the second keyframe: inside the span
        stream = container.streams.video[0]
        keys = sorted(p.pts for p in container.demux(stream) if p.is_keyframe and p.pts)
    assert 0.72 - 1e-6 <= float((keys[1] - keys[0]) * stream.time_base) < 2.5
    # bwdif's first frame after a seek lacks the field before it: within JPEG's loss there
    check_spans(path, MPEG2_SPANS, tmp_path, bwdif=interlaced, exact=not interlaced)


# Small pictures (a DVD's still scene, flat colour): several to a program stream's PES, whose
# stamp is the first's that starts in it. After a seek FFmpeg's parser cut the tail of the
# picture before for a packet of its own, stamped it so, and every picture after it half a frame
# late up to the next stamped PES: a frame early, or times 0.02 s late.
SMALL_PICTURES = {  # how: flashes_and_tones' I and P pictures, or B-frames too
    "I and P": None,
    "B-frames": {"g": "12", "bf": "2", "qscale": "2", "threads": "1"},
}
SMALL_SPANS = [(0.5, 0.9), (1.3, 1.8), (2.1, 2.6), (3.0, 3.5), (3.7, 4.0), (4.2, 4.7), (7.1, 8)]


@pytest.mark.parametrize("how", sorted(SMALL_PICTURES))
@pytest.mark.parametrize("ext", ["mpg", "ts"])
def test_spans_of_an_mpeg2_stream_of_small_pictures_hold_its_frames(tmp_path, ext, how):
    path, options = tmp_path / f"small.{ext}", SMALL_PICTURES[how]
    if options is None:
        videos.flashes_and_tones(path, num_frames=200, flashes=[20, 55], audio_start=None,
                                 video_codec="mpeg2video")  # fmt: skip
    else:
        videos.write(path, videos.marked_frames(200), "mpeg2video", options=options)
    with av.open(str(path)) as container:  # several pictures to a PES: few stamped packets
        stream = container.streams.video[0]
        positions = [p.pos for p in container.demux(stream) if p.size]
    assert ext == "ts" or sum(pos is not None for pos in positions) < len(positions) / 2
    check_spans(str(path), SMALL_SPANS, tmp_path, alone=True)  # each span's own seek
    check_spans(str(path), SMALL_SPANS[1:2] + SMALL_SPANS[-1:], tmp_path)  # two in one video


def test_a_spans_audio_in_a_program_stream_starts_at_its_first_frame(tmp_path):
    flashes = [20, 55, 70, 90, 130]  # a tone burst starts at each flash frame's time
    path = videos.flashes_and_tones(tmp_path / "tones.mpg", num_frames=150, flashes=flashes,
                                    audio_start=0.0, codec="mp2", video_codec="mpeg2video")  # fmt: skip
    rate = 16000
    for start, end in [(1.3, 3.0), (2.1, 4.5), (4.2, 5.9)]:
        # The audio's first packet after its seek is a cut MP2 frame the decoder rejects: not
        # damage (no note).
        ((example,),) = build(path, [(start, end)], tmp_path, audio_rate=rate)
        first = videos.frame_index(decode_jpegs(example["video"][:1])[0])
        assert first == math.ceil(start * FPS - 1e-6), f"span from {start}"
        assert example["timestamps"][0] == pytest.approx(first / FPS, abs=1e-5)
        audio = example["audio"][:, 0].astype(np.float32) / 32768
        loud = np.flatnonzero(np.abs(audio) > videos.TONE_AMPLITUDE / 4)
        onsets = [i / rate for k, i in enumerate(loud) if k == 0 or i - loud[k - 1] > rate // 100]
        wanted = [(f - first) / FPS for f in flashes if first <= f and f / FPS < end]
        np.testing.assert_allclose(onsets, wanted, atol=0.003, err_msg=f"span from {start}")


def test_a_seeks_packets_not_found_in_the_whole_demux_are_decoded_from_the_start(
    tmp_path, monkeypatch
):
    path = videos.flashes_and_tones(tmp_path / "small.mpg", num_frames=150, flashes=[20, 55],
                                    audio_start=None, video_codec="mpeg2video")  # fmt: skip
    reference = videos.reference(path)
    monkeypatch.setattr(demux, "SEARCH", 1)  # the picture's tail the seek cuts: not found
    with video_io.Video(path) as video:
        opened = video.pictures_decoded
        got = [(f.time, videos.frame_index(f.bgr(64, 96)[..., ::-1])) for f in video.frames(2.1)]
        decoded = video.pictures_decoded - opened
    assert [i for _, i in got] == list(range(53, 150))
    np.testing.assert_allclose([t for t, _ in got], reference.times[53:], atol=1e-6)
    assert decoded == 150  # from the start, the first picture again too


# -- UCF101 / HMDB51: XviD's packed B-frames in AVI ------------------------------------------------


def test_spans_on_and_around_the_i_frames_of_a_packed_b_frames_avi_hold_its_frames(tmp_path):
    frames = videos.marked_frames(62, top="motion")  # an I-frame every 12 frames
    path = videos.packed_b_frames_avi(tmp_path / "v_YoYo_g01_c01.avi", frames_rgb=frames)
    starts = [k + offset for k in (12, 24, 36, 48) for offset in (-1, 0, 1)]
    spans_ = [(k / FPS, (k + 3) / FPS) for k in starts]  # on each I-frame, a frame either side
    # FFmpeg's pts of this file are wrong by design (1, 2, 4, 3, ...): frame k shows at k / 25.
    check_spans(path, spans_, tmp_path, times=[k / FPS for k in range(62)], alone=True)


# -- the other structures: every span against the decode from the start ----------------------------

X264 = {"crf": "12", "preset": "veryfast", "threads": "1"}
OPEN_GOP = {**X264, "bf": "3", "x264-params": "open-gop=1:keyint=24:min-keyint=24"}
CLOSED = {**X264, "g": "24", "bf": "2"}
X265_PARAMS = "log-level=error:keyint=24:min-keyint=24:open-gop=1:bframes=4:pools=1:frame-threads=1"
X265 = {"crf": "12", "preset": "ultrafast", "x265-params": X265_PARAMS}  # CRA, RASL pictures
STEPS = [F(1, 10)] * 6 + [F(1, 30)] * 20 + [F(1, 60)] * 30 + [F(1, 10)] * 10  # a phone's rates
STRUCTURES = {  # name: codec, encoder options, each frame's time (None: k / 25)
    "open GOP H.264.mp4": ("libx264", OPEN_GOP, None),
    "open GOP H.264.mkv": ("libx264", OPEN_GOP, None),
    "open GOP H.264.ts": ("libx264", OPEN_GOP, None),  # a non-zero start time (1.4 s) too
    "edit list.mp4": ("libx264", CLOSED, [F(k - 6, 25) for k in range(100)]),  # 6 cut
    "start at 1.3 s.mp4": ("libx264", CLOSED, [F(k, 25) + F(13, 10) for k in range(100)]),
    "VFR.mp4": ("libx264", CLOSED, [sum(STEPS[:k], F(0)) for k in range(len(STEPS))]),
    "VFR.mkv": ("libx264", CLOSED, [sum(STEPS[:k], F(0)) for k in range(len(STEPS))]),
    "HEVC leading pictures.mp4": ("libx265", X265, None),
    "HEVC leading pictures.mkv": ("libx265", X265, None),
    # One pass: libvpx makes alt-ref frames only in two, which PyAV cannot run (no stats_in).
    "VP9.webm": ("libvpx-vp9", {"g": "24", "threads": "1"}, None),
    "MPEG-4 B-frames.avi": ("mpeg4", {"g": "24", "bf": "2", "qscale": "2", "threads": "1"}, None),
}


def keyframe_times(path, origin: float) -> list[float]:
    """When each keyframe shows, from the container's packets, on the frames' clock."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        packets = [p for p in container.demux(stream) if p.is_keyframe and p.pts is not None]
        return sorted(float(p.pts * stream.time_base) - origin for p in packets)


# "flash": a cut every 7 frames, where encoders put I-frames of their own; "motion": none.
@pytest.mark.parametrize("top", ["flash", "motion"])
@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_spans_of_every_structure_hold_the_frames_of_a_decode_from_the_start(tmp_path, name, top):
    codec, options, times = STRUCTURES[name]
    frames = videos.marked_frames(100 if times is None else len(times), top=top)
    path = tmp_path / f"video.{name.rsplit('.', 1)[1]}"
    path = videos.write(path, frames, codec, options=options, times=times)
    reference = videos.reference(path)
    marks = [videos.frame_index(rgb) for rgb in reference.rgb]
    with av.open(path) as container:
        origin = float(next(container.decode(video=0)).time)
    keys = [t for t in keyframe_times(path, origin) if 0 < t < reference.times[-1]]
    assert len(keys) >= 2, "a structure needs keyframes after the first to seek to"
    period = min(np.diff(reference.times))
    starts = {reference.times[k] for k in (1, 2, 3)}  # the first GOP
    starts |= {key + d * period for key in keys[:4] for d in (-1, -0.5, 0, 1)}
    for start in sorted(starts):
        end = start + 0.5
        inside = [i for i, t in enumerate(reference.times) if start - 1e-6 <= t < end - 1e-6]
        with video_io.Video(path) as video:
            frames = [(f.time, f.bgr(64, 96)[..., ::-1]) for f in video.frames(start, end)]
            note = video.damage.note()
        where = f"{name}: span [{start:.3f}, {end:.3f})"
        assert [videos.frame_index(rgb) for _, rgb in frames] == [marks[i] for i in inside], where
        got = [t for t, _ in frames]
        np.testing.assert_allclose(got, [reference.times[i] for i in inside], atol=1e-6)
        assert all(psnr(rgb, reference.rgb[i]) >= 40 for (_, rgb), i in zip(frames, inside))
        assert note is None, where


# -- what a seek's decode counts as damage ---------------------------------------------------------


@pytest.mark.parametrize(("codec", "ext", "options"), [
    ("libx264", "ts", OPEN_GOP), ("libx265", "mkv", X265), ("libx264", "mp4", OPEN_GOP),
])  # fmt: skip
def test_a_span_to_the_end_after_a_seek_loses_no_frame(tmp_path, codec, ext, options):
    frames = videos.marked_frames(100, top="motion")
    path = videos.write(tmp_path / f"clean.{ext}", frames, codec, options=options)
    for start in (1.0, 2.0, 2.5):  # the leading pictures FFmpeg drops after a seek: not lost
        with video_io.Video(path) as video:
            frames = list(video.frames(start))
            assert video.damage.note() is None and video.ended
        assert len(frames) == 100 - math.ceil(start * FPS - 1e-6)


def test_a_frame_lost_inside_a_span_after_a_seek_is_still_noted(tmp_path):
    frames = videos.marked_frames(60, top="motion")
    clean = videos.write(tmp_path / "clean.mkv", frames, "libx265", options=X265)
    damaged = videos.damage_packet(clean, tmp_path / "damaged.mkv", index=40)
    with video_io.Video(damaged) as video:
        whole = len(list(video.frames()))
        lost = video.damage.frames_lost
    assert lost >= 1 and whole == 60 - lost  # HEVC drops a damaged picture silently
    with video_io.Video(damaged) as video:
        span = list(video.frames(1.1))  # from the keyframe at 0.96 s, before packet 40
        assert video.damage.frames_lost == lost
    assert len(span) == sum(1 for t in videos.reference(damaged).times if t >= 1.1 - 1e-6)


def test_a_seek_that_lands_late_tries_from_earlier_not_from_the_files_start(tmp_path):
    # A transport stream has no index: FFmpeg's seek lands on a packet at the time asked for
    # and the decoder waits for the next keyframe, after the span's start.
    frames = videos.marked_frames(250, top="motion")  # 10 s, a keyframe every 24 frames
    path = videos.write(tmp_path / "broadcast.ts", frames, "libx264", options=OPEN_GOP)
    for start in (5.0, 8.0):
        with video_io.Video(path) as video:
            opened = video.pictures_decoded
            spanned = video.frames(start, start + 1)
            got = [videos.frame_index(f.bgr(64, 96)[..., ::-1]) for f in spanned]
            decoded = video.pictures_decoded - opened
        first = math.ceil(start * FPS - 1e-6)
        assert got == list(range(first, first + FPS))
        assert decoded <= 3 * 24 + len(got)  # from a keyframe or two before; from 0 s: 200+


# -- AVIs whose index misplaces the keyframes: FFmpeg's seek lands at the start, or on a P-frame ---

AVI_GOP = 50  # 2 s


@pytest.mark.parametrize("keyframes", ["none", "all", "no idx1"])
def test_a_span_deep_in_an_avi_whose_index_misplaces_keyframes_decodes_from_the_one_before(
    tmp_path, keyframes
):
    # An idx1 without keyframe flags has FFmpeg flag its first entry: every seek went to the
    # file's start. One that flags every picture has the seek land on a P- or B-frame, decoded
    # against grey (frames wrong or lost); without idx1 FFmpeg knows only the first packet.
    frames = videos.marked_frames(250, top="motion")  # 10 s
    options = {"g": str(AVI_GOP), "bf": "2", "qscale": "2", "threads": "1"}
    clean = videos.write(tmp_path / "clean.avi", frames, "mpeg4", options=options)
    path = videos.avi_index(clean, tmp_path / "misplaced.avi", keyframes)
    reference = videos.reference(path)
    assert [videos.frame_index(rgb) for rgb in reference.rgb] == list(range(250))
    with video_io.Video(path) as video:
        spans_ = [(4.5, 5.0), (7.3, 8.3), (8.5, 9.0)]  # one video's spans: a seek each
        for start, end in spans_:
            opened = video.pictures_decoded
            got = [(f.time, f.bgr(64, 96)[..., ::-1]) for f in video.frames(start, end)]
            decoded = video.pictures_decoded - opened
            check_avi_span(reference, got, decoded, start, end, f"{keyframes}: [{start}, {end})")
        assert video.damage.note() is None


def check_avi_span(reference, got, decoded, start, end, where, gop: int = AVI_GOP) -> None:
    """A span's (time, RGB) frames are the reference's from `start` to `end`, and `decoded`
    (pictures out of the decoder for it) counts at most `gop` before the span: a seek to the
    keyframe before it (a few more are decoded ahead to time the last), not the file's start
    (113, 183 and 213 frames before the spans of a misplaced index)."""
    inside = [i for i, t in enumerate(reference.times) if start - 1e-6 <= t < end - 1e-6]
    assert [videos.frame_index(rgb) for _, rgb in got] == inside, where
    times = [reference.times[i] for i in inside]
    np.testing.assert_allclose([t for t, _ in got], times, atol=1e-6, err_msg=where)
    assert all(psnr(rgb, reference.rgb[i]) >= 40 for (_, rgb), i in zip(got, inside)), where
    assert decoded <= gop + len(inside) + 8, f"{where}: {decoded} pictures decoded"


def test_a_span_on_an_avis_leading_b_frames_decodes_from_the_keyframe_before(tmp_path):
    # B-frames shown just before an I-frame follow it in decode order and need the GOP before
    # (an open GOP): a seek lands late, on that I-frame. The seek again went back by as much,
    # and a second more: two GOPs of 24 frames.
    frames = videos.marked_frames(150, top="motion")
    options = {"g": "24", "bf": "2", "qscale": "2", "threads": "1"}
    path = videos.write(tmp_path / "open.avi", frames, "mpeg4", options=options)
    reference = videos.reference(path)
    origin = keyframe_times(path, 0.0)[0]
    keys = [t for t in keyframe_times(path, origin) if t > 0]
    assert len(keys) >= 4
    for key in keys[1:4]:
        start = key - 1 / FPS  # the B-frame shown just before the I-frame
        with video_io.Video(path) as video:
            opened = video.pictures_decoded
            got = [(f.time, f.bgr(64, 96)[..., ::-1]) for f in video.frames(start, start + 0.4)]
            decoded = video.pictures_decoded - opened
        where = f"span from {start:.2f} s (I-frame at {key:.2f} s)"
        check_avi_span(reference, got, decoded, start, start + 0.4, where, gop=24 + 2)
