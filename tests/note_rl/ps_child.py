"""The coordinator of a ``ParameterServerStrategy`` cluster (1 parameter server, 2 workers on
127.0.0.1; run by test_distributed_tf.py as ``ps_child.py CLUSTER_JSON OUT``): the seeds' DQN with
prioritized replay trained by ``distributed_training(optimizer, strategy, num_episodes=...)``."""

from __future__ import annotations

import json
import sys

import tensorflow as tf

cluster, out_path = json.loads(sys.argv[1]), sys.argv[2]
resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(tf.train.ClusterSpec(cluster), rpc_layer="grpc")
strategy = tf.distribute.ParameterServerStrategy(resolver)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from note_rl.agents.keras import DQN  # noqa: E402
from note_rl.policy import EpsGreedyQPolicy  # noqa: E402


def main() -> None:
    with strategy.scope():
        model = DQN(4, 32, 2, seed=0, env="CartPole-v1")
        optimizer = keras.optimizers.Adam(1e-3)
    before = [np.array(w) for w in model.q_net.get_weights()]
    model.set(policy=EpsGreedyQPolicy(0.1), pool_size=2000, batch=64, learning_starts=32, update_steps=20, PR=True)
    model.distributed_training(optimizer, strategy, num_episodes=10, p=0)
    after = [np.array(w) for w in model.q_net.get_weights()]
    out = {"episodes": model.total_episode, "batch_counter": model.batch_counter,
           "devices": sorted({v.value.device for v in model.q_net.weights}),
           "changed": max(float(np.abs(a - b).max()) for a, b in zip(before, after)),
           "td_written": bool(np.any(model.buffer.TD[model.buffer.valid_slots()] != 7.0)),
           "workers": len(cluster["worker"])}
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
