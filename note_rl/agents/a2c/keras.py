"""A2C on the Keras backend: Keras's ``PPO.Rollout`` with A2C's constructor and policy loss."""

from __future__ import annotations

from ...backends import tf_backend as _tf_backend  # noqa: F401,I001 - imports TensorFlow with its start-up log lines silenced
import tensorflow as tf

from ..common import public_module
from ..ppo.keras import PPO
from . import A2CMixin

__all__ = ["A2C"]


@public_module("note_rl.agents.keras")
class A2C(A2CMixin, PPO.Rollout):
    """A2C (arguments and defaults as :class:`note_rl.agents.torch.A2C`)."""

    def policy_loss(self, logp: tf.Tensor, logp_old: tf.Tensor, adv: tf.Tensor) -> tf.Tensor:
        return -tf.reduce_mean(logp * adv)
