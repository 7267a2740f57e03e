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
            f"{folder}/journal.log"))  # the finders' studies share the journal beside their dirs
        study = optuna.load_study(study_name=name, storage=storage)
        out[name] = [(t.state.name, t.user_attrs.get("replicas")) for t in study.trials]
    return out


def seed_examples(folder: str, strategy=None) -> dict:
    """The seeds' three "MirroredStrategy" examples (000:600-680) as the seed writes them, with the
    package renamed (``Note_rl`` -> ``note_rl``) and, for time, 20 episodes for the DQNs (their
    untrained policy needs that many CartPole steps to fill one 128-item global batch), 12 for PPO
    (8 sometimes fell short of one batch) and 8 for the pool network instead of 100, and ``processes=2`` instead of 7.  ``strategy`` is the
    seed's ``MirroredStrategy()`` (every GPU, or one CPU) unless one is given (two logical CPUs in
    the CPU run).  The PPO snippet uses ``SoftmaxPolicy`` without importing it: it comes from
    ``note_rl.policy`` here.  Then Note_rl 001's positional ``distributed_training(GLOBAL_BATCH_SIZE,
    optimizer, strategy, 100)`` (20 episodes), and a checkpoint restored inside ``strategy.scope()``."""
    import tensorflow as tf
    from note_rl.policy import EpsGreedyQPolicy
    from note_rl.examples.keras.DQN import DQN

    strategy = strategy or tf.distribute.MirroredStrategy()
    batch_per_replica = 64
    global_batch = batch_per_replica * strategy.num_replicas_in_sync

    with strategy.scope():
        model = DQN(state_dim=4, hidden_size=128, action_dim=2)
        optimizer = tf.keras.optimizers.Adam()

    model.set(
        policy=EpsGreedyQPolicy(eps=0.01),
        pool_size=10000,
        batch=global_batch,
        update_steps=10
    )

    model.distributed_training(
        optimizer=optimizer,
        strategy=strategy,
        episodes=20,
        pool_network=False
    )
    out = {"devices": list(strategy.extended.worker_devices), "replicas": strategy.num_replicas_in_sync,
           "dqn": [model.total_episode, model.batch_counter]}

    # PPO with MirroredStrategy
    from note_rl.policy import SoftmaxPolicy
    from note_rl.examples.keras.PPO import PPO

    with strategy.scope():
        model = PPO(state_dim=4, hidden_size=128, action_dim=2, clip=0.7, entropy_coef=0.7)
        optimizer = [
            tf.keras.optimizers.Adam(1e-4),
            tf.keras.optimizers.Adam(5e-3)
        ]

    model.set(
        policy=SoftmaxPolicy(),
        pool_size=10000,
        batch=global_batch,
        update_steps=1000,
        PPO=True
    )

    model.distributed_training(
        optimizer=optimizer,
        strategy=strategy,
        episodes=12,  # 8 unseeded episodes of an untrained policy sometimes held < 128 steps: no update
        pool_network=False
    )
    out["ppo"] = [model.total_episode, model.batch_counter]

    # Pool Network + MirroredStrategy
    from note_rl.examples.keras.pool_network.DQN import DQN

    with strategy.scope():
        model = DQN(state_dim=4, hidden_size=128, action_dim=2, processes=2)
        optimizer = tf.keras.optimizers.Adam()

    model.set(
        policy=EpsGreedyQPolicy(eps=0.01),
        pool_size=10000,
        batch=global_batch,
        update_batches=17
    )

    model.distributed_training(
        optimizer=optimizer,
        strategy=strategy,
        episodes=8,
        pool_network=True,
        processes=2
    )
    out["pool"] = [model.total_episode, model.batch_counter]

    # Note_rl 001 (its DQN is Note.models.docs_example.RL.note.DQN, its ``rl`` Note.RL.rl)
    from note_rl import policy as rl
    from note_rl.examples.keras.DQN import DQN as DQN001

    GLOBAL_BATCH_SIZE = global_batch
    with strategy.scope():
        model001 = DQN001(4, 128, 2)
        optimizer001 = tf.keras.optimizers.Adam()
    model001.set(policy=rl.EpsGreedyQPolicy(0.01), pool_size=10000, batch=64, update_steps=10)
    model001.distributed_training(GLOBAL_BATCH_SIZE, optimizer001, strategy, 20)
    out["positional"] = [model001.total_episode, model001.batch_counter, model001.batch]

    path = model.save(folder + "/pool.npz")
    with strategy.scope():
        restored = DQN(state_dim=4, hidden_size=128, action_dim=2, processes=2)
        optimizer = tf.keras.optimizers.Adam()
        restored.restore(path, optimizer)
    same = all(np.array_equal(a, b) for a, b in zip(restored.q_net.get_weights(), model.q_net.get_weights()))
    restored.distributed_training(optimizer=optimizer, strategy=strategy, episodes=2, pool_network=True, processes=2,
                                  p=0)
    out["restored"] = [same, restored.total_episode, restored.batch_counter > model.batch_counter]
    out["shims"] = shim_classes()
    return out


def shim_classes() -> dict:
    """``note_rl.examples.keras``'s module path -> the built-in class it names."""
    import importlib

    names = {"DQN": "DQN", "PPO": "PPO", "DDPG_HER": "DDPG", "MADDPG": "DDPG", "pool_network.DQN": "DQN",
             "pool_network.DDPG_HER": "DDPG", "pool_network.DQN_pr": "DQN"}
    out = {}
    for module, name in names.items():
        cls = getattr(importlib.import_module(f"note_rl.examples.keras.{module}"), name)
        builtin = next(c for c in cls.__mro__ if c.__module__.startswith("note_rl.agents."))
        out[module] = [builtin.__module__ + "." + builtin.__name__, cls is builtin]
    return out


def main() -> None:
    if sys.argv[2:] == ["gpu"]:  # the seed examples alone, in the seed's MirroredStrategy() (every GPU)
        json.dump({"seed_examples": seed_examples(sys.argv[1])}, sys.stdout)
        return
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
        out["seed_examples"] = seed_examples(sys.argv[1], mirrored)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
