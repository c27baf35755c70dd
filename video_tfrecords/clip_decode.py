"""Decoding a clip: check the video, plan the clip, decode only the frames (and box) it needs.

`sample_np` (NumPy; JPEG through simplejpeg, resizes and flips through
OpenCV; works without TensorFlow) and `sample_tf` (a TensorFlow graph, for
tf.data) take the same `ClipSpec`, run the same plan (`clip_plan`) and return
the same pixels: both decode with libjpeg-turbo's accurate integer IDCT (TF's
`dct_method="INTEGER_ACCURATE"`, simplejpeg's default).

With `short_side`, frames are decoded at half size by the JPEG decoder's DCT
scaling when that still covers the short side (see `clip_plan.reduction`),
then resized the rest of the way (area). When a resize step remains, the two
paths agree within one grey level (OpenCV's and TF's area resizes round
differently); otherwise they are equal. TensorFlow is imported only by the TF
functions.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import simplejpeg

from video_tfrecords import clip_boxes, clip_plan
from video_tfrecords.clip_spec import ClipSpec

__all__ = ["plan_np", "plan_tf", "sample_np", "sample_tf"]

# Extra pixels decoded around a crop box. With 4:2:0 chroma subsampling,
# libjpeg's "fancy" upsampling treats the edge of a cropped decode like an
# image edge; decoding a slightly larger window and slicing gives exactly the
# pixels of a full decode (2 px suffice; 4 for margin).
_CROP_MARGIN = 4
_DCT_METHOD = "INTEGER_ACCURATE"


@dataclasses.dataclass
class _Layout:
    """A clip's plan and what decoding it needs to know."""

    plan: dict[str, Any]
    checks: list[Any]  # TF: ops to depend on (NumPy checks have raised already)
    frame_size: tuple[Any, Any] | None = None  # (h, w) of the stored frames
    out_size: tuple[Any, Any] | None = None  # (h, w) after `short_side`, before the crop
    ratio: Any = 1  # JPEG DCT scaling denominator to decode with


# ---------------------------------------------------------------------------
# The plan with its checks, written once over clip_plan's ops.
# ---------------------------------------------------------------------------


def _label(ops, frames, name):
    """Message parts naming a video: its name, else its content fingerprint."""
    if name is not None:
        return ("`", name, "`")  # Backticks: tf.debugging.Assert escapes quotes in graph mode.
    fingerprint = ops.signed(clip_plan.fingerprint_u64(ops, frames))
    return ("(fingerprint ", fingerprint, "; see video_tfrecords.clip_plan.video_fingerprint)")


def _key(ops, spec, frames, seed, fingerprint=None):
    """uint64 key: from (seed, else spec.seed, and the video content), else fresh."""
    seed = spec.seed if seed is None else seed
    if seed is None:
        return clip_plan.fresh_key(ops)
    return clip_plan.seeded_key(ops, seed, frames, fingerprint)


def _frame_size(ops, frames, index, label, checks):
    """(h, w) of the planned frame `index`, read from its JPEG header."""
    data = ops.frame_or_empty(frames, index)
    checks.append(
        ops.check(
            ops.is_jpeg(data),
            lambda: ("Frame ", index, " of video ", *label(), " is not a valid JPEG."),
        )
    )
    return ops.after(checks, lambda: ops.jpeg_size(data))


def _geometry(ops, spec, size):
    """(size after short_side, DCT scaling denominator) for stored frames of `size`."""
    if spec.short_side is None:
        return size, 1
    if isinstance(spec.short_side, tuple):  # jitter: the smallest frame; a scale for the largest
        lo, hi = spec.short_side
        return clip_plan.resized_size(ops, *size, lo), clip_plan.reduction(ops, *size, hi)
    return (
        clip_plan.resized_size(ops, *size, spec.short_side),
        clip_plan.reduction(ops, *size, spec.short_side),
    )


def _times(ops, spec, frames, timestamps, source_fps):
    """float64 [L] time of each frame for `spec.fps`: the stored timestamps, else i / source_fps."""
    if spec.fps is None:
        return None
    if timestamps is not None:
        return ops.f64(timestamps)
    if source_fps is None:
        raise ValueError(
            f"fps={spec.fps} needs each video's timestamps (or its stored frame rate): "
            "pass timestamps= (or source_fps=)."
        )
    return ops.f64(ops.arange(ops.num_frames(frames))) / ops.f64(source_fps)


