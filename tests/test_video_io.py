"""video_io against FFmpeg's own decode: codecs, geometry, colour, time, damage, bad files.

Every fixture is written in the test by PyAV's encoders (tests/videos.py). The
reference is a plain PyAV decode of the same file (`videos.reference`), the
expected geometry worked out by hand, and for colour the RGB frames that were
encoded: never video_io itself.
"""

import fractions
import pathlib

import av
import numpy as np
import pytest
from av.video.reformatter import ColorRange, Colorspace

import synthetic
import videos
from conftest import psnr
from video_tfrecords import VideoConfig
from video_tfrecords.ingest import frame_choice, video_io

CODEC_CONTAINERS = [(codec, ext) for codec, exts in videos.CONTAINERS.items() for ext in exts]


def decode(path, height=None, width=None, threads=1):
    """(info, damage, RGB frames at (height, width) or the display size, times) from video_io."""
    with video_io.Video(str(path), threads=threads) as video:
        info = video.info
        size = (height or info.display_height, width or info.display_width)
        frames = [(frame.bgr(*size), frame.time) for frame in video.frames()]
        damage = video.damage
    for bgr, _ in frames:
        assert bgr.dtype == np.uint8 and bgr.shape == (*size, 3) and bgr.flags.c_contiguous
    return info, damage, [bgr[..., ::-1] for bgr, _ in frames], [time for _, time in frames]


def assert_close(frames, expected, at_least=30.0):
    """Every frame within `at_least` dB PSNR of its expected frame, and as many frames."""
    assert len(frames) == len(expected)
    worst = min(psnr(f, e) for f, e in zip(frames, expected))
    assert worst >= at_least, f"worst frame {worst:.1f} dB"


@pytest.mark.parametrize(("codec", "ext"), CODEC_CONTAINERS)
def test_every_codec_in_its_containers_decodes_as_ffmpeg_does(tmp_path, codec, ext):
    path = videos.make(tmp_path / f"clip.{ext}", codec, num_frames=8, height=64, width=96)
    reference = videos.reference(path)
    info, damage, frames, times = decode(path)
    assert info.codec == videos.DECODED_AS[codec]
    assert (info.coded_height, info.coded_width) == (info.display_height, info.display_width)
    assert (info.display_height, info.display_width) == (64, 96)
    assert (info.sample_aspect_ratio, info.rotation) == (1, 0)
    assert info.average_fps == pytest.approx(25.0)
    assert damage.note() is None  # a clean file gets no note
    assert len(reference.rgb) == 8
    assert_close(frames, reference.rgb)
    np.testing.assert_allclose(times, reference.times, atol=1e-6)
    np.testing.assert_allclose(times, np.arange(8) / 25, atol=1e-3)
    assert video_io.count_frames(path) == 8


@pytest.mark.parametrize(("codec", "ext"), [("libx264", "mp4"), ("libsvtav1", "webm")])
@pytest.mark.parametrize("size", [(32, 48), (46, 69), (20, 30), (80, 120)])  # 2x, 1.4x, 3.2x, up
def test_resized_frames_match_ffmpegs_decode_resized(tmp_path, codec, ext, size):
    path = videos.make(tmp_path / f"clip.{ext}", codec, num_frames=6, height=64, width=96)
    reference = videos.reference(path)
    _, _, frames, _ = decode(path, *size)
    assert_close(frames, [videos.resized(f, *size) for f in reference.rgb])


