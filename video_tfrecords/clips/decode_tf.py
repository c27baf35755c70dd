"""Decoding a clip in a TensorFlow graph (tf.data): only the planned frames, and only each box.

`sample_tf` runs the same checked plan as the NumPy path (`plan`) and
returns the same pixels (within one grey level where whole frames are resized):
JPEGs are decoded with libjpeg-turbo's accurate integer IDCT and, with a crop,
only the box's window is decoded (`decode_and_crop_jpeg`). Boxes are resized
by the NumPy path's own `resize_box` (OpenCV), and test crops cut, in a
`tf.numpy_function`. TensorFlow is imported by these functions only, on first use.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from video_tfrecords.clips import audio as clip_audio
from video_tfrecords.clips import backends, buffers, geometry, jpeg_tf
from video_tfrecords.clips.plan import checked_plan
from video_tfrecords.clips.resize import resize_box
from video_tfrecords.clips.spec import ClipSpec

__all__ = ["plan_tf", "sample_tf"]

# Extra pixels decoded around a crop box. With 4:2:0 chroma subsampling,
# libjpeg's "fancy" upsampling treats the edge of a cropped decode like an
# image edge; decoding a slightly larger window and slicing gives exactly the
# pixels of a full decode (2 px suffice; 4 for margin).
_CROP_MARGIN = 4
# Windows start on a multiple of 16 columns, the widest MCU (4:2:0): libjpeg-turbo
# starts a cropped decode at an MCU boundary anyway, and TF's decode_and_crop_jpeg of a
# window that starts elsewhere costs more than the aligned window around it
# (docs/performance.md, recipes).
_WINDOW_COLUMNS = 16
_DCT_METHOD = "INTEGER_ACCURATE"


def plan_tf(
    spec: ClipSpec, frames, seed=None, *, name=None, timestamps=None, source_fps=None
) -> dict[str, Any]:
    """The TF plan of `sample_tf(spec, frames, seed)`, without decoding pixels (see `plan_np`)."""
    ops = backends.tf_ops()
    frames = ops.tf.convert_to_tensor(frames, ops.tf.string)
    # Keywords, not stored names (tests/test_stored_names.py reads string literals).
    plan_args = dict(timestamps=timestamps, source_fps=source_fps)  # noqa: C408
    return _with_layout(spec, frames, seed, name, plan_args, lambda layout: layout.plan)


def sample_tf(
    spec: ClipSpec, frames, seed=None, *, name=None, frame_shape=None, timestamps=None,
    source_fps=None, audio=None, audio_rate=None, frame_size=None,
):
    """Samples and decodes clip(s) from a 1-D string tensor of JPEG frames, in a TF graph.

    Args:
        spec: the clip specification.
        frames: 1-D string tensor, one encoded JPEG per frame.
        seed: an int or int tensor, or None for `spec.seed` (fresh randomness on
            every run if that is None too). Pass e.g. `fold_in(seed, epoch)` to
            get new but replayable clips every epoch.
        name: optional string (tensor) naming the video in error messages.
        frame_shape: the stored frames' (h, w) when known for every video (e.g.
            from the TFDS feature): static output shapes and no header read for the plan.
        frame_size: the (h, w) this video's frames have (an int tensor: the example's
            stored `frame_height`, `frame_width`), when known; else the first planned
            frame's header (every frame's header is checked against it, or
            `frame_shape`, before any is decoded: `jpeg_tf.checked_headers`).
        timestamps, source_fps: float tensors, each frame's time in seconds,
            else the stored frame rate: needed with `spec.fps` or `spec.audio` only.
        audio, audio_rate: with `spec.audio`, the example's int16 samples [N, C] and rate.

    Returns:
        uint8 tensor [T, H, W, 3] or [num_views, T, H, W, 3], static wherever known.
        Only the clip's frames are decoded (and only the box of each, with a crop).
        With `spec.audio`, a pair (clip(s), audio): float32 [S, C] or [num_views, S, C].
    """
    tf = backends.tf_ops().tf
    frames = tf.convert_to_tensor(frames, tf.string)
    plan_args = dict(  # noqa: C408 (keywords, not stored names)
        frame_shape=frame_shape, timestamps=timestamps, source_fps=source_fps
    )

    def decode(layout):
        if tf.executing_eagerly() and layout.frame_size is not None:  # sizes known: no branches
            layout.frame_size = tuple(map(int, layout.frame_size))
            if not isinstance(spec.short_side, tuple):  # (jitter: sizes per view stay tensors)
                layout.out_size = tuple(map(int, layout.out_size))
            layout.ratio = int(layout.ratio)
        with tf.control_dependencies(layout.checks):
            clips = _decode_tf(spec, frames, layout, name, frame_shape, frame_size)
            if not spec.audio:
                return clips
            indices = layout.plan["indices"]  # this layout's: a branch may draw its own
            sound = clip_audio.window_tf(spec, indices, audio, audio_rate, timestamps, source_fps)
            return clips, sound

    return _with_layout(spec, frames, seed, name, plan_args, decode)


def _with_layout(spec, frames, seed, name, plan_args, use):
    """`use(layout)` of the checked plan; where the frames do not hold the box, of the plan
    that enlarges them, made in a branch of its own (it runs only for such videos)."""
    ops = backends.tf_ops()
    tf = ops.tf
    layout = checked_plan(ops, spec, frames, seed, name, **plan_args)
    if layout.covers is None:
        return use(layout)
    enlarged = lambda: use(checked_plan(ops, spec, frames, seed, name, enlarge=True, **plan_args))
    if isinstance(layout.covers, bool) or tf.executing_eagerly():  # decided here
        return use(layout) if bool(layout.covers) else enlarged()
    return tf.cond(layout.covers, lambda: use(layout), enlarged)


def _decode_tf(spec, frames, layout, name, frame_shape, frame_size):
    """Decodes the planned frames, each distinct (frame, box) once, once their headers pass."""
    ops = backends.tf_ops()
    tf = ops.tf
    plan = layout.plan
    num_clips, t = spec.num_views, spec.num_frames
    n = num_clips * t
    length = ops.num_frames(frames)
    flat = tf.reshape(plan["indices"], [n])
    safe = tf.maximum(flat, 0)
    clip_of = tf.repeat(tf.range(num_clips, dtype=tf.int64), t)
    # Boxes (or, for boxes resized alone, flips) differ between views.
    per_view = spec.crop != "center" or spec.num_crops > 1 or layout.boxes is not None
    if spec.crop_size is not None and per_view and num_clips > 1:  # boxes per view
        uids, inverse = tf.unique(clip_of * length + safe)
        u_frames, u_clips = uids % length, uids // length
    else:
        u_frames, inverse = tf.unique(safe)
        u_clips = tf.zeros_like(u_frames)
    chosen = tf.gather(frames, safe)  # each position's frame: checked, then decoded
    valid = jpeg_tf.checked_headers(ops, frames, safe, frame_shape or frame_size, name, chosen)

    def decode_all(ratio):
        def each_position():
            # The usual case: no frame repeats. n independent decode ops (inputs
            # split by one unstack op each) run in parallel on the executor,
            # with no while loop and no gather of decoded frames. (Inputs of
            # static size n: Grappler may run this branch's unstack ops early.)
            if layout.boxes is not None:
                return _resized_boxes_tf(spec, layout, chosen, ratio)
            inputs, decode, _ = _frame_decoder_tf(spec, layout, clip_of, ratio)
            columns = [tf.unstack(x, num=n) for x in (chosen, *inputs)]
            return tf.stack([decode(*row) for row in zip(*columns)])

        def each_distinct():
            # Short videos and overlapping clips repeat frames: decode each once.
            inputs, decode, size = _frame_decoder_tf(spec, layout, u_clips, ratio)
            images = tf.map_fn(
                lambda row: decode(*row),
                (tf.gather(frames, u_frames), *inputs),
                fn_output_signature=tf.TensorSpec([*size, 3], tf.uint8),
            )
            return tf.gather(images, inverse)

        if spec.num_crops > 1 and layout.boxes is None:
            return _shared_crops_tf(spec, layout, frames, ratio)
        return tf.cond(tf.equal(tf.size(u_frames), n), each_position, each_distinct)

    with tf.control_dependencies([valid]):
        if isinstance(layout.ratio, int):
            clips = decode_all(layout.ratio)
        else:  # Frame sizes known only at run time: a branch per DCT scaling.
            branch = tf.reduce_sum(tf.cast(layout.ratio >= geometry.REDUCTIONS[1:], tf.int32))
            branches = [lambda r=r: decode_all(r) for r in geometry.REDUCTIONS]
            clips = tf.switch_case(branch, branches)
    if spec.short_video == "pad":
        clips = tf.where(tf.reshape(flat >= 0, [-1, 1, 1, 1]), clips, tf.zeros_like(clips))
    clips = tf.reshape(clips, tf.concat([[num_clips, t], tf.shape(clips)[1:]], axis=0))
    if spec.flip and layout.boxes is None:  # (resized boxes are flipped as they are resized)
        # Only the clips drawn for flipping pay for the mirror copy.
        flips = tf.unstack(plan["flip"], num=num_clips)
        clips = tf.stack(
            [
                tf.cond(flip, lambda c=c: _mirror_tf(clips[c]), lambda c=c: clips[c])
                for c, flip in enumerate(flips)
            ]
        )
    one_clip = spec.output_shape(frame_shape or (None, None))[-4:]  # [T, h, w, 3], static if known
    clips = tf.ensure_shape(clips, [num_clips, *one_clip])
    return clips if spec.multi_clip else clips[0]


def _shared_crops_tf(spec, layout, frames, ratio):
    """Test views: each distinct frame of the clips decoded once, whole, then cut per crop.

    The crops of a clip cover its frames' long side: one whole decode costs less
    than three box decodes, and a frame shared by overlapping clips is decoded once.
    """
    tf = backends.tf_ops().tf
    n = spec.num_clips * spec.num_frames
    wanted = tf.reshape(tf.maximum(layout.plan["indices"][:: spec.num_crops], 0), [n])
    distinct, inverse = tf.unique(wanted)
    _, decode, _ = _frame_decoder_tf(spec, layout, tf.zeros([1], tf.int64), ratio, whole=True)
    offsets = layout.plan["crop_offsets"][: spec.num_crops]  # the same boxes for every clip

    def each_position():  # the usual case: n decode ops, and no stacked copy of their frames
        images = [decode(data) for data in tf.unstack(tf.gather(frames, wanted), num=n)]
        return _cut_crops_tf(spec, offsets, tf.range(n), images)

    def each_distinct():  # overlapping clips or a short video: each frame decoded once
        signature = tf.TensorSpec(None, tf.uint8)
        images = tf.map_fn(decode, tf.gather(frames, distinct), fn_output_signature=signature)
        return _cut_crops_tf(spec, offsets, inverse, [images], stacked=True)

    return tf.cond(tf.equal(tf.size(distinct), n), each_position, each_distinct)


def _cut_crops_tf(spec, offsets, inverse, images, stacked=False):
    """The crops at `offsets` of frame `inverse[p]` for every position p, as clip-major views
    [num_views * T, h, w, 3]; `images` holds the frames, one tensor each or `stacked` in one.

    One copy, in NumPy, into a reused array (`buffers`): 3 crops of 256 from a 340x256
    frame are 2.3x its pixels, which TensorFlow's slices and stack would copy twice.
    """
    tf = backends.tf_ops().tf
    k, t, (h, w) = spec.num_crops, spec.num_frames, spec.crop_size

    def cut(offsets, inverse, *images):
        frames = images[0] if stacked else images
        out = buffers.empty((spec.num_views * t, h, w, 3))
        boxes = offsets.tolist()
        for position, i in enumerate(inverse.tolist()):
            clip, step = divmod(position, t)
            for crop, (y, x) in enumerate(boxes):
                out[(clip * k + crop) * t + step] = frames[i][y : y + h, x : x + w]
        return out

    crops = tf.numpy_function(cut, [offsets, inverse, *images], tf.uint8, stateful=False)
    return tf.ensure_shape(crops, [spec.num_views * t, h, w, 3])


def _frame_decoder_tf(spec, layout, views, ratio, *, whole=False):
    """(per-frame inputs, decode(data, *inputs) -> image, static image size) at 1/ratio scale.

    `views`: the view of each frame to decode (its box). Whole frames (no
    crop, or `whole`) are resized to the size after `short_side` if needed;
    boxes resized on their own (`layout.boxes`) are decoded and resized one by
    one; fixed boxes (no resize) are cut from a decode of their window only.
    """
    tf = backends.tf_ops().tf
    if spec.crop_size is None or whole:
        if spec.short_side is None:
            out, needs_resize = None, False
        else:
            out = layout.out_size
            needs_resize = _differ([(s + ratio - 1) // ratio for s in layout.frame_size], out)

        def decode_full(data):
            image = tf.io.decode_jpeg(data, channels=3, ratio=ratio, dct_method=_DCT_METHOD)
            return _maybe_resize_tf(image, out, needs_resize)

        return (), decode_full, (None, None)
    decoded = [(s + ratio - 1) // ratio for s in layout.frame_size]
    if layout.boxes is not None:
        y, x, h, w = (tf.gather(v, views) for v in layout.boxes)
        windows, at = _crop_windows_tf(tf.stack([y, x], axis=1), tf.stack([h, w], axis=1), decoded)

        def decode_box(data, window, at, size, flip):
            image = _decode_window_tf(data, window, ratio)
            return _box_resize_tf([image], at, size, flip, spec.crop_size)[0]

        flips = tf.gather(layout.plan["flip"], views)
        return (windows, at, tf.stack([h, w], axis=1), flips), decode_box, spec.crop_size
    offsets = tf.gather(layout.plan["crop_offsets"], views)
    windows, at = _crop_windows_tf(offsets, tf.constant([spec.crop_size], tf.int64), decoded)

    def decode_fixed(data, window, at):
        return tf.slice(_decode_window_tf(data, window, ratio), at, [*spec.crop_size, 3])

    return (windows, at), decode_fixed, spec.crop_size


def _resized_boxes_tf(spec, layout, data, ratio):
    """Every position's box, decoded and resized a view at a time: [num_views * T, h, w, 3].

    A view's frames share its box: their windows decode to one size, so the
    view's T boxes are resized and flipped by one call (per view, not per frame).
    """
    tf = backends.tf_ops().tf
    views, t = spec.num_views, spec.num_frames
    every_view = tf.range(views, dtype=tf.int64)
    columns, _, _ = _frame_decoder_tf(spec, layout, every_view, ratio)  # window, box, flip
    data = tf.unstack(data, num=views * t)
    out = []
    for v, (window, at, size, flip) in enumerate(zip(*(tf.unstack(c, num=views) for c in columns))):
        images = [_decode_window_tf(data[v * t + i], window, ratio) for i in range(t)]
        out.append(_box_resize_tf(images, at, size, flip, spec.crop_size))
    return tf.concat(out, axis=0)


def _decode_window_tf(data, window, ratio):
    """The JPEG's window [y, x, h, w] (in the frame decoded at 1/ratio), decoded."""
    tf = backends.tf_ops().tf
    return tf.io.decode_and_crop_jpeg(data, window, channels=3, ratio=ratio, dct_method=_DCT_METHOD)


