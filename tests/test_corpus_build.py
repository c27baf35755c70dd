"""A build of a real-world-like corpus: every codec and oddity FFmpeg decodes, through `tfds build`'s
Python API, checked against FFmpeg's own decode (tests/videos.py) and the expected geometry."""

import fractions
import re

import numpy as np
import pytest
import tensorflow_datasets as tfds

import synthetic
import videos
from conftest import psnr
from video_tfrecords import VideoConfig
from video_tfrecords.video_tfrecords_dataset_builder import Builder  # noqa: F401 (registers it)

VFR = (
    [fractions.Fraction(0), fractions.Fraction(1, 10), fractions.Fraction(2, 10)]
    + [fractions.Fraction(3, 10) + fractions.Fraction(i, 30) for i in range(6)]
    + [fractions.Fraction(5, 10) + fractions.Fraction(i, 60) for i in range(6)]
)
EDITED = [fractions.Fraction(i - 6, 25) for i in range(20)]  # 6 samples before the edit's start
# FFmpeg's decode as a player shows it: deinterlaced by bwdif; the stream av_find_best_stream
# picks (the cover picture is stream 0).
REFERENCE = {
    "broadcast.mpg": {"bwdif": True},
    "mbaff.ts": {"bwdif": True},
    "cover.mp4": {"stream": 2},
}


def corpus(folder):
    """{file: (display (h, w), note keyword or None)} of decodable videos, and {file: reason} of
    files that must be skipped."""
    make = videos.make
    make(folder / "x264.mp4")
    make(folder / "x265.mkv", "libx265")
    make(folder / "vp8.webm", "libvpx")
    make(folder / "vp9.webm", "libvpx-vp9")
    make(folder / "av1.mp4", "libsvtav1")
    make(folder / "av1.webm", "libsvtav1")
    make(folder / "mpeg4.avi", "mpeg4")
    make(folder / "mjpeg.mov", "mjpeg")
    make(folder / "phone.mp4", rotation=90)
    make(folder / "dvd.mkv", height=48, width=72, sar=fractions.Fraction(32, 27))
    make(folder / "vfr.mp4", num_frames=len(VFR), times=VFR)
    videos.write(
        folder / "hlg.mp4",
        videos.colour_frames(4, 64, 96),
        "libx265",
        pix_fmt="yuv420p10le",
        colour=videos.HLG,
    )
    make(folder / "edited.mp4", num_frames=20, times=EDITED, options={"bf": "0"})
    videos.packed_b_frames_avi(folder / "ucf101.avi", num_frames=20)
    woven = videos.woven(synthetic.moving_frames(16, 64, 96))
    videos.write(folder / "broadcast.mpg", woven, "mpeg2video", interlaced=True)
    videos.write(folder / "mbaff.ts", woven, "libx264", interlaced=True)
    videos.two_streams(folder / "cover.mp4", cover=True)
    videos.damage_packet(make(folder / "whole.mp4", num_frames=20), folder / "damaged.mp4", 5)
    faststart = make(
        folder / "faststart.mp4", num_frames=20, container_options={"movflags": "faststart"}
    )
    videos.cut(faststart, folder / "cut.mp4", 0.6)
    videos.cut(make(folder / "moov_at_end.mp4", num_frames=20), folder / "no_index.mp4", 0.5)
    (folder / "text.mp4").write_text("not a video\n" * 50)
    square = (64, 96)
    written = {
        "x264.mp4": (square, None),
        "x265.mkv": (square, None),
        "vp8.webm": (square, None),
        "vp9.webm": (square, None),
        "av1.mp4": (square, None),
        "av1.webm": (square, None),
        "mpeg4.avi": (square, None),
        "mjpeg.mov": (square, None),
        "phone.mp4": ((96, 64), None),
        "dvd.mkv": ((48, 85), None),
        "vfr.mp4": (square, None),
        "hlg.mp4": (square, None),
        "edited.mp4": (square, None),
        "ucf101.avi": (square, None),
        "broadcast.mpg": (square, None),
        "mbaff.ts": (square, None),
        "cover.mp4": (square, None),
        "damaged.mp4": (square, "packet|concealed|lost"),
        "cut.mp4": (square, "truncated"),
    }
    skipped = {"no_index.mp4": "index (moov) missing", "text.mp4": "not a video"}
    return written, skipped


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    written, skipped = corpus(folder)
    names = [*written, *skipped]
    (folder / "train.txt").write_text("".join(f"{name} video\n" for name in names))
    builder = tfds.builder(
        "video_tfrecords",
        data_dir=str(tmp_path_factory.mktemp("data")),
        config=VideoConfig(name="corpus", short_side=None, num_workers=2),
    )
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(folder))
    )
    stored = {e["filename"].decode(): e for e in tfds.as_numpy(builder.as_dataset("train"))}
    return folder, written, skipped, builder, stored


