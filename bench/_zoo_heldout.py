"""Run by rl-zoo3's own Python (bench_tuning.py): retrain the best config of an rl-zoo3 study on one
held-out seed and print the mean of deterministic evaluation episodes as JSON.

    <zoo python> bench/_zoo_heldout.py --journal J --study S --algo ppo --steps N --seed s
        --episodes 20 --eval-seed E [--env Pendulum-v1] [--best]

The model is built the way rl-zoo3's ``objective`` builds a trial's model: the env's entry of
rl-zoo3's ``hyperparams/<algo>.yml`` updated with the trial's sampled hyperparameters (rl-zoo3's own
sampler, replayed with ``optuna.trial.FixedTrial``); evaluation episode k is reset with seed E + k.
``--best`` scores the weights of the run's best evaluation instead of its final ones: SB3's
``EvalCallback`` (5 evaluations of 5 deterministic episodes on an env of its own, seeded 1,000,000 as
the project's) keeps ``best_model.zip``, rl-zoo3's ``--load-best``.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import optuna
import torch
import yaml


def _defaults(algo: str, env_id: str) -> dict:
    import rl_zoo3

    with open(os.path.join(os.path.dirname(rl_zoo3.__file__), "hyperparams", f"{algo}.yml")) as f:
        return dict(yaml.safe_load(f)[env_id])


def main() -> None:
    p = argparse.ArgumentParser()
    for name in ("--journal", "--study", "--algo", "--env"):
        p.add_argument(name, default="CartPole-v1" if name == "--env" else None)
    for name in ("--steps", "--seed", "--episodes", "--eval-seed"):
        p.add_argument(name, type=int)
    p.add_argument("--best", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(1)
    from optuna.storages.journal import JournalFileBackend, JournalStorage
    from rl_zoo3.hyperparams_opt import HYPERPARAMS_SAMPLER
    from stable_baselines3 import DQN, PPO, SAC, TD3
    from stable_baselines3.common.env_util import make_vec_env

    study = optuna.load_study(study_name=a.study, storage=JournalStorage(JournalFileBackend(a.journal)))
    best = study.best_trial
    kwargs = _defaults(a.algo, a.env)
    n_envs = int(kwargs.pop("n_envs", 1))
    for key in ("n_timesteps", "policy", "normalize"):
        kwargs.pop(key, None)
    if isinstance(kwargs.get("policy_kwargs"), str):
        kwargs["policy_kwargs"] = eval(kwargs["policy_kwargs"])  # rl-zoo3 stores it as Python text
    import gymnasium as gym

    space = gym.make(a.env).action_space
    n_actions = int(space.n) if isinstance(space, gym.spaces.Discrete) else int(np.prod(space.shape))
    kwargs.update(HYPERPARAMS_SAMPLER[a.algo](optuna.trial.FixedTrial(best.params), n_actions, n_envs,
                                              {"using_her_replay_buffer": False, "her_kwargs": {}}))
    algo = {"ppo": PPO, "dqn": DQN, "sac": SAC, "td3": TD3}[a.algo]
    model = algo("MlpPolicy", make_vec_env(a.env, n_envs=n_envs, seed=a.seed), seed=a.seed, device="cpu", **kwargs)
    if a.best:
        import tempfile

        from stable_baselines3.common.callbacks import EvalCallback

        folder = tempfile.mkdtemp(prefix="zoo_best_")
        callback = EvalCallback(make_vec_env(a.env, n_envs=1, seed=1_000_000), n_eval_episodes=5,
                                eval_freq=max(1, a.steps // 5 // n_envs), best_model_save_path=folder,
                                deterministic=True, verbose=0)
        model.learn(a.steps, callback=callback)
        model = algo.load(os.path.join(folder, "best_model.zip"), device="cpu")
    else:
        model.learn(a.steps)
    env, returns = gym.make(a.env), []
    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    for k in range(a.episodes):
        obs, _ = env.reset(seed=a.eval_seed + k)
        total, done = 0.0, False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(int(action) if discrete else action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    print(json.dumps({"trial": best.number, "value": best.value, "params": best.params,
                      "mean": float(np.mean(returns)), "returns": returns}))


if __name__ == "__main__":
    main()