def _crop_windows_tf(offsets, sizes, decoded):
    """Per box: the window to decode [n, 4] (int32) and the box's (y, x, 0) in it [n, 3].

    `offsets` [n, 2] and `sizes` [n, 2] (or [1, 2]) are the boxes in a frame
    that decodes to size `decoded`; the window is the box plus a margin, inside
    the frame, widened left to a multiple of 16 columns.
    """
    tf = backends.tf_ops().tf
    decoded = tf.cast(tf.stack(decoded), tf.int64)
    start = tf.maximum(offsets - _CROP_MARGIN, 0)
    start = start - start % tf.constant([1, _WINDOW_COLUMNS], tf.int64)
    end = tf.minimum(offsets + sizes + _CROP_MARGIN, decoded)
    windows = tf.concat([start, end - start], axis=1)
    at = tf.concat([offsets - start, tf.zeros_like(start[:, :1])], axis=1)
    return tf.cast(windows, tf.int32), tf.cast(at, tf.int32)


def _box_resize_tf(images, at, size, flip, crop_size):
    """The box at (y, x) of `size` in each of `images` (a list of [h, w, 3]), resized
    to `crop_size` and flipped: [len(images), *crop_size, 3].

    By `resize.resize_box`, OpenCV called from the graph: it costs a quarter
    of TensorFlow's resize kernels (and releases the GIL), and both paths then
    give equal pixels. The images go in as separate tensors: no stacked copy.
    """
    tf = backends.tf_ops().tf

    def resize(at, size, flip, *images):
        (y, x), (h, w) = at[:2], size
        out = np.empty((len(images), *crop_size, 3), np.uint8)
        for image, target in zip(images, out):
            resize_box(image[y : y + h, x : x + w], *crop_size, target, bool(flip))
        return out

    resized = tf.numpy_function(resize, [at, size, flip, *images], tf.uint8, stateful=False)
    return tf.ensure_shape(resized, [len(images), *crop_size, 3])


