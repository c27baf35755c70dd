"""The build side: from manifest lines to the examples TFDS writes. Imports no TensorFlow.

manifest (the manual dir's manifests, checked), video_io (FFmpeg decode through
PyAV), frame_choice (which frames, what size), encoding (one video's examples
or skip record), cache (encoded videos kept for resuming), parallel (the
worker pool of a local build).
"""