def test_every_decodable_file_is_written_and_the_rest_recorded(built):
    _, written, skipped, builder, stored = built
    assert set(stored) == set(written)
    reasons = {r["path"]: r["reason"] for r in builder.info.metadata["skipped"]}
    assert set(reasons) == set(skipped)
    for name, reason in skipped.items():
        assert reason in reasons[name]
    assert builder.info.splits["train"].num_examples + len(reasons) == len(written) + len(skipped)


def test_notes_only_on_damaged_files(built):
    _, written, _, builder, _ = built
    notes = {r["path"]: r["reason"] for r in builder.info.metadata["notes"]}
    expected = {name: keyword for name, (_, keyword) in written.items() if keyword}
    assert set(notes) == set(expected)
    for name, keyword in expected.items():
        assert re.search(keyword, notes[name]), notes[name]


@pytest.mark.parametrize(
    "name",
    [
        "x264.mp4",
        "x265.mkv",
        "vp8.webm",
        "vp9.webm",
        "av1.mp4",
        "av1.webm",
        "mpeg4.avi",
        "mjpeg.mov",
        "phone.mp4",
        "dvd.mkv",
        "vfr.mp4",
        "hlg.mp4",
        "edited.mp4",
        "damaged.mp4",
        "cut.mp4",
        "ucf101.avi",
        "broadcast.mpg",
        "mbaff.ts",
        "cover.mp4",
    ],
)
def test_frames_match_ffmpeg_at_the_display_size(built, name):
    folder, written, _, _, stored = built
    example = stored[name]
    reference = videos.reference(folder / name, **REFERENCE.get(name, {}))
    display, _ = written[name]
    assert example["video"].shape == (len(reference.rgb), *display, 3)
    assert (example["display_height"], example["display_width"]) == display
    assert example["source_num_frames"] == len(reference.rgb)
    expected = [
        videos.resized(videos.upright(f, reference.rotation), *display) for f in reference.rgb
    ]
    assert min(psnr(a, b) for a, b in zip(example["video"], expected)) >= 30
    times = reference.times if name != "ucf101.avi" else np.arange(20) / 25  # its pts: swapped
    np.testing.assert_allclose(example["timestamps"], times, atol=1e-4)
    if name in ("ucf101.avi", "broadcast.mpg", "mbaff.ts"):
        assert example["fps"] == pytest.approx(25.0)


def test_a_strict_build_stops_at_a_damaged_video(built, tmp_path):
    folder = built[0]
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "train.txt").write_text(f"{folder / 'x264.mp4'} a\n{folder / 'damaged.mp4'} a\n")
    builder = tfds.builder(
        "video_tfrecords",
        data_dir=str(tmp_path / "data"),
        config=VideoConfig(name="strict", short_side=None, num_workers=1, strict=True),
    )
    with pytest.raises(Exception, match=r"train.txt:2: .*damaged.mp4: .*strict"):
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(manual_dir=str(manual))
        )
