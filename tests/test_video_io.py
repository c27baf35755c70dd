"""OpenCV streaming: fidelity of stored frames, resizing and frame selection."""

import cv2
import numpy as np
import pytest

from conftest import decode_jpegs, opencv_frames, psnr
from video_tfrecords import synthetic, video_io
from video_tfrecords.video_io import EncodeOptions

NATIVE = EncodeOptions(short_side=None)


def test_native_frames_decode_back_within_jpeg_error(make_video):
    path = make_video(num_frames=12, height=96, width=128)
    video = video_io.encode_video(path, NATIVE)
    source = opencv_frames(path)
    stored = decode_jpegs(video.frames)
    assert stored.shape == source.shape == (12, 96, 128, 3)
    assert min(psnr(s, d) for s, d in zip(source, stored)) >= 30
    assert (video.source_num_frames, video.source_height, video.source_width) == (12, 96, 128)
    assert video.fps == pytest.approx(25.0)


def test_frames_count_by_decoding_not_the_header(make_video):
    path = make_video(num_frames=7)
    assert video_io.count_frames(path) == 7
    assert video_io.encode_video(path, NATIVE).source_num_frames == 7


@pytest.mark.parametrize(
    "height,width,short_side,expected",
    [
        (96, 128, 64, (64, 85)),  # landscape: short side is the height
        (128, 96, 64, (85, 64)),  # portrait
        (48, 64, 256, (48, 64)),  # never upscaled by default
        (51, 77, 32, (32, 48)),  # odd sizes round to the nearest pixel
    ],
)
def test_short_side_keeps_aspect_ratio(height, width, short_side, expected):
    assert video_io.output_size(height, width, EncodeOptions(short_side=short_side)) == expected


def test_upscale_and_fixed_size():
    assert video_io.output_size(48, 64, EncodeOptions(short_side=96, upscale=True)) == (96, 128)
    assert video_io.output_size(48, 64, EncodeOptions(size=(20, 30))) == (20, 30)
    assert video_io.output_size(48, 64, NATIVE) == (48, 64)


@pytest.mark.parametrize("short_side,size", [(48, (48, 64)), (72, (72, 96))])  # 2x, 1.33x
def test_resized_frames_match_opencv_decode_resized(make_video, short_side, size):
    path = make_video(num_frames=6, height=96, width=128)
    video = video_io.encode_video(path, EncodeOptions(short_side=short_side))
    assert (video.height, video.width) == size
    source = opencv_frames(path)
    # The reference is the best (area-averaged) resize of OpenCV's own decode.
    reference = [cv2.resize(f, size[::-1], interpolation=cv2.INTER_AREA) for f in source]
    assert min(psnr(r, d) for r, d in zip(reference, decode_jpegs(video.frames))) >= 30


def test_max_frames_keeps_the_first_frames_and_counts_the_source(make_video):
    path = make_video(num_frames=10)
    video = video_io.encode_video(path, EncodeOptions(short_side=None, max_frames=4))
    assert len(video.frames) == 4
    assert video.source_num_frames == 10
    assert psnr(decode_jpegs(video.frames)[3], opencv_frames(path)[3]) >= 30


def test_num_frames_spreads_evenly_first_and_last_included(make_video):
    assert video_io.evenly_spaced(10, 4).tolist() == [0, 3, 6, 9]
    assert video_io.evenly_spaced(3, 8).tolist() == [0, 1, 2]
    path = make_video(num_frames=10)
    video = video_io.encode_video(path, EncodeOptions(short_side=None, num_frames=4))
    source = opencv_frames(path)
    stored = decode_jpegs(video.frames)
    assert len(stored) == 4
    for stored_frame, index in zip(stored, [0, 3, 6, 9]):
        assert psnr(stored_frame, source[index]) >= 30
    assert video.fps == pytest.approx(25.0 * 4 / 10)


def test_fps_keeps_frames_by_timestamp(make_video):
    path = make_video(num_frames=20, fps=20)
    video = video_io.encode_video(path, EncodeOptions(short_side=None, fps=5))
    source = opencv_frames(path)
    assert len(video.frames) == 5  # 1 s of video at 5 fps: frames 0, 4, 8, 12, 16
    for stored_frame, index in zip(decode_jpegs(video.frames), [0, 4, 8, 12, 16]):
        assert psnr(stored_frame, source[index]) >= 30
    assert video.fps == pytest.approx(5.0)
    assert video.source_num_frames == 20