@pytest.mark.parametrize("rotation", [90, 180, 270])
@pytest.mark.parametrize(
    ("codec", "ext"), [("libx264", "mp4"), ("libx264", "mov"), ("libvpx-vp9", "webm")]
)
def test_rotation_from_the_display_matrix(tmp_path, rotation, codec, ext):
    # Hue runs along the width and brightness down the height: a wrong turn cannot pass.
    truth = videos.colour_frames(4, 48, 80)
    path = videos.write(tmp_path / f"rotated.{ext}", truth, codec, rotation=rotation)
    reference = videos.reference(path)
    assert -reference.rotation % 360 == rotation  # PyAV counts counterclockwise
    info, damage, frames, _ = decode(path)
    assert info.rotation == rotation
    assert (info.coded_height, info.coded_width) == (48, 80)
    turned = rotation in (90, 270)
    assert (info.display_height, info.display_width) == ((80, 48) if turned else (48, 80))
    assert_close(frames, [videos.upright(f, reference.rotation) for f in reference.rgb])
    clockwise = [np.rot90(f, k=-rotation // 90) for f in truth]  # what ffmpeg's autorotate shows
    assert_close(frames, clockwise)
    assert damage.note() is None
    half = (info.display_height // 2, info.display_width // 2)  # turned and shrunk together
    upright = [videos.upright(f, reference.rotation) for f in reference.rgb]
    assert_close(decode(path, *half)[2], [videos.resized(f, *half) for f in upright])


@pytest.mark.parametrize(
    ("sar", "rotation", "display"),
    [
        (fractions.Fraction(32, 27), 0, (48, 85)),  # 72 * 32 / 27 = 85.3: widened, as players do
        (fractions.Fraction(8, 9), 0, (54, 72)),  # narrow pixels: made taller, never narrower
        (fractions.Fraction(32, 27), 90, (85, 48)),  # the aspect first, then the turn
    ],
)
@pytest.mark.parametrize("ext", ["mp4", "mkv"])
def test_non_square_pixels_give_the_display_size(tmp_path, sar, rotation, display, ext):
    path = videos.make(
        tmp_path / f"anamorphic.{ext}", height=48, width=72, sar=sar, rotation=rotation
    )
    reference = videos.reference(path)
    info, _, frames, _ = decode(path)
    assert info.sample_aspect_ratio == sar
    assert (info.coded_height, info.coded_width) == (48, 72)
    assert (info.display_height, info.display_width) == display
    expected = [videos.upright(f, reference.rotation) for f in reference.rgb]
    assert_close(frames, [videos.resized(f, *display) for f in expected])


@pytest.mark.parametrize("ext", ["mp4", "mkv", "mov"])
def test_variable_frame_rate_keeps_each_frames_time(tmp_path, ext):
    # A phone's rate: 10 fps, then 30, then 60, then 10 again.
    steps = [fractions.Fraction(1, 10)] * 4 + [fractions.Fraction(1, 30)] * 6
    steps += [fractions.Fraction(1, 60)] * 6 + [fractions.Fraction(1, 10)] * 3
    times = [sum(steps[:i], fractions.Fraction(0)) for i in range(len(steps))]
    path = videos.make(tmp_path / f"vfr.{ext}", num_frames=len(times), times=times)
    reference = videos.reference(path)
    _, damage, frames, got = decode(path)
    np.testing.assert_allclose(got, [float(t) for t in times], atol=1e-3)
    np.testing.assert_allclose(got, reference.times, atol=1e-9)
    assert_close(frames, reference.rgb)
    assert damage.note() is None


@pytest.mark.parametrize(
    ("codec", "ext", "colour", "pix_fmt"),
    [
        ("libx264", "mp4", videos.BT709, None),
        ("libx264", "mkv", videos.BT709_FULL, None),
        ("libvpx-vp9", "webm", videos.BT709_FULL, None),
        ("libx264", "mov", videos.BT601, None),
        ("libx265", "mp4", videos.HLG, "yuv420p10le"),
        ("libx265", "mkv", videos.PQ, "yuv420p10le"),
        ("libsvtav1", "mkv", videos.HLG, "yuv420p10le"),
    ],
)
def test_colour_uses_the_streams_matrix_and_range(tmp_path, codec, ext, colour, pix_fmt):
    truth = videos.colour_frames(4, 64, 96)
    path = videos.write(tmp_path / f"tagged.{ext}", truth, codec, colour=colour, pix_fmt=pix_fmt)
    reference = videos.reference(path)
    info, damage, frames, _ = decode(path)
    assert info.pixel_format.endswith("10le") == (pix_fmt == "yuv420p10le")
    assert_close(frames, reference.rgb)  # FFmpeg's rgb24
    assert_close(frames, truth)  # and what was encoded
    assert damage.note() is None
    if colour != videos.BT601:  # the fixture can tell: the BT.601-limited guess fails it
        guess = [
            f.reformat(format="rgb24", src_colorspace=Colorspace.ITU601,
                       src_color_range=ColorRange.MPEG).to_ndarray()
            for f in videos.decoded_frames(path)
        ]  # fmt: skip
        assert min(psnr(g, t) for g, t in zip(guess, truth)) < 30


@pytest.mark.parametrize(
    ("codec", "ext", "note"),
    [
        (
            "libx264",
            "mp4",
            "1 packet with decode errors; 1 frame lost (packets that gave no picture)",
        ),
        (
            "mjpeg",
            "avi",
            "1 packet with decode errors; 1 frame lost (packets that gave no picture)",
        ),
        (
            "libvpx-vp9",
            "webm",
            "1 packet with decode errors; 1 frame lost (packets that gave no picture)",
        ),
        ("libsvtav1", "mp4", "1 packet with decode errors"),
        ("libx265", "mkv", "lost (packets that gave no picture)"),  # HEVC drops frames silently
    ],
)
def test_a_damaged_packet_is_concealed_and_noted(tmp_path, codec, ext, note):
    clean = videos.make(tmp_path / f"clean.{ext}", codec, num_frames=40, options={"g": "20"})
    damaged = videos.damage_packet(clean, tmp_path / f"damaged.{ext}", index=25)
    reference = videos.reference(damaged)  # FFmpeg going on past the bad packet
    _, damage, frames, times = decode(damaged)
    assert 24 <= len(frames) == len(reference.rgb) < 40  # the frames before the damage, and more
    assert video_io.count_frames(damaged) == len(reference.rgb)
    assert_close(frames, reference.rgb)
    np.testing.assert_allclose(times, reference.times, atol=1e-6)
    assert note in damage.note() and "truncated" not in damage.note()
    assert damage.frames_lost == 40 - len(frames) or codec == "libsvtav1"


def test_a_concealed_picture_is_noted(tmp_path):
    clean = videos.make(tmp_path / "clean.mp4", num_frames=30, options={"g": "30"})
    damaged = videos.damage_packet(
        clean, tmp_path / "damaged.mp4", index=12, keep_fraction=0.5, zeros=True
    )
    reference = videos.reference(damaged)
    _, damage, frames, _ = decode(damaged)
    assert len(frames) == len(reference.rgb) == 30
    assert_close(frames, reference.rgb)
    assert damage.corrupt_frames >= 1 and "concealed by FFmpeg" in damage.note()


@pytest.mark.parametrize(
    ("codec", "ext", "options"),
    [
        ("libx264", "mp4", {"movflags": "faststart"}),  # the index in front, the data cut
        ("mjpeg", "mov", {"movflags": "faststart"}),
        ("libx264", "mkv", {}),
        ("libvpx-vp9", "webm", {}),
        ("mjpeg", "avi", {}),
    ],
)
def test_a_file_cut_short_keeps_what_decodes_and_says_truncated(tmp_path, codec, ext, options):
    whole = videos.make(tmp_path / f"whole.{ext}", codec, num_frames=40, container_options=options)
    assert decode(whole)[1].note() is None
    half = videos.cut(whole, tmp_path / f"half.{ext}", 0.6)
    reference = videos.reference(half)
    _, damage, frames, _ = decode(half)
    assert 0 < len(frames) == len(reference.rgb) < 40
    assert_close(frames, reference.rgb)
    assert damage.truncated
    assert damage.note().startswith("truncated: the file ends before its index does")


def test_an_mp4_cut_before_its_index_says_so(tmp_path):
    whole = videos.make(tmp_path / "whole.mp4", num_frames=20)  # the moov box at the end
    half = videos.cut(whole, tmp_path / "half.mp4", 0.5)
    with pytest.raises(video_io.VideoError, match=r"^index \(moov\) missing: file truncated$"):
        video_io.Video(half)


@pytest.mark.parametrize("ext", ["mp4", "mov"])
def test_an_edit_list_is_honoured_as_ffmpeg_does(tmp_path, ext):
    # The first 6 of 20 frames have negative times: the index holds 20 samples, 14 are shown.
    times = [fractions.Fraction(i - 6, 25) for i in range(20)]
    path = videos.make(tmp_path / f"edited.{ext}", num_frames=20, times=times, options={"bf": "0"})
    reference = videos.reference(path)
    info, damage, frames, got = decode(path)
    assert info.reported_num_frames == 20
    assert len(frames) == len(reference.rgb) == 14
    assert video_io.count_frames(path) == 14
    assert_close(frames, reference.rgb)
    assert_close(frames, [videos.to_rgb(f) for f in videos.decoded_frames(path)])
    np.testing.assert_allclose(got, np.arange(14) / 25, atol=1e-3)
    assert damage.note() is None  # 20 promised, 14 shown: not damage


def test_frames_without_timestamps_fall_back_to_frame_order_with_a_note(tmp_path):
    path = videos.make(tmp_path / "raw.h264", num_frames=5)  # an elementary stream: no times
    _, damage, frames, times = decode(path)
    assert len(frames) == 5
    np.testing.assert_allclose(times, np.arange(5) / 25)
    assert damage.timestamps_missing
    assert damage.note() == "no timestamps: frame order used as time, at the stream's average rate"


def test_decoder_threads_give_the_same_frames(tmp_path):
    path = videos.make(tmp_path / "clip.mp4", num_frames=12, options={"bf": "3"})
    _, _, one, times_one = decode(path, threads=1)
    _, _, two, times_two = decode(path, threads=2)
    assert all(np.array_equal(a, b) for a, b in zip(one, two)) and len(one) == len(two) == 12
    assert times_one == times_two


@pytest.mark.parametrize(("codec", "ext"), [("mjpeg", "avi"), ("libx264", "mp4")])
def test_one_frame_video(tmp_path, codec, ext):
    path = videos.make(tmp_path / f"one.{ext}", codec, num_frames=1)
    reference = videos.reference(path)
    _, damage, frames, times = decode(path)
    assert times == [0.0] and damage.note() is None
    assert_close(frames, reference.rgb)


def test_odd_sizes(tmp_path):
    path = videos.make(tmp_path / "odd.avi", "mjpeg", num_frames=3, height=51, width=77)
    reference = videos.reference(path)
    info, _, frames, _ = decode(path)
    assert (info.display_height, info.display_width) == (51, 77)
    assert_close(frames, reference.rgb)
    for size in [(33, 50), (25, 38), (17, 26)]:
        assert_close(decode(path, *size)[2], [videos.resized(f, *size) for f in reference.rgb])


@pytest.mark.parametrize("pix_fmt", ["gray", "gray10le"])
def test_gray_source_gives_three_equal_channels(tmp_path, pix_fmt):
    path = videos.make(tmp_path / "gray.mkv", "ffv1", num_frames=3, pix_fmt=pix_fmt)
    reference = videos.reference(path)
    info, _, frames, _ = decode(path)
    assert info.pixel_format == pix_fmt
    assert all(np.array_equal(f[..., 0], f[..., 1]) for f in frames)
    assert all(np.array_equal(f[..., 0], f[..., 2]) for f in frames)
    assert_close(frames, reference.rgb)


def test_frame_indices_count_from_zero_in_presentation_order(tmp_path):
    path = videos.make(tmp_path / "clip.mp4", num_frames=5)
    with video_io.Video(path) as video:
        assert video.info.reported_num_frames == 5
        indices = [frame.index for frame in video.frames()]
    assert indices == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda d: d / "missing.mp4", "^file not found$"),
        (lambda d: _write(d / "empty.mp4", b""), r"^empty file \(0 bytes\)$"),
        (lambda d: d, "^is a directory, not a video file$"),
        (
            lambda d: _write(d / "text.mp4", b"hello, not a video\n" * 50),
            r"^not a video \(FFmpeg: Invalid data found when processing input\)$",
        ),
        (lambda d: videos.audio_only(d / "sound.mp4"), "^no video stream$"),
        (
            lambda d: videos.patched(
                videos.make(d / "clip.avi", "mjpeg"), d / "alien.avi", b"MJPG", b"QQQQ"
            ),
            "^codec is not supported: FFmpeg has no decoder for this video stream$",
        ),
        (lambda d: _blanked(d), "^no frame could be decoded$"),
    ],
)
def test_bad_files_raise_video_error_saying_why(tmp_path, make, reason):
    path = make(tmp_path)
    with pytest.raises(video_io.VideoError, match=reason):
        video_io.Video(str(path))
    with pytest.raises(video_io.VideoError, match=reason):
        video_io.count_frames(str(path))


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def _blanked(directory):
    """An AVI whose every video packet is zeros: it opens, but no frame decodes."""
    path = videos.make(directory / "clip.avi", "mjpeg", num_frames=3)
    data = bytearray(pathlib.Path(path).read_bytes())
    for position, size in videos.packet_spans(path):
        data[position : position + size] = bytes(size)
    return _write(directory / "blank.avi", bytes(data))


