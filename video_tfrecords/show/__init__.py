"""`python -m video_tfrecords.show`: look at a prepared dataset without TensorFlow.

`clips` draws what ClipSource gives (any clip argument) as a contact sheet or
an animation; `report` counts each split. See `__main__` for the command line.
"""