def _differ(a, b):
    """Whether two (h, w) sizes differ: a Python bool when both are static, else a tensor."""
    if all(isinstance(v, int) for v in (*a, *b)):
        return tuple(a) != tuple(b)
    tf = backends.tf_ops().tf
    a, b = tf.cast(tf.stack(a), tf.int64), tf.cast(tf.stack(b), tf.int64)
    return tf.reduce_any(tf.not_equal(a, b))


def _maybe_resize_tf(image, size, needs_resize):
    """Area-resizes `image` to `size` (rounded half up, as OpenCV's uint8 resize) if needed."""
    tf = backends.tf_ops().tf

    def resize():
        resized = tf.image.resize(image, tf.cast(tf.stack(size), tf.int32), method="area")
        return tf.cast(tf.floor(resized + 0.5), tf.uint8)

    if isinstance(needs_resize, bool):
        return resize() if needs_resize else image
    return tf.cond(needs_resize, resize, lambda: image)


def _mirror_tf(clip):
    """Flips a [T, H, W, 3] clip left-right.

    Reversing axis 1 of the [T * H, W, 3] view takes half the time of
    reversing axis 2 of the clip itself.
    """
    tf = backends.tf_ops().tf
    shape = tf.shape(clip)
    rows = tf.reshape(clip, tf.stack([-1, shape[2], 3]))
    return tf.reshape(tf.reverse(rows, axis=[1]), shape)