def test_damage_note_is_precise():
    assert video_io.Damage().note() is None
    assert video_io.Damage(packets_with_errors=2).note() == "2 packets with decode errors"
    assert video_io.Damage(timestamps_misordered=2).note() == (
        "2 frames timed by FFmpeg no later than the frame before: placed after it"
    )
    note = video_io.Damage(truncated=True, packets_with_errors=1, frames_lost=1).note()
    assert note == (
        "truncated: the file ends before its index does; 1 packet with decode errors; "
        "1 frame lost (packets that gave no picture)"
    )


# -- UCF101 / HMDB51: XviD's packed B-frames in AVI --------------------------------------------


def test_packed_b_frames_in_avi_are_timed_as_ffmpeg_does(tmp_path):
    path = videos.packed_b_frames_avi(tmp_path / "v_ApplyEyeMakeup_g01_c01.avi", num_frames=32)
    decoded = videos.decoded_frames(path)
    pts, dts = [f.pts for f in decoded], [f.dts for f in decoded]
    assert pts[:8] == [1, 2, 4, 3, 5, 7, 6, 8]  # the fixture has the bug: pts out of order
    assert dts[:-1] == list(range(1, 32))  # the dts in order (the drained last frame has none)
    # Which encoded frame each decoded one is: frame k, shown at k / 25 s. By hand, ffprobe 5.1
    # -show_frames prints best_effort_timestamp 1, 2, 3, ..., 32 for this file (FFmpeg 8's
    # libraries say 1, 2, 4, 4, 5, ...: they learn of the swap one frame late).
    truth = synthetic.moving_frames(32, 64, 96)
    info, damage, frames, times = decode(path)
    assert (info.codec, info.average_fps) == ("mpeg4", 25.0)
    assert_close(frames, truth)
    np.testing.assert_allclose(times, np.arange(32) / 25, atol=1e-9)
    assert damage.note() is None  # neither "no timestamps" nor any other
    assert frame_choice.frame_rate(times, 0.0) == pytest.approx(25.0)


