"""The read path's quick routes give what the general ones give: a frame's header verdict
after the first frame, draws and keys on one NumPy value, NumpyOps.stack."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from video_tfrecords.clips import backends, jpeg, keys
from video_tfrecords.util.errors import CorruptRecordError

OPS = backends.NP_OPS


def _frame(height=256, width=384, seed=0) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), np.uint8)
    ok, data = cv2.imencode(".jpg", pixels, [cv2.IMWRITE_JPEG_QUALITY, 90])
    assert ok
    return data.tobytes()


def _decode(frame, headers, ratio=1, shape=(256, 384)):
    out = np.empty((*shape, 3), np.uint8)
    return jpeg.decode_rgb(frame, ratio, out, lambda: "Frame 1 of video `v`", headers)


def test_a_frame_after_the_first_is_checked_as_the_first():
    headers = jpeg.Headers((256, 384))
    first, second = _frame(seed=1), _frame(seed=2)
    expected = cv2.cvtColor(cv2.imdecode(np.frombuffer(second, np.uint8), 1), cv2.COLOR_BGR2RGB)
    _decode(first, headers)
    assert np.abs(_decode(second, headers).astype(int) - expected).max() <= 1  # (IDCTs differ)
    # The same header bytes, too few bytes for 384x256 pixels (384), yet an end-of-image marker.
    _, _, _, _, _, end = jpeg.read_header(second)
    short = second[:end] + b"\xff\xd9"
    assert len(short) * jpeg.PIXELS_PER_BYTE < 256 * 384
    with pytest.raises(CorruptRecordError, match=r"Frame 1 of video `v` is \d+ bytes: too few"):
        _decode(short, headers)
    # Whole header, no end-of-image marker in the last 64 bytes.
    with pytest.raises(CorruptRecordError, match="no end-of-image marker"):
        _decode(second[:-2] + bytes(64), headers)
    # Padding after the marker (up to 62 bytes) is a whole JPEG.
    assert _decode(second + bytes(30), headers).shape == (256, 384, 3)
    # Another size: the full check names it.
    with pytest.raises(CorruptRecordError, match="is 48x32, but its video's frames are 384x256"):
        _decode(_frame(32, 48), headers)


def test_decoded_sizes_round_up():
    headers = jpeg.Headers((256, 384))
    _decode(_frame(), headers)
    assert headers.decoded_size(1) == (256, 384)
    assert headers.decoded_size(8) == (32, 48)
    headers = jpeg.Headers((63, 95))
    _decode(_frame(63, 95), headers, shape=(63, 95))
    assert headers.decoded_size(2) == (32, 48)
    assert headers.decoded_size(4) == (16, 24)
    with pytest.raises(ValueError, match="decodes to 48x32, not 95x63"):
        _decode(_frame(63, 95), headers, ratio=2, shape=(63, 95))


@pytest.mark.parametrize("seed", [0, 1, -1, 2**63 - 1, 12345678901234567])
def test_draws_on_one_value_are_those_of_an_array(seed):
    """One NumPy value takes Python ints; a one-element array, NumPy's uint64 arithmetic."""
    with OPS.wrapping():
        key = keys.seeded_key(OPS, seed, None, 987654321)
        assert type(key) is np.uint64
        array = np.array([key])
        for counter in (0, 5, 2**32 + 7, 2**33 + 21):
            one = keys.draw(OPS, key, counter)
            assert type(one) is np.uint64
            assert one == keys.draw(OPS, array, counter)[0]
            for n in (1, 2, 7, 250, np.int64(341), np.array(17), 2**40 + 3):
                value = keys.randint(OPS, key, counter, n)
                assert type(value) is np.int64
                assert value == keys.randint(OPS, array, counter, np.array([n]))[0]
                assert 0 <= value < int(n)


def test_numpy_stack_is_np_stack():
    cases = [
        [np.int64(1), np.int64(2)],
        [np.uint64(2**63), np.uint64(1)],
        [np.bool_(True), np.bool_(False)],
        [np.arange(3), np.arange(3) + 1],
        [np.array(5), np.array(6)],
        [np.int64(1), 2],  # mixed: NumPy's own rules
        [np.uint64(1), np.int64(2)],
        [np.arange(3), np.arange(3.0)],
        [np.array([1, 2]), [3, 4]],
        [np.array([b"a"], object), np.array([b"b"], object)],
    ]
    for values in cases:
        got, expected = OPS.stack(values), np.stack(values)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(ValueError):
        OPS.stack([np.arange(2), np.arange(3)])
    with pytest.raises(ValueError):
        OPS.stack([])
