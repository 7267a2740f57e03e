"""Body of a pool-network worker process (imports numpy and gymnasium only).

A worker owns one env copy and answers commands on its pipe:

* ``("episodes", {...})`` - actor mode: run ``num_store`` episodes with the numpy actor and the
  worker's own copy of the exploration policy/noise; reply with the stacked transitions and returns.
* ``("rollout", {...})`` - on-policy mode: ``n_steps`` steps of the worker's vectorised envs;
  reply with ``(n_steps, n_envs)`` arrays for GAE in the training process.
* ``("reset", None)`` / ``("step", action)`` - env mode (agents without a numpy actor): step the
  env on request; the training process does the acting.
* ``("close", None)`` - exit.

Any exception is sent back as ``("error", traceback)`` so the training process can raise it.
"""

from __future__ import annotations

import signal
import traceback
from typing import Any

import numpy as np

from ..utils import log_softmax
from .envs import make_vec_env
from .runners import EpisodeRunner, RolloutRunner, StateDependentNoise, explore_action, sample_rollout_actions

__all__ = ["worker_main"]


class _Worker:
    def __init__(self, init: dict[str, Any]) -> None:
        self.init = init
        self.seed = init["seed"]
        self.policy = init.get("policy")
        self.noise = init.get("noise")
        for i, obj in enumerate((self.policy, self.noise)):
            if obj is not None and self.seed is not None and callable(getattr(obj, "seed", None)):
                obj.seed(self.seed + i)
        self.actor = init.get("actor")
        self.critic = init.get("critic")
        self.rng = np.random.default_rng(self.seed)
        self.env = None if init.get("n_envs") else init["env_factory"]()
        self.discrete = bool(init.get("discrete", True))
        self.log_std = init.get("log_std")  # a Gaussian rollout policy's (continuous PPO / A2C)
        self.sde_every = init.get("sde_every")  # gSDE's steps between two exploration matrices (None: no gSDE)
        self.sde: StateDependentNoise | None = None
        self.episodes: EpisodeRunner | None = None
        self.rollouts: RolloutRunner | None = None

    def _update(self, payload: dict[str, Any]) -> None:
        if payload.get("actor") is not None:
            self.actor.set_weights(payload["actor"])
        if payload.get("critic") is not None:
            self.critic.set_weights(payload["critic"])
        if payload.get("log_std") is not None:
            self.log_std = payload["log_std"]
        for key, value in (payload.get("explore") or {}).items():
            setattr(self.policy, key, value)

    def _act(self, state: np.ndarray, step_counter: int) -> Any:
        output = self.actor(np.asarray(state, dtype=np.float32)[None])[0]
        return explore_action(output, self.policy, self.noise, step_counter, self.discrete)

    def episodes_cmd(self, payload: dict[str, Any]) -> dict[str, Any]:
        self._update(payload)
        if self.episodes is None:
            self.episodes = EpisodeRunner(self.env, self._act, self.init.get("num_steps"),
                                          self.init.get("gamma", 1.0), self.seed, self.noise)
        chunks, returns, steps = [], [], 0
        for _ in range(payload["num_store"]):
            data, ret, n = self.episodes.run(payload["step_counter"] + steps)
            chunks.append(data)
            returns.append(ret)
            steps += n
        data = {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}
        return {"data": data, "returns": returns, "steps": steps}

    def _rollout_act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        output = self.actor(obs)
        if self.sde is not None:  # gSDE: the rollout's held matrices, output [mean, z]
            actions, logp = self.sde.sample(output)
            return actions, logp, self._values(obs)
        if self.log_std is None and self.actor.output == "linear":
            output = np.exp(log_softmax(output))  # logits -> probabilities
        actions, logp = sample_rollout_actions(output, self.rng, self.log_std, self.policy)
        return actions, logp, self._values(obs)

    def _values(self, obs: np.ndarray) -> np.ndarray:
        return self.critic(obs)[:, 0].astype(np.float32)

    def rollout_cmd(self, payload: dict[str, Any]) -> dict[str, Any]:
        self._update(payload)
        if self.rollouts is None:
            vec = make_vec_env(self.init["env_factory"], self.init["n_envs"])
            self.rollouts = RolloutRunner(vec, self._rollout_act, self._values, seed=self.seed,
                                          bounds=self.init.get("action_bounds"))
        if self.sde_every is not None:  # new matrices from the current log std, as the trainer's own rollouts
            self.sde = StateDependentNoise(self.log_std, self.init["n_envs"], self.rng, self.sde_every)
        fields, finished = self.rollouts.collect(payload["n_steps"])
        return {"fields": fields, "returns": finished}

    def reset_cmd(self) -> np.ndarray:
        state, _ = self.env.reset(seed=self.seed)
        self.seed = None
        return np.asarray(state)

    def step_cmd(self, action: Any) -> tuple[Any, float, bool, bool]:
        next_state, reward, terminated, truncated, _ = self.env.step(action)
        return np.asarray(next_state), float(reward), bool(terminated), bool(truncated)


def worker_main(conn: Any, init: dict[str, Any]) -> None:
    """Process entry point: build the worker, then serve commands until ``close``."""
    # a terminal's Ctrl-C reaches the whole process group: the parent decides (it stops training and
    # closes the pool), a worker that died of it mid-episode would only add a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # the pool started us with SIGINT blocked (see pool._sigint_blocked)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        worker = _Worker(init)
    except Exception:  # noqa: BLE001 - reported to the parent, which raises
        conn.send(("error", traceback.format_exc()))
        return
    conn.send(("ready", None))
    handlers = {"episodes": worker.episodes_cmd, "rollout": worker.rollout_cmd,
                "reset": lambda _: worker.reset_cmd(), "step": worker.step_cmd}
    while True:
        try:
            cmd, payload = conn.recv()
        except EOFError:
            return
        if cmd == "close":
            return
        try:
            conn.send(("ok", handlers[cmd](payload)))
        except Exception:  # noqa: BLE001 - reported to the parent, which raises
            conn.send(("error", traceback.format_exc()))
