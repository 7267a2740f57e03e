"""Build the training objects a validated config describes (agent, optimizer, train arguments).

Works on plain dicts, so trial processes never need Hydra: the driver sends each child its fully
resolved config.
"""

from __future__ import annotations

import importlib
from typing import Any

from note_rl.backends import backend_info, get_backend

__all__ = ["build_agent", "build_optimizer", "train_kwargs", "logger_callbacks", "make_env", "set_threads"]


def set_threads(cfg: dict[str, Any]) -> None:
    """Apply ``backend.threads`` before the framework starts its thread pools (the config's value
    beats a study's default)."""
    threads = cfg["backend"].get("threads")
    if threads:
        get_backend(cfg["backend"]["name"]).set_threads(int(threads))


def make_env(env_cfg: dict[str, Any]) -> Any:
    import gymnasium as gym

    if env_cfg.get("module"):
        importlib.import_module(env_cfg["module"])
    return gym.make(env_cfg["id"], **(env_cfg.get("kwargs") or {}))


def _agents_module(backend: str) -> Any:
    return importlib.import_module(backend_info(backend).agents)


def build_agent(cfg: dict[str, Any]) -> Any:
    """The built-in agent of ``cfg['agent']`` on ``cfg['backend']``, configured with ``set()``."""
    import gymnasium as gym

    from note_rl.policy import LinearEpsGreedyPolicy, SoftmaxPolicy

    a, buf, seed = cfg["agent"], cfg["buffer"], int(cfg["seed"])
    env = make_env(cfg["env"])
    if not isinstance(env.action_space, gym.spaces.Discrete):
        raise ValueError(f"env.id: {cfg['env']['id']} has a continuous action space; dqn/ppo need discrete actions")
    state_dim = int(env.observation_space.shape[0])
    action_dim = int(env.action_space.n)
    mod = _agents_module(cfg["backend"]["name"])
    common = dict(env=env, seed=seed, activation=a["activation"], ortho_init=a["ortho_init"],
                  device=cfg["backend"]["device"])
    if a["name"] == "dqn":
        agent = mod.DQN(state_dim, list(a["hidden_size"]), action_dim, gamma=a["gamma"], tau=a["tau"],
                        loss=a["loss"], double=a["double"], **common)
        agent.max_grad_norm = a["max_grad_norm"]
        steps = cfg["budget"]["steps"] or 10_000
        ex = a["exploration"]
        policy = LinearEpsGreedyPolicy(ex["initial_eps"], ex["final_eps"], max(1, int(ex["fraction"] * steps)))
    else:
        agent = mod.PPO(state_dim, list(a["hidden_size"]), action_dim, clip=a["clip"],
                        entropy_coef=a["entropy_coef"], gamma=a["gamma"], lam=a["lam"],
                        n_steps=a["n_steps"], n_envs=a["n_envs"], n_epochs=a["n_epochs"],
                        vf_coef=a["vf_coef"], normalize_advantage=a["normalize_advantage"],
                        max_grad_norm=a["max_grad_norm"], linear_decay=a["linear_decay"], **common)
        policy = SoftmaxPolicy()
    agent.set(policy=policy, pool_size=buf["pool_size"], batch=a["batch"], train_freq=a["train_freq"],
              num_updates=a["num_updates"], update_steps=a["update_steps"],
              learning_starts=a["learning_starts"], num_steps=a["num_steps"],
              PR=buf["name"] == "prioritized", alpha=buf["alpha"], lambda_=buf["lambda_"],
              beta=buf["beta"], initial_TD=buf["initial_TD"], initial_ratio=buf["initial_ratio"],
              trial_count=cfg["objective"]["last_k"], criterion=cfg["objective"]["criterion"], seed=seed)
    return agent


def build_optimizer(cfg: dict[str, Any], agent: Any) -> Any:
    """One optimizer over all of the agent's parameters, built by the agent's backend."""
    from note_rl.optim import SPECS

    o = cfg["optimizer"]
    lr = o["lr"] if o["lr"] is not None else cfg["agent"]["lr"]
    fields = {k: v for k, v in o.items() if k not in ("name", "lr") and k in SPECS[o["name"]].__dataclass_fields__}
    spec = SPECS[o["name"]](lr=lr, **fields)
    return agent.backend.build_optimizer(spec, agent.backend.flatten(agent.param))


def train_kwargs(cfg: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments of ``agent.train`` (besides optimizer, episodes and callbacks)."""
    s, logger = cfg["strategy"], cfg["logger"]
    pool = s["name"] == "pool_network"
    return dict(pool_network=pool, processes=s["processes"] if pool else None, num_store=s["num_store"],
                parallel_store_and_training=s["parallel_store_and_training"],
                start_method=s["start_method"], jit_compile=cfg["backend"]["jit_compile"],
                steps=cfg["budget"]["steps"], p=logger.get("p", 0) if logger["name"] != "none" else 0)


def logger_callbacks(cfg: dict[str, Any], run_dir: str | None, meta: dict[str, Any] | None = None,
                     pruned: Any = None) -> list[Any]:
    """Callbacks of ``cfg['logger']``: a :class:`tuner.wandb_logger.WandbCallback` for ``wandb`` (wandb
    is imported only then; ``meta`` names the run); ``console`` / ``none`` print through ``p`` only."""
    if cfg["logger"]["name"] != "wandb":
        return []
    from .wandb_logger import WandbCallback

    return [WandbCallback(cfg, run_dir, meta, pruned=pruned)]