def test_fps_above_the_source_rate_keeps_every_frame_once(make_video):
    path = make_video(num_frames=8, fps=10)
    video = video_io.encode_video(path, EncodeOptions(short_side=None, fps=30))
    assert len(video.frames) == 8
    assert video.fps == pytest.approx(10.0)


def test_fps_clock_follows_variable_frame_rate_timestamps():
    # Frames every 10 ms for 100 ms, then every 100 ms: a 10 fps clock keeps one per 100 ms.
    timestamps = [i * 10.0 for i in range(10)] + [100.0 + i * 100 for i in range(5)]
    clock = video_io.FpsClock(10)
    kept = [t for t in timestamps if clock.keep(t)]
    assert kept == [0.0, 100.0, 200.0, 300.0, 400.0, 500.0]


def test_one_frame_video(make_video):
    path = make_video(num_frames=1, codec="MJPG", name="one.avi")
    video = video_io.encode_video(path, NATIVE)
    assert len(video.frames) == 1 and video.source_num_frames == 1


def test_gray_and_four_channel_frames_become_three_channels():
    gray = np.full((5, 7), 100, np.uint8)
    bgra = np.zeros((5, 7, 4), np.uint8)
    bgra[..., 2] = 200
    assert video_io.to_bgr(gray).shape == (5, 7, 3)
    assert video_io.to_bgr(bgra)[0, 0].tolist() == [0, 0, 200]
    assert video_io.to_bgr(np.full((2, 2), 65535, np.uint16)).max() == 255


def test_odd_sizes_with_resize(make_video):
    path = make_video(num_frames=3, height=50, width=76, codec="MJPG", name="odd.avi")
    video = video_io.encode_video(path, EncodeOptions(short_side=33))
    assert (video.height, video.width) == (33, 50)  # 76 * 33 / 50 = 50.16
    assert decode_jpegs(video.frames).shape == (3, 33, 50, 3)
    video = video_io.encode_video(path, EncodeOptions(short_side=32))
    assert decode_jpegs(video.frames).shape == (3, 32, 49, 3)  # an odd width: 48.64 rounds up


def test_jpeg_quality_trades_bytes(make_video):
    path = make_video(num_frames=4, height=96, width=128)
    q90 = video_io.encode_video(path, EncodeOptions(short_side=None, jpeg_quality=90))
    q50 = video_io.encode_video(path, EncodeOptions(short_side=None, jpeg_quality=50))
    assert sum(map(len, q50.frames)) < sum(map(len, q90.frames))


@pytest.mark.parametrize(
    "content,reason",
    [(None, "file not found"), (b"", "empty file"), (b"hello, not a video\n" * 50, "cannot open")],
)
def test_bad_files_raise_video_error_saying_why(tmp_path, content, reason):
    path = tmp_path / "bad.mp4"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(video_io.VideoError, match=reason):
        video_io.encode_video(str(path), NATIVE)


def test_variable_frame_rate_video_is_subsampled_by_timestamps(tmp_path):
    # 10 frames 10 ms apart, then 10 frames 100 ms apart.
    times = [i * 10 for i in range(10)] + [100 + i * 100 for i in range(10)]
    path = synthetic.write_video(
        str(tmp_path / "vfr.mp4"), synthetic.moving_frames(20, 48, 64), timestamps_ms=times
    )
    video = video_io.encode_video(path, EncodeOptions(short_side=None, fps=10))
    source = opencv_frames(path)
    kept = [0, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]  # frames at 0, 100, 200, ... 1000 ms
    assert len(video.frames) == len(kept)
    for stored_frame, index in zip(decode_jpegs(video.frames), kept):
        assert psnr(stored_frame, source[index]) >= 30


def test_truncated_video_keeps_the_frames_that_decode(tmp_path):
    path = synthetic.write_video(
        str(tmp_path / "whole.avi"), synthetic.moving_frames(30, 48, 64), codec="MJPG"
    )
    data = (tmp_path / "whole.avi").read_bytes()
    (tmp_path / "half.avi").write_bytes(data[: len(data) // 2])
    video = video_io.encode_video(str(tmp_path / "half.avi"), NATIVE)
    assert 0 < len(video.frames) < 30
    assert video.source_num_frames == len(video.frames)  # counted by decoding ...
    assert video.reported_num_frames == 30  # ... while the header still claims 30
    assert video.truncated
    assert not video_io.encode_video(path, NATIVE).truncated