def test_packed_b_frames_resampled_to_30_fps_show_the_frame_on_screen(tmp_path):
    path = videos.packed_b_frames_avi(tmp_path / "clip.avi", num_frames=32)
    with video_io.Video(str(path)) as video:
        config = VideoConfig(name="t", fps=30)
        chosen = [frame.index for _, frame in frame_choice.selected_frames(
            video.frames(), config, lambda: 0)]  # fmt: skip
    # The frame on screen at tick t / 30 is frame floor(t * 25 / 30) (exact ticks included).
    ticks = range(len(chosen))
    assert chosen == [int(np.floor(t * 25 / 30 + 1e-9)) for t in ticks]
    assert len(chosen) == 39  # 32 frames of 1/25 s: 1.28 s, ticks 0 .. 38


# -- which stream ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cover", "small_default", "chosen", "size"),
    [
        # FFmpeg's av_find_best_stream: the default stream, then the higher bit rate and frames
        (False, False, 1, (64, 96)),
        (False, True, 0, (32, 48)),
        (True, False, 2, (64, 96)),  # the cover picture first, never taken
        (True, True, 1, (32, 48)),
    ],
)
def test_the_stream_ffmpeg_picks_is_the_one_stored(tmp_path, cover, small_default, chosen, size):
    path = videos.two_streams(tmp_path / "two.mp4", small_default=small_default, cover=cover)
    with av.open(path) as container:
        streams = container.streams.video
        assert len(streams) == 2 + cover
        assert container.streams.best("video").index == chosen  # FFmpeg's own choice
        pictures = [bool(s.disposition & av.stream.Disposition.attached_pic) for s in streams]
        assert pictures == [cover, False, False][: len(streams)]  # a naive first: the cover
    reference = videos.reference(path, stream=chosen)
    info, _, frames, times = decode(path)
    assert (info.display_height, info.display_width) == size
    assert len(frames) == 10
    assert_close(frames, reference.rgb)
    np.testing.assert_allclose(times, reference.times, atol=1e-6)