def _checked_plan(
    ops,
    spec,
    frames,
    seed,
    name,
    *,
    frame_shape=None,
    need_size=False,
    fingerprint=None,
    timestamps=None,
    source_fps=None,
):
    """The clip's `_Layout`, after the checks that make the plan valid (errors name the video)."""
    length = ops.num_frames(frames)
    label = lambda: _label(ops, frames, name)
    checks = [ops.check(length > 0, lambda: ("Video ", *label(), " has no frames."))]
    times = _times(ops, spec, frames, timestamps, source_fps)
    if times is not None:
        checks.append(
            ops.check(
                ops.size(times) == length,
                lambda: ("Video ", *label(), " has ", length, " frames but ", ops.size(times),
                         " timestamps."),
            )
        )
        units = ops.after(checks, lambda: clip_plan.tick_count(ops, times, spec.fps))
        unit_name = f" ticks of 1/{spec.fps} s"
    else:
        units, unit_name = length, " frames"
    if spec.short_video == "error":
        too_short = (
            f"{unit_name}, but a clip of num_frames={spec.num_frames} with stride={spec.stride} "
            f"spans {spec.min_span} frames (short_video: error)."
        )
        checks.append(
            ops.check(
                units >= spec.min_span, lambda: ("Video ", *label(), " has ", units, too_short)
            )
        )
    key = ops.after(checks, lambda: _key(ops, spec, frames, seed, fingerprint))
    indices = ops.after(checks, lambda: clip_plan.clip_frames(ops, spec, key, length, times))
    layout = _Layout({"indices": indices}, checks)
    if need_size or spec.crop_size is not None or spec.short_side is not None:
        if frame_shape is not None:  # Static sizes: plain ints, decided while tracing.
            out, ratio = _geometry(clip_plan.NP_OPS, spec, frame_shape)
            out, ratio = (int(out[0]), int(out[1])), int(ratio)
            layout.frame_size = frame_shape
        else:
            layout.frame_size = _frame_size(ops, frames, indices[0, 0], label, checks)
            out, ratio = _geometry(ops, spec, layout.frame_size)
        layout.out_size, layout.ratio = out, ratio
    if spec.crop_size is None:
        layout.plan["crop_offsets"] = clip_plan.crop_offsets(ops, spec, key, None, None)
    elif spec.crop == "resized":  # any frame holds a box: it is resized to crop_size
        if isinstance(spec.short_side, tuple):
            out = _jittered_sizes(ops, spec, key, layout)
        offsets, sizes = clip_boxes.resized_crop_boxes(ops, spec, key, *out)
        layout.plan["crop_offsets"], layout.plan["box_size"] = offsets, sizes
    else:
        h, w = spec.crop_size
        resized = "" if spec.short_side is None else f" after short_side={spec.short_side}"
        checks.append(
            ops.check(
                ops.logical_and(out[0] >= h, out[1] >= w),
                lambda: (
                    f"crop_size ({h}, {w}) is larger than the frames of video ",
                    *label(),
                    " (",
                    out[0],
                    "x",
                    out[1],
                    f"{resized}).",
                ),
            )
        )
        if isinstance(spec.short_side, tuple):
            out = _jittered_sizes(ops, spec, key, layout)
        layout.plan["crop_offsets"] = ops.after(
            checks, lambda: clip_plan.crop_offsets(ops, spec, key, *out)
        )
    layout.plan["flip"] = clip_plan.flip_flags(ops, spec, key)
    return layout


def _jittered_sizes(ops, spec, key, layout):
    """Scale jitter: each clip's frame size after its drawn short side, [num_clips] per axis.

    Records the short side of every view in the plan and their frame sizes in
    `layout.out_size` (int64 [num_views] per axis).
    """
    sides = clip_plan.short_sides(ops, spec, key)
    out = clip_plan.resized_size(ops, *layout.frame_size, sides)
    layout.plan["short_side"] = ops.repeat(sides, spec.num_crops)
    layout.out_size = tuple(ops.repeat(ops.i64(s), spec.num_crops) for s in out)
    return out


