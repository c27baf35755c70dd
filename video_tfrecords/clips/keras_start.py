"""`KerasStartStep`: where `model.fit` starts `clip_dataset`, resumed by `BackupAndRestore`.

Keras restores the optimizer's step in `on_train_begin`, but its first train step counts that
step up without waiting for the batch, so a pipeline reading the optimizer's own variable as it
makes its first batch reads s or s + 1 (a race; s + 1 most often here). The pipeline reads a copy
instead, taken as each epoch begins: after the restore, before `fit` makes its iterator.
"""

from __future__ import annotations

import keras
import tensorflow as tf

__all__ = ["KerasStartStep"]


class KerasStartStep(keras.callbacks.Callback):
    """The optimizer's step as `fit` starts, for `clip_dataset(start_step=callback.step)`.

    Put it in `model.fit`'s callbacks (beside `BackupAndRestore`): each optimizer step then
    trains on the batch an uninterrupted run trains on at that step.
    """

    def __init__(self):
        super().__init__()
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="start_step")

    def on_epoch_begin(self, epoch, logs=None):
        self.step.assign(int(self.model.optimizer.iterations.numpy()))
