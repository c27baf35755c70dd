"""The checks a reader runs on stored data before trusting it (issue 49), one by one: frame
headers (encodings the build never writes, a size that lies, a pixel cap), records of too
many values, and the build refusing to store what readers refuse.

References: JPEGs written by OpenCV (baseline, progressive, greyscale) and simplejpeg (CMYK),
the JPEG spec's header bytes for what no encoder here writes (12-bit, arithmetic coding),
OpenCV's and TensorFlow's own decodes; records serialized by protobuf itself.
"""

import fractions

import cv2
import numpy as np
import pytest
import simplejpeg
import tensorflow as tf

import hostile
from video_tfrecords import ClipDecoder, VideoConfig
from video_tfrecords.clips import decode_np, jpeg
from video_tfrecords.clips.spec import ClipSpec
from video_tfrecords.config import ConfigError
from video_tfrecords.ingest import frame_choice, video_io
from video_tfrecords.records import example_parser
from video_tfrecords.util.errors import CorruptRecordError

H, W = 48, 64


def encoded(image, *flags) -> bytes:
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90, *flags])[1].tobytes()


def texture(height=H, width=W, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), np.uint8)


def patched(frame: bytes, offset: int, value: int) -> bytes:
    """The frame with one byte of its start-of-frame segment set (offset from the marker)."""
    data = bytearray(frame)
    data[frame.index(b"\xff\xc0") + offset] = value
    return bytes(data)


def refusals(frames, spec=ClipSpec(2, mode="center")):
    """What each reader says of a video of `frames`: NumPy's error, TF's (eager) error."""
    with pytest.raises(CorruptRecordError) as numpy_error:
        decode_np.sample_np(spec, frames, name="v.mp4")
    with pytest.raises(tf.errors.InvalidArgumentError) as tf_error:
        ClipDecoder(2, mode="center").sample(tf.constant(frames), name="v.mp4")
    return str(numpy_error.value), str(tf_error.value)


def other_encodings() -> dict[str, bytes]:
    """Frames the build never writes, each decodable by OpenCV (or marked so by the spec)."""
    image = texture()
    return {
        "progressive": encoded(image, cv2.IMWRITE_JPEG_PROGRESSIVE, 1),
        "1 colour components": encoded(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)),
        "4 colour components": simplejpeg.encode_jpeg(
            np.concatenate([image, image[..., :1]], axis=2), 90, colorspace="CMYK"
        ),
        "12-bit": patched(encoded(image), 4, 12),
        "arithmetic-coded": patched(encoded(image), 1, 0xC9),
    }


def test_encodings_the_build_never_writes_are_refused_by_both_paths():
    good = encoded(texture())
    assert jpeg.frame_problem(good, (H, W)) is None
    for words, frame in other_encodings().items():
        if words != "12-bit" and words != "arithmetic-coded":  # real files: OpenCV decodes them
            assert cv2.imdecode(np.frombuffer(frame, np.uint8), cv2.IMREAD_UNCHANGED) is not None
        for message in refusals([good, frame, good]):  # frame 1 is the clip's second
            assert "Frame 1 of video `v.mp4`" in message and words in message, message


def test_a_frame_of_another_size_than_the_stored_one_is_refused():
    frames = [encoded(texture()) for _ in range(3)]
    expected = f"is {W}x{H}, but its video's frames are {W + 1}x{H}"
    assert jpeg.frame_problem(frames[0], (H, W + 1)) == expected
    for side in (16, 30000, 65535):
        lying = hostile.set_size(frames[1], side, side)
        for message in refusals([frames[0], lying, frames[2]]):
            assert f"Frame 1 of video `v.mp4` is {side}x{side}, but its video's frames" in message


def test_a_pixel_cap_bounds_a_size_no_stored_size_contradicts():
    side = 8193  # over 8192 x 8192
    lying = hostile.bomb(encoded(texture()), side)
    assert "claims 8193x8193 pixels: a stored frame has 1 to 67108864" in jpeg.frame_problem(lying)
    for message in refusals([lying, encoded(texture())]):  # the first planned frame: its size
        assert "Frame 0 of video `v.mp4` claims 8193x8193" in message


def test_a_header_that_claims_more_pixels_than_its_bytes_can_hold_is_refused():
    # The most compressible real frame (one flat grey) still holds more bytes than the bound.
    flat = encoded(np.full((2048, 2048, 3), 128, np.uint8))
    assert jpeg.frame_problem(flat, (2048, 2048)) is None
    assert len(flat) * jpeg.PIXELS_PER_BYTE >= 2048 * 2048
    lying = hostile.bomb(encoded(texture()), 2048)  # a few hundred bytes claiming 2048 x 2048
    assert "too few to hold 2048x2048 pixels" in jpeg.frame_problem(lying, (2048, 2048))


def test_stored_frame_sizes_no_frame_can_have_are_refused_before_planning():
    frames = [encoded(texture())]
    for shape in [(0, 64), (30000, 30000)]:
        with pytest.raises(CorruptRecordError, match="stored frame size"):
            decode_np.sample_np(ClipSpec(1), frames, frame_shape=shape)


def test_a_record_of_millions_of_tiny_values_is_refused_in_bounded_time_and_memory():
    example = hostile.Example()
    example.features.feature["video"].bytes_list.value.extend([b""] * 2_000_000)
    record = example.SerializeToString()  # 4 MB
    _, error, seconds, megabytes = hostile.measured(lambda: example_parser.parse_example(record))
    assert isinstance(error, ValueError) and "more than 262144 values" in str(error), error
    assert seconds < 1.0 and megabytes < 100, (seconds, megabytes)
    lists = hostile.Example()
    for i in range(20):  # many lists, each under the cap: the record's budget
        lists.features.feature[f"f{i}"].bytes_list.value.extend([b""] * 200_000)
    _, error, _, megabytes = hostile.measured(
        lambda: example_parser.parse_example(lists.SerializeToString())
    )
    assert "values and fields in one record" in str(error) and megabytes < 300, (error, megabytes)
    # The TF path: TensorFlow parses the list; the clip's plan refuses it before decoding.
    with pytest.raises(tf.errors.InvalidArgumentError, match="has 300000 frames: a stored"):
        ClipDecoder(1).sample(tf.constant([b""] * 300_000))


def test_the_build_refuses_frames_readers_would_refuse():
    info = video_io.VideoInfo(
        "h264", 10000, 10000, fractions.Fraction(1), 0, 10000, 10000, 25.0, 10, "yuv420p"
    )
    with pytest.raises(video_io.VideoError, match="readers refuse frames of more than"):
        frame_choice.stored_size(info, VideoConfig(name="native", short_side=None))
    assert frame_choice.stored_size(info, VideoConfig(name="small")) == (256, 256)
    with pytest.raises(ConfigError, match="size must be"):
        VideoConfig(name="huge", size=(9000, 9000))
    with pytest.raises(ConfigError, match="segment_frames must be"):
        VideoConfig(name="long", segment_frames=1 << 20)