# ---------------------------------------------------------------------------
# NumPy path.
# ---------------------------------------------------------------------------


def plan_np(
    spec: ClipSpec, frames, seed=None, *, name=None, fingerprint=None, timestamps=None,
    source_fps=None,
) -> dict[str, np.ndarray]:
    """The plan of `sample_np(spec, frames, seed)`, without decoding pixels.

    A dict with "indices" (int64 [num_views, T], -1 = padded frame),
    "crop_offsets" (int64 [num_views, 2], (y, x) of each box in the frame after
    `short_side`; zeros without crop) and "flip" (bool [num_views]); views are
    clips times crops, clip-major.
    """
    with clip_plan.NP_OPS.wrapping():
        plan = _checked_plan(
            clip_plan.NP_OPS, spec, frames, seed, name, fingerprint=fingerprint,
            timestamps=timestamps, source_fps=source_fps,
        ).plan
    return {k: np.asarray(v) for k, v in plan.items()}


def sample_np(
    spec: ClipSpec, frames, seed=None, *, name=None, fingerprint=None, out=None,
    timestamps=None, source_fps=None,
) -> np.ndarray:
    """Samples and decodes clip(s) without TensorFlow: uint8 [T, H, W, 3] or [V, T, H, W, 3].

    V = num_clips * num_crops views, clip-major.

    Args:
        spec: the clip specification.
        frames: a sequence of encoded JPEG frames (bytes, memoryview, NumPy
            object array of bytes...), in video order.
        seed: an int, or None for `spec.seed` (fresh randomness on every call
            if that is None too). The clip is a function of (seed, video content).
        name: optional name of the video (e.g. its filename) for error messages;
            defaults to its content fingerprint.
        fingerprint: the video's `clip_plan.video_fingerprint(frames)` if known
            (e.g. cached by a reader that reads the video again): saves hashing
            it. It must be that value; the clip is then the same.
        timestamps, source_fps: each frame's time in seconds, else the stored
            frame rate: needed with `spec.fps` only.

    Each distinct frame is decoded once, straight from its bytes: into the
    output itself when it fills its place whole (no crop, flip or resize), else
    into one reused frame, copied on into place cropped, flipped or resized.
    """
    ops = clip_plan.NP_OPS
    with ops.wrapping():
        layout = _checked_plan(
            ops, spec, frames, seed, name, need_size=True, fingerprint=fingerprint,
            timestamps=timestamps, source_fps=source_fps,
        )
    plan = layout.plan
    label = lambda: ops.message(_label(ops, frames, name))
    sizes = _view_sizes(spec, layout.out_size)  # (h, w) of each view's frames before its box
    box_h, box_w = spec.crop_size or sizes[0]
    shape = (spec.num_views, spec.num_frames, box_h, box_w, 3)
    if out is None:
        clips = np.empty(shape, np.uint8)
    else:
        clips = out.reshape(shape)  # TODO(lead): helper-3 delivers the checked version
    if spec.short_video == "pad":
        clips[...] = 0
    slots = {}  # frame index -> [(clip, position)]
    for c, row in enumerate(plan["indices"].tolist()):
        for t, i in enumerate(row):
            if i >= 0:
                slots.setdefault(i, []).append((c, t))
    boxes = [(*yx, flip) for yx, flip in zip(plan["crop_offsets"].tolist(), plan["flip"].tolist())]
    box_sizes = [tuple(s) for s in plan["box_size"].tolist()] if "box_size" in plan else None
    ratio = int(layout.ratio)
    # The size every frame decodes to (that of the planned first frame).
    decoded_size = tuple(-(-int(s) // ratio) for s in layout.frame_size)
    scratch = None  # one decoded frame when it cannot go straight to its slot
    for i, positions in slots.items():
        first_clip, first_t = positions[0]
        resized = sizes[first_clip] != decoded_size
        whole = box_sizes is None and (box_h, box_w) == sizes[first_clip]  # fills its slot
        in_place = not resized and whole and not boxes[first_clip][2]
        if in_place:
            target = clips[first_clip, first_t]  # decoded into the clip: no copy at all
        else:
            scratch = np.empty((*decoded_size, 3), np.uint8) if scratch is None else scratch
            target = scratch
        where = lambda i=i: f"Frame {i} of video {label()}"
        image = _decode_rgb(frames[i], ratio, target, where)
        scaled = {}  # (h, w) -> the frame at that size (each size once per frame)
        for c, t in positions[1:] if in_place else positions:
            size = sizes[c]
            if size not in scaled:
                scaled[size] = image if size == decoded_size else _area_resize_np(image, *size)
            y, x, flip = boxes[c]
            if box_sizes is None:
                box = scaled[size][y : y + box_h, x : x + box_w]
            else:  # crop="resized": the drawn box, resized to crop_size
                bh, bw = box_sizes[c]
                box = _box_resize_np(scaled[size][y : y + bh, x : x + bw], box_h, box_w)
            if flip:
                _cv2().flip(box, 1, dst=clips[c, t])
            else:
                clips[c, t] = box
    return clips if spec.multi_clip else clips[0]


def _view_sizes(spec, out_size) -> list[tuple[int, int]]:
    """(h, w) of each view's frames before its box: one size, or one per view (scale jitter)."""
    if isinstance(spec.short_side, tuple):
        return [(int(h), int(w)) for h, w in zip(*out_size)]
    return [(int(out_size[0]), int(out_size[1]))] * spec.num_views


def _box_resize_np(box: np.ndarray, height: int, width: int) -> np.ndarray:
    """A drawn box to the output size: area when both sides shrink, else bilinear."""
    cv2 = _cv2()
    shrink = box.shape[0] >= height and box.shape[1] >= width
    interpolation = cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
    return cv2.resize(box, (width, height), interpolation=interpolation)


def _cv2():
    import cv2  # OpenCV takes ~0.1 s to import; only the NumPy path needs it

    return cv2


def _decode_rgb(data, ratio: int, out: np.ndarray, where) -> np.ndarray:
    """Decodes JPEG bytes at 1/`ratio` scale into `out` (uint8 RGB [h, w, 3]), returning it.

    libjpeg-turbo through simplejpeg: the accurate integer IDCT, fancy
    upsampling and DCT scaling as in TensorFlow's `decode_jpeg(ratio=...)`
    (equal pixels), EXIF orientation ignored as TensorFlow does, and straight
    into `out`, the clip's own memory where it can be. `where()` names the
    frame in errors: a truncated or corrupt JPEG, or one that decodes to
    another size than `out`'s, raises ValueError.
    """
    buffer = np.frombuffer(data, np.uint8)
    if not _is_whole_jpeg(buffer):
        raise ValueError(f"{where()} is not a valid JPEG.")
    try:
        height, width, _, _ = simplejpeg.decode_jpeg_header(buffer)
    except ValueError as e:
        raise ValueError(f"{where()} is not a valid JPEG ({e}).") from None
    found, size = (-(-height // ratio), -(-width // ratio)), out.shape[:2]
    if found != size:
        raise ValueError(
            f"{where()} decodes to {found[1]}x{found[0]}, other frames to {size[1]}x{size[0]}; "
            "frames must have one size."
        )
    try:
        return simplejpeg.decode_jpeg(
            buffer, "RGB", min_height=found[0], min_width=found[1], min_factor=ratio, buffer=out
        )
    except ValueError as e:
        raise ValueError(f"{where()} is not a valid JPEG ({e}).") from None


def _is_whole_jpeg(buffer: np.ndarray) -> bool:
    """Whether the bytes start like a JPEG and end with its end-of-image marker.

    OpenCV decodes a truncated JPEG with a warning (grey rows); TensorFlow
    fails. The marker cannot occur inside the entropy-coded data (0xFF is
    always followed by 0x00 or a restart marker there); up to 62 bytes of
    padding after it are allowed.
    """
    if bytes(buffer[:3]) != clip_plan.JPEG_MAGIC:
        return False
    tail = bytes(buffer[-64:])
    return tail.rfind(b"\xff\xd9") >= 0


def _area_resize_np(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """Resizes with pixel-area averaging (OpenCV's INTER_AREA)."""
    cv2 = _cv2()
    return cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)


# ---------------------------------------------------------------------------
# TensorFlow path (TensorFlow is imported by these functions only).
# ---------------------------------------------------------------------------


def plan_tf(
    spec: ClipSpec, frames, seed=None, *, name=None, timestamps=None, source_fps=None
) -> dict[str, Any]:
    """The TF plan of `sample_tf(spec, frames, seed)`, without decoding pixels (see `plan_np`)."""
    ops = clip_plan.tf_ops()
    frames = ops.tf.convert_to_tensor(frames, ops.tf.string)
    return _checked_plan(
        ops, spec, frames, seed, name, timestamps=timestamps, source_fps=source_fps
    ).plan


def sample_tf(
    spec: ClipSpec, frames, seed=None, *, name=None, frame_shape=None, timestamps=None,
    source_fps=None,
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
            from the TFDS feature): static output shapes and no header read.
        timestamps, source_fps: float tensors, each frame's time in seconds,
            else the stored frame rate: needed with `spec.fps` only.

    Returns:
        uint8 tensor [T, H, W, 3] or [num_views, T, H, W, 3], static wherever known.
        Only the clip's frames are decoded (and only the box of each, with a crop).
    """
    ops = clip_plan.tf_ops()
    tf = ops.tf
    frames = tf.convert_to_tensor(frames, tf.string)
    layout = _checked_plan(
        ops, spec, frames, seed, name, frame_shape=frame_shape, timestamps=timestamps,
        source_fps=source_fps,
    )
    if tf.executing_eagerly() and layout.frame_size is not None:  # sizes are known: no branches
        layout.frame_size = tuple(map(int, layout.frame_size))
        if not isinstance(spec.short_side, tuple):  # (jitter: sizes per view stay tensors)
            layout.out_size = tuple(map(int, layout.out_size))
        layout.ratio = int(layout.ratio)
    with tf.control_dependencies(layout.checks):
        return _decode_tf(spec, frames, layout, name, frame_shape)


def _decode_tf(spec, frames, layout, name, frame_shape):
    """Decodes the planned frames, each distinct (frame, box) once."""
    ops = clip_plan.tf_ops()
    tf = ops.tf
    plan = layout.plan
    num_clips, t = spec.num_views, spec.num_frames
    n = num_clips * t
    length = ops.num_frames(frames)
    flat = tf.reshape(plan["indices"], [n])
    safe = tf.maximum(flat, 0)
    clip_of = tf.repeat(tf.range(num_clips, dtype=tf.int64), t)
    per_view = spec.crop != "center" or spec.num_crops > 1 or isinstance(spec.short_side, tuple)
    if spec.crop_size is not None and per_view and num_clips > 1:  # boxes per view
        uids, inverse = tf.unique(clip_of * length + safe)
        u_frames, u_clips = uids % length, uids // length
    else:
        u_frames, inverse = tf.unique(safe)
        u_clips = tf.zeros_like(u_frames)
    bad = tf.not_equal(tf.gather(tf.strings.substr(frames, 0, 3), u_frames), clip_plan.JPEG_MAGIC)
    valid = ops.check(
        tf.logical_not(tf.reduce_any(bad)),
        lambda: (
            "Frame ",
            tf.boolean_mask(u_frames, bad)[0],
            " of video ",
            *_label(ops, frames, name),
            " is not a valid JPEG.",
        ),
    )

    def decode_all(ratio):
        def each_position():
            # The usual case: no frame repeats. n independent decode ops (inputs
            # split by one unstack op each) run in parallel on the executor,
            # with no while loop and no gather of decoded frames. (Inputs of
            # static size n: Grappler may run this branch's unstack ops early.)
            inputs, decode, _ = _frame_decoder_tf(spec, layout, clip_of, ratio)
            columns = [tf.unstack(x, num=n) for x in (tf.gather(frames, safe), *inputs)]
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

        if spec.num_crops > 1 and not isinstance(spec.short_side, tuple):
            return _shared_crops_tf(spec, layout, frames, ratio)
        return tf.cond(tf.equal(tf.size(u_frames), n), each_position, each_distinct)

    with tf.control_dependencies([valid]):
        if isinstance(layout.ratio, int):
            clips = decode_all(layout.ratio)
        else:  # Frame sizes known only at run time: a branch per DCT scaling.
            branch = tf.cast(layout.ratio > 1, tf.int32)
            branches = [lambda r=r: decode_all(r) for r in clip_plan.REDUCTIONS]
            clips = tf.switch_case(branch, branches)
    if spec.short_video == "pad":
        clips = tf.where(tf.reshape(flat >= 0, [-1, 1, 1, 1]), clips, tf.zeros_like(clips))
    clips = tf.reshape(clips, tf.concat([[num_clips, t], tf.shape(clips)[1:]], axis=0))
    if spec.flip:
        # Only the clips drawn for flipping pay for the mirror copy.
        flips = tf.unstack(plan["flip"], num=num_clips)
        clips = tf.stack(
            [
                tf.cond(flip, lambda c=c: _mirror_tf(clips[c]), lambda c=c: clips[c])
                for c, flip in enumerate(flips)
            ]
        )
    clips = tf.ensure_shape(clips, [num_clips, t, *_static_size(spec, frame_shape), 3])
    return clips if spec.multi_clip else clips[0]


def _static_size(spec, frame_shape):
    """Static (h, w) of the output when known, else (None, None)."""
    if spec.crop_size is not None:
        return spec.crop_size
    if frame_shape is None:
        return (None, None)
    size, _ = _geometry(clip_plan.NP_OPS, spec, frame_shape)
    return tuple(int(s) for s in size)


def _shared_crops_tf(spec, layout, frames, ratio):
    """Test views: each distinct frame of the clips decoded once, whole, then sliced per crop.

    The crops of a clip cover its frames' long side: one whole decode costs less
    than three box decodes, and a frame shared by overlapping clips is decoded once.
    """
    tf = clip_plan.tf_ops().tf
    k, t = spec.num_crops, spec.num_frames
    wanted = tf.reshape(tf.maximum(layout.plan["indices"][::k], 0), [-1])  # [num_clips * T]
    distinct, inverse = tf.unique(wanted)
    _, decode, _ = _frame_decoder_tf(spec, layout, tf.zeros([1], tf.int64), ratio, whole=True)
    images = tf.map_fn(
        decode, tf.gather(frames, distinct), fn_output_signature=tf.TensorSpec(None, tf.uint8)
    )
    images = tf.gather(images, inverse)  # [num_clips * T, H, W, 3]
    h, w = spec.crop_size
    crops = []
    for crop in range(k):  # the boxes are the same for every clip
        y, x = tf.unstack(tf.cast(layout.plan["crop_offsets"][crop], tf.int32))
        crops.append(tf.slice(images, tf.stack([0, y, x, 0]), [-1, h, w, 3]))
    by_frame = tf.reshape(tf.stack(crops, axis=1), [-1, t, k, h, w, 3])  # [clip, T, crop, ...]
    views = tf.transpose(by_frame, [0, 2, 1, 3, 4, 5])  # clip-major views: [clip, crop, T, ...]
    return tf.reshape(views, [-1, h, w, 3])


def _frame_decoder_tf(spec, layout, views, ratio, *, whole=False):
    """(per-frame inputs, decode(data, *inputs) -> image, static image size) at 1/ratio scale.

    `views`: the view of each frame to decode (its box, and its size with scale jitter).
    """
    tf = clip_plan.tf_ops().tf
    offsets = tf.gather(layout.plan["crop_offsets"], views)
    if spec.short_side is None:
        decoded = out = layout.frame_size
        needs_resize = False
    elif isinstance(spec.short_side, tuple):  # a size per view: always resize (same size: a copy)
        decoded = [(s + ratio - 1) // ratio for s in layout.frame_size]
        out = tuple(tf.gather(s, views) for s in layout.out_size)
        needs_resize = True
    else:
        decoded = [(s + ratio - 1) // ratio for s in layout.frame_size]
        out = layout.out_size
        needs_resize = _differ(decoded, out)
    if spec.crop_size is None or whole:

        def decode_full(data):
            image = tf.io.decode_jpeg(data, channels=3, ratio=ratio, dct_method=_DCT_METHOD)
            return _maybe_resize_tf(image, out, needs_resize)

        return (), decode_full, (None, None)
    drawn = layout.plan.get("box_size")  # crop="resized": boxes of their own sizes
    box_sizes = spec.crop_size if drawn is None else tf.gather(drawn, views)
    windows, sizes, boxes = _crop_windows_tf(offsets, decoded, out, box_sizes)

    def decode_box(data, window, size, box, *box_size):
        image = tf.io.decode_and_crop_jpeg(
            data, window, channels=3, ratio=ratio, dct_method=_DCT_METHOD
        )
        image = _maybe_resize_tf(image, size, needs_resize)
        if not box_size:
            return tf.slice(image, box, [*spec.crop_size, 3])
        box_size = tf.cast(box_size[0], tf.int32)
        image = tf.slice(image, box, tf.concat([box_size, [3]], axis=0))
        return _box_resize_tf(image, box_size, spec.crop_size)

    inputs = (windows, sizes, boxes) if drawn is None else (windows, sizes, boxes, box_sizes)
    return inputs, decode_box, spec.crop_size


def _crop_windows_tf(offsets, decoded, out, crop_size):
    """Per box: the window to decode [n, 4], its size after resizing [n, 2], the box in it [n, 3].

    `offsets` [n, 2] are the boxes' (y, x) in the frame of size `out`; the frame
    decodes to size `decoded`. Along an axis that needs no resizing
    (decoded == out), the window is the box plus a margin, inside the frame;
    along one that does, it is the whole axis, resized to `out` (resizing a part
    would not keep the pixel grid of the whole frame).
    """
    tf = clip_plan.tf_ops().tf
    starts, ends, sizes, in_window = [], [], [], []
    for axis in range(2):
        o = offsets[:, axis]
        box = crop_size[axis] if isinstance(crop_size, tuple) else crop_size[:, axis]
        d, r = (tf.cast(s[axis], tf.int64) for s in (decoded, out))
        exact = tf.equal(d, r)
        start = tf.where(exact, tf.maximum(o - _CROP_MARGIN, 0), 0)
        end = tf.where(exact, tf.minimum(o + box + _CROP_MARGIN, d), d)
        starts.append(start)
        ends.append(end)
        sizes.append(tf.where(exact, end - start, r))
        in_window.append(o - start)
    windows = tf.stack([starts[0], starts[1], ends[0] - starts[0], ends[1] - starts[1]], axis=1)
    boxes = tf.stack([in_window[0], in_window[1], tf.zeros_like(in_window[0])], axis=1)
    return tf.cast(windows, tf.int32), tf.stack(sizes, axis=1), tf.cast(boxes, tf.int32)


def _box_resize_tf(box, box_size, crop_size):
    """`_box_resize_np` in TF: area when both sides shrink, else bilinear; rounded half up."""
    tf = clip_plan.tf_ops().tf
    shrink = tf.reduce_all(box_size >= tf.constant(crop_size, tf.int32))

    def resize(method):
        resized = tf.image.resize(box, crop_size, method=method)
        return tf.cast(tf.floor(resized + 0.5), tf.uint8)

    image = tf.cond(shrink, lambda: resize("area"), lambda: resize("bilinear"))
    return tf.ensure_shape(image, [*crop_size, 3])


def _differ(a, b):
    """Whether two (h, w) sizes differ: a Python bool when both are static, else a tensor."""
    if all(isinstance(v, int) for v in (*a, *b)):
        return tuple(a) != tuple(b)
    tf = clip_plan.tf_ops().tf
    a, b = tf.cast(tf.stack(a), tf.int64), tf.cast(tf.stack(b), tf.int64)
    return tf.reduce_any(tf.not_equal(a, b))


def _maybe_resize_tf(image, size, needs_resize):
    """Area-resizes `image` to `size` (rounded half up, as OpenCV's uint8 resize) if needed."""
    tf = clip_plan.tf_ops().tf

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
    tf = clip_plan.tf_ops().tf
    shape = tf.shape(clip)
    rows = tf.reshape(clip, tf.stack([-1, shape[2], 3]))
    return tf.reshape(tf.reverse(rows, axis=[1]), shape)
