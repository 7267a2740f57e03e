"""The bounds of config values (choices, positive, unit interval, non-negative, at most): one rule
for a config value (:func:`tuner.config.schema.validate`) and for each end of a search range over that key
(:func:`tuner.config.search.parse_space`)."""

from __future__ import annotations

from typing import Any

from note_rl.backends import backend_names
from note_rl.core.set_args import SEED_LIMIT  # the training core's seed rule (Keras: < 2**32)

__all__ = ["LOGGER_KINDS", "CHOICES", "POSITIVE", "UNIT", "NON_NEGATIVE", "MAX_THREADS", "AT_MOST", "bound_violation"]

#: the loggers ``logger.kinds`` may switch on (``logger=[wandb,csv]`` selects several)
LOGGER_KINDS = ("console", "wandb", "csv", "tensorboard")

CHOICES = {
    "backend.name": tuple(backend_names()),
    "agent.activation": ("relu", "tanh"),
    "agent.loss": ("mse", "huber"),
    "strategy.name": ("single", "pool_network", "ddp", "mirrored", "multi_worker", "parameter_server"),
    "strategy.start_method": ("spawn", "forkserver"),
    "logger.name": ("none", *LOGGER_KINDS),
    "logger.mode": ("offline", "online", "disabled"),
    "objective.source": ("eval", "train"),
    "eval.answer": ("final", "best"),
}
POSITIVE = ("eval.every", "eval.episodes", "agent.batch", "agent.train_freq", "agent.num_updates", "agent.update_steps", "agent.update_batches",
            "agent.num_steps", "agent.n_steps", "agent.n_envs", "agent.n_epochs", "buffer.pool_size",
            "strategy.processes", "strategy.replicas", "strategy.logical_cpus", "strategy.num_store", "strategy.processes_pr", "strategy.processes_her", "budget.steps", "budget.episodes",
            "budget.max_updates", "objective.last_k", "optimizer.lr", "agent.lr", "agent.clip",
            "logger.log_every", "logger.gif_max_steps", "logger.init_timeout", "agent.policy_delay",
            "agent.n_critics", "agent.target_update_interval", "backend.threads", "agent.n_critic_updates",
            "agent.target_kl", "agent.cg_max_steps", "agent.line_search_max_iter")
UNIT = {"agent.gamma": (0.0, 1.0, False), "agent.tau": (0.0, 1.0, False),
        "agent.lam": (0.0, 1.0, True), "buffer.lambda_": (0.0, 1.0, True),
        "agent.line_search_shrinking_factor": (0.0, 1.0, False),
        "optimizer.beta1": (0.0, 1.0, True), "optimizer.beta2": (0.0, 1.0, True),
        "agent.policy.initial_eps": (0.0, 1.0, True), "agent.policy.final_eps": (0.0, 1.0, True),
        "agent.policy.eps": (0.0, 1.0, True)}
NON_NEGATIVE = ("seed", "eval.seed", "eval.test_episodes", "eval.test_seed", "agent.learning_starts", "buffer.her_k", "agent.entropy_coef", "agent.vf_coef", "buffer.alpha",
                "buffer.beta", "optimizer.weight_decay", "optimizer.eps", "optimizer.momentum",
                "agent.max_grad_norm", "agent.target_policy_noise", "agent.target_noise_clip",
                "agent.noise.sigma", "agent.noise.theta", "agent.cg_damping")
#: ``backend.threads`` beyond this is refused: a framework asked for 100,000 threads segfaults while
#: it starts them.  A fixed cap, not one read off this machine, so that a config (or a study's
#: space) valid on one machine is valid on every other; 1024 is far above any useful intra-op count
MAX_THREADS = 1024
AT_MOST = {"seed": SEED_LIMIT - 1, "eval.seed": SEED_LIMIT - 1, "eval.test_seed": SEED_LIMIT - 1,
           "backend.threads": MAX_THREADS}



def bound_violation(key: str, value: Any) -> str | None:
    """Why ``value`` breaks ``key``'s bound in the tables above (``"must be > 0, got 0"``), or
    ``None`` when it keeps it or ``key`` has none.  The one rule for a config value and for each
    end of a search range over that key (:func:`tuner.config.search.parse_space`)."""
    if key in CHOICES:  # checked before the None test: null is not an option either
        return None if value in CHOICES[key] else f"{value!r} is not one of {', '.join(CHOICES[key])}"
    numeric = key in POSITIVE or key in UNIT or key in NON_NEGATIVE or key in AT_MOST
    if value is None or not numeric:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be a number, got {value!r}"
    if key in POSITIVE and value <= 0:
        return f"must be > 0, got {value}"
    if key in UNIT:
        low, high, closed_low = UNIT[key]
        if not ((low <= value if closed_low else low < value) and value <= high):
            return f"must be in {'[' if closed_low else '('}{low}, {high}], got {value}"
    if key in NON_NEGATIVE and value < 0:
        return f"must be >= 0, got {value}"
    if key in AT_MOST and value > AT_MOST[key]:
        return f"must be <= {AT_MOST[key]}, got {value}"
    return None
