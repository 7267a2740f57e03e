"""Run in a fresh process by test_distributed_tf.py: TensorFlow must split the CPU into two logical
devices before it initialises, which a process that already imported it cannot do."""

from __future__ import annotations

import contextlib
import json
import sys

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from note_rl.agents.keras import DQN  # noqa: E402
from note_rl.core.updater import Updater  # noqa: E402
from note_rl.policy import EpsGreedyQPolicy  # noqa: E402


def batches(n: int, size: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(0)
    return [[rng.normal(size=(size, 4)).astype(np.float32), rng.integers(0, 2, size).astype(np.int64),
             rng.normal(size=(size, 4)).astype(np.float32), rng.normal(size=size).astype(np.float32),
             (rng.random(size) < 0.1).astype(np.float32)] for _ in range(n)]


def updates(strategy, max_grad_norm):
    scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
    with scope:
        agent = DQN(4, 16, 2, seed=0, max_grad_norm=max_grad_norm)
        optimizer = keras.optimizers.Adam(1e-2)
        updater = Updater(agent, optimizer, jit=False)
        results = [updater(k + 1, b, None) for k, b in enumerate(batches(6, 64))]
    weights = [np.asarray(v).tolist() for v in agent.q_net.get_weights()]
    return {"weights": weights, "losses": [r.loss for r in results], "td": np.asarray(results[-1].td).tolist()}


def finders(strategy, model, folder: str) -> dict:
    import optuna

    from note_rl.lr_finder import LRFinder
    from note_rl.opt_finder import OptFinder

    with strategy.scope():
        agent = DQN(4, 16, 2, seed=0, env="CartPole-v1")
        agent.optimizer = keras.optimizers.Adam(1e-3)
        opts = [keras.optimizers.SGD(1e-3), keras.optimizers.Adam(1e-3)]
    agent.set(policy=EpsGreedyQPolicy(0.1), pool_size=2000, batch=32, learning_starts=32)
    LRFinder(agent).find(pool_network=False, strategy=strategy, N=5, window_size=2, start_lr=1e-4, end_lr=1e-2,
                         episodes=30, study_dir=folder + "/lr", study_name="lr")
    OptFinder(agent, opts).find(pool_network=False, strategy=strategy, episodes=4, study_dir=folder + "/opt",
                                study_name="opt")
    out = {}
    for name in ("lr", "opt"):
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(
            f"{folder}/{name}/journal.log"))
        study = optuna.load_study(study_name=name, storage=storage)
        out[name] = [(t.state.name, t.user_attrs.get("replicas")) for t in study.trials]
    return out


def seed_examples(strategy, folder: str) -> dict:
    """The seeds' "PPO with MirroredStrategy" (two optimizers, PPO=True replay) and "Pool Network +
    MirroredStrategy" examples, shortened; then a checkpoint restored inside strategy.scope()."""
    import gymnasium as gym

    from note_rl.agents.keras import PPO
    from note_rl.policy import SoftmaxPolicy

    global_batch = 32 * strategy.num_replicas_in_sync
    with strategy.scope():
        model = PPO(state_dim=4, hidden_size=128, action_dim=2, clip=0.7, entropy_coef=0.7)
        optimizer = [keras.optimizers.Adam(1e-4), keras.optimizers.Adam(5e-3)]
    model.env = gym.make("CartPole-v1")
    model.set(policy=SoftmaxPolicy(), pool_size=10000, batch=global_batch, update_steps=1000, PPO=True)
    model.distributed_training(optimizer=optimizer, strategy=strategy, episodes=8, pool_network=False, p=0)
    out = {"ppo": [model.total_episode, model.batch_counter]}
    with strategy.scope():
        model = DQN(state_dim=4, hidden_size=128, action_dim=2, processes=2)
        optimizer = keras.optimizers.Adam()
    model.env = gym.make("CartPole-v1")
    model.set(policy=EpsGreedyQPolicy(0.01), pool_size=10000, batch=global_batch, update_batches=17)
    model.distributed_training(optimizer=optimizer, strategy=strategy, episodes=8, pool_network=True, processes=2, p=0)
    out["pool"] = [model.total_episode, model.batch_counter]
    path = model.save(folder + "/pool.npz")
    with strategy.scope():
        restored = DQN(state_dim=4, hidden_size=128, action_dim=2, processes=2)
        optimizer = keras.optimizers.Adam()
        restored.env = gym.make("CartPole-v1")
        restored.restore(path, optimizer)
    same = all(np.array_equal(a, b) for a, b in zip(restored.q_net.get_weights(), model.q_net.get_weights()))
    restored.distributed_training(optimizer=optimizer, strategy=strategy, episodes=2, pool_network=True, processes=2, p=0)
    out["restored"] = [same, restored.total_episode, restored.batch_counter > model.batch_counter]
    return out


def main() -> None:
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    out = {"replicas": mirrored.num_replicas_in_sync}
    for clip in (None, 0.05):
        out[f"single_{clip}"] = updates(None, clip)
        out[f"mirrored_{clip}"] = updates(mirrored, clip)
    # the seed's snippet: agent and optimizer built in the scope, then distributed_training
    with mirrored.scope():
        model = DQN(4, 16, 2, seed=0)
        optimizer = keras.optimizers.Adam(1e-3)
    model.set(policy=EpsGreedyQPolicy(0.1), pool_size=2000, batch=64, PR=True, update_steps=20)
    model.distributed_training(optimizer, mirrored, 10, p=0)
    out["trained"] = {"batch_counter": model.batch_counter, "episodes": model.total_episode,
                      "td_written": bool(np.any(model.buffer.TD[model.buffer.valid_slots()] != 7.0))}
    errors = {}
    outside = DQN(4, 16, 2)
    outside.set(policy=EpsGreedyQPolicy(0.1), pool_size=2000, batch=64)
    for name, call in (("outside", lambda: outside.distributed_training(keras.optimizers.Adam(), mirrored, 1, p=0)),
                       ("odd_batch", lambda: model.distributed_training(optimizer, mirrored, 1, global_batch_size=63, p=0)),
                       ("no_strategy", lambda: model.distributed_training(optimizer, None, 1, p=0))):
        try:
            call()
            errors[name] = None
        except (ValueError, NotImplementedError) as exc:
            errors[name] = str(exc)
    errors["batch_kept"] = model.batch  # the refused global_batch_size=63 changed nothing
    out["errors"] = errors
    if len(sys.argv) > 1:  # the seeds' finders with strategy=: candidates trained in that strategy
        out["finders"] = finders(mirrored, model, sys.argv[1])
        out["seed_examples"] = seed_examples(mirrored, sys.argv[1])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
