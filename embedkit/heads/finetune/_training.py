"""skorch pieces of fine-tuning: gradient accumulation, a learning-rate schedule stepped per
optimizer step, and the validation metrics recorded per epoch."""

from __future__ import annotations

import numpy as np
from skorch import NeuralNet
from skorch.callbacks import LRScheduler
from skorch.utils import TeeGenerator

__all__ = ["FineTuneNet", "OptimizerStepLR", "valid_accuracy", "valid_f1_micro", "valid_r2"]


class FineTuneNet(NeuralNet):
    """skorch NeuralNet that optimises only trainable parameters and accumulates gradients
    over ``accumulate`` batches (skorch's documented ``train_step`` override); the last,
    possibly shorter, group of an epoch also updates the weights."""

    def __init__(self, *args, accumulate: int = 1, **kwargs):
        super().__init__(*args, **kwargs)
        self.accumulate = accumulate

    def get_all_learnable_params(self):
        for name, param in super().get_all_learnable_params():
            if param.requires_grad:
                yield name, param

    def get_loss(self, y_pred, y_true, X=None, training=False):
        loss = super().get_loss(y_pred, y_true, X=X, training=training)
        return loss / self._group if training else loss

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        if training and iterator is not None:
            self._batch, self._n_batches = 0, len(iterator)
        super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)

    def train_step(self, batch, **fit_params):
        acc, i, n = self.accumulate, self._batch, self._n_batches
        start = i - i % acc
        self._group = min(acc, n - start)  # batches in this accumulation group
        self._batch = i + 1
        if i == start:
            self._zero_grad_optimizer()
        step = self.train_step_single(batch, **fit_params)
        self.stepped_ = self._batch == start + self._group
        if self.stepped_:
            self.notify("on_grad_computed",
                        named_parameters=TeeGenerator(self.get_all_learnable_params()),
                        batch=batch)
            self._step_optimizer(None)
        step["loss"] = step["loss"] * self._group  # report the batch's own loss
        return step


class OptimizerStepLR(LRScheduler):
    """skorch's LRScheduler, stepped once per optimizer step (not per accumulated batch)."""

    def on_batch_end(self, net, training, **kwargs):
        if training and getattr(net, "stepped_", True):
            super().on_batch_end(net, training, **kwargs)


def valid_accuracy(net, X, y) -> float:
    return float((np.asarray(net.predict(X)).argmax(axis=1) == np.asarray(y)).mean())


def valid_f1_micro(net, X, y) -> float:
    """Micro-F1 of the labels whose logit is positive (probability above 0.5). From the raw
    logits: skorch's ``predict`` turns BCE logits into ``(n, 2, n_labels)`` probabilities."""
    from sklearn.metrics import f1_score

    logits = net.forward(X, training=False).float().cpu().numpy()
    return float(f1_score(np.asarray(y), logits > 0, average="micro", zero_division=0.0))


def valid_r2(net, X, y) -> float:
    from sklearn.metrics import r2_score

    y = np.asarray(y)
    return float(r2_score(y, np.asarray(net.predict(X)).reshape(y.shape)))
