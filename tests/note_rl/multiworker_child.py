"""One worker of a two-worker ``MultiWorkerMirroredStrategy`` on 127.0.0.1 (run by
test_distributed_tf.py as ``multiworker_child.py INDEX PORT0 PORT1 OUT [killed]``)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

index, port0, port1, out_path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": [f"127.0.0.1:{port0}", f"127.0.0.1:{port1}"]},
                                      "task": {"type": "worker", "index": index}})

import tensorflow as tf  # noqa: E402

strategy = tf.distribute.MultiWorkerMirroredStrategy()  # before any other TF op

import keras  # noqa: E402
import numpy as np  # noqa: E402

from note_rl.agents.keras import DQN  # noqa: E402
from note_rl.backends.tf_distribute import broadcast_from_first  # noqa: E402
from note_rl.core.updater import Updater  # noqa: E402
from note_rl.policy import EpsGreedyQPolicy  # noqa: E402


def batches(n: int, size: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(0)
    return [[rng.normal(size=(size, 4)).astype(np.float32), rng.integers(0, 2, size).astype(np.int64),
             rng.normal(size=(size, 4)).astype(np.float32), rng.normal(size=size).astype(np.float32),
             (rng.random(size) < 0.1).astype(np.float32)] for _ in range(n)]


def weights(agent) -> list[list]:
    return [np.asarray(v).tolist() for v in agent.q_net.get_weights()]


class _KillSelf:
    def __init__(self, at: int) -> None:
        self.at = at

    def on_episode_end(self, episode: int, logs: dict) -> None:
        if episode == self.at:
            os.kill(os.getpid(), signal.SIGKILL)


def killed() -> None:
    """Worker 1 is SIGKILLed at its fourth episode while worker 0 saves a full checkpoint every
    episode; worker 0 records the error it got and how long after the kill."""
    from note_rl.distributed import ReplicaLost

    with strategy.scope():
        model = DQN(4, 32, 2, seed=0, env="CartPole-v1")
        optimizer = keras.optimizers.Adam(1e-3)
    model.set(policy=EpsGreedyQPolicy(0.1), pool_size=2000, batch=64, learning_starts=32, update_steps=20)
    model.path = os.path.join(os.path.dirname(out_path), "ckpt.npz")
    model.callbacks = [_KillSelf(3)] if index == 1 else []
    out: dict = {"error": None}
    try:
        model.distributed_training(optimizer, strategy, num_episodes=500, p=0)
    except ReplicaLost as exc:
        out = {"error": str(exc), "after_s": time.time() - os.path.getmtime(model.path)}
    with open(out_path, "w") as f:
        json.dump(out, f)


def main() -> None:
    if sys.argv[5:] == ["killed"]:
        killed()
        return
    out: dict = {"replicas": strategy.num_replicas_in_sync}
    # six Adam steps on 64-item global batches: this worker's half against one device on the whole
    single = DQN(4, 16, 2, seed=0)
    single_updater = Updater(single, keras.optimizers.Adam(1e-2), jit=False)
    for k, b in enumerate(batches(6, 64)):
        single_updater(k + 1, b, None)
    out["single"] = weights(single)
    with strategy.scope():
        agent = DQN(4, 16, 2, seed=index)  # other seeds: the broadcast must make the workers equal
        updater = Updater(agent, keras.optimizers.Adam(1e-2), jit=False)
        broadcast_from_first(strategy, agent.q_net.weights + agent.target_q_net.weights)
        for k, b in enumerate(batches(6, 64)):
            result = updater(k + 1, [a[index * 32:(index + 1) * 32] for a in b], None)
    out["worker"] = weights(agent)
    out["td_len"] = int(np.asarray(result.td).size) if result.td is not None else None
    # the seed's MultiWorker snippet: DQN trained with num_episodes; worker 1 runs more episodes
    with strategy.scope():
        model = DQN(4, 32, 2, seed=0, env="CartPole-v1")
        optimizer = keras.optimizers.Adam(1e-3)
    model.set(policy=EpsGreedyQPolicy(0.1), pool_size=2000, batch=64, learning_starts=32, update_steps=20, PR=True)
    model.path = os.path.join(os.path.dirname(out_path), f"ckpt-worker{index}.npz")
    model.distributed_training(optimizer, strategy, num_episodes=12 + 4 * index, p=0)
    out["trained"] = {"episodes": model.total_episode, "batch_counter": model.batch_counter,
                      "batch": model.batch, "weights": weights(model),
                      "td_written": bool(np.any(model.buffer.TD[model.buffer.valid_slots()] != 7.0))}
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
