"""A build worker process: pickled `Task`s in on stdin, pickled `Outcome`s out, in order.

Started as `python -m video_tfrecords.worker` by `generate.Workers`. A fresh
interpreter imports only this package, OpenCV and NumPy (about 0.5 s), where a
`multiprocessing` spawn would re-run the parent's main script (for `tfds
build`, TensorFlow: seconds per worker).
"""

import os
import pickle
import sys

import cv2

from video_tfrecords import generate


def main() -> None:
    results = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt results
    cv2.setNumThreads(1)  # the parallelism is in the processes
    tasks = sys.stdin.buffer
    while True:
        try:
            task = pickle.load(tasks)
        except EOFError:
            return
        pickle.dump(generate.run(task), results, protocol=pickle.HIGHEST_PROTOCOL)
        results.flush()


if __name__ == "__main__":
    main()
