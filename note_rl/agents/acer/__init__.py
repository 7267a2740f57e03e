"""ACER (Wang et al. 2016, "Sample Efficient Actor-Critic with Experience Replay",
https://arxiv.org/abs/1611.01224), discrete and Box actions, framework-free: the constructor, the replay of
rollout segments and its collector, and the whole update's arithmetic in numpy (Retrace targets,
truncated importance weights with bias correction, the efficient trust region).  ``torch.py`` and
``keras.py`` hold the network and the one differentiable function the update steps on.

One network with a shared trunk and two heads (one ``Dense(2 * A)`` output: the first ``A`` units
are the policy's logits, the last ``A`` the action values ``Q(s, .)``), ``V(s) = sum_a f(a|s) Q(s, a)``,
and an average policy network ``theta_a`` that follows the network by Polyak averaging.

Algorithm 1 (the master loop) and Algorithm 2 (one update), as this module runs them::

    every unit: collect a segment of n_steps x n_envs steps with mu = f(.|s; theta) (its full
    probabilities are stored), add it to the replay (buffer_size transitions, oldest dropped),
    run ACER on it (on-policy), then, once the replay holds replay_start transitions, run ACER
    n ~ Poisson(replay_ratio) times more on n_envs sequences of n_steps drawn from the replay.

    ACER on sequences x_0..x_{k-1} of one batch (numpy, from the current weights):
        f, Q = net(x);  V = sum_a f Q;  f_a = softmax(avg_net(x))             # Alg. 2 l. 6-9
        rho = f / mu                                                          # importance weights
        Q_ret = r_i + gamma * Q_ret, from Q_ret = V(x_k) (0 if terminal)      # Retrace, eq. 5 / l. 11-13
           (at an episode's end inside the sequence Q_ret restarts from V of its last state, 0 if terminal)
        then Q_ret <- min(1, rho_i) (Q_ret - Q(x_i, a_i)) + V(x_i)           # l. 19, the truncated trace
        g   = d/df of [ min(c, rho_i) log f(a_i) (Q_ret - V)                  # eq. 9 / l. 14: truncated IS
                        + sum_a [1 - c / rho(a)]_+ f(a) log f(a) (Q(a) - V)   # bias correction
                        + ent_coef * H(f) ]                                   # entropy bonus
        k   = d/df KL(f_a || f) = -f_a / f                                    # l. 15
        z*  = g - max(0, (k.g - delta) / |k|^2) k                             # eq. 13: the trust region
    the backend then steps theta on (one optimizer, gradient clipped to max_grad_norm)
        L(theta) = -mean_i z*_i . f(x_i; theta) + q_coef * mean 0.5 (Q_ret - Q(x_i, a_i; theta))^2
    whose gradient is the chain rule of l. 16-18 (z* is a constant of the batch), and after the
    step theta_a <- alpha theta_a + (1 - alpha) theta                         # l. 20

``f`` is the probability vector (phi in the paper), as in OpenAI baselines' and xagents' ACER, whose
defaults these are: 20-step segments, replay ratio 4, c = 10, delta = 1, alpha = 0.99, q_coef 0.5,
ent_coef 0.01, gradient norm 10, RMSprop(lr=7e-4, rho=0.99, eps=1e-5); eps = 1e-6 guards every
division and logarithm as baselines does.

Box actions (Algorithm 3, :func:`acer_sdn_targets`): phi is the mean of a Gaussian of fixed std
(``action_std`` x the bounds' half-range; no entropy term), the critic a stochastic dueling network,
``Q~(x, a) = V(x) + A(x, a) - mean_j A(x, u_j)`` with ``u_j ~ f`` (``sdn_samples``), from separate
policy, V and A MLPs.  The policy gradient uses ``Q_opc`` (Retrace with traces 1) and one sample
``a' ~ f`` for the bias correction; ``Q_ret``'s trace is ``min(1, rho^(1/d))``; ``k`` is
``(mean - mean_a) / std^2``; V is also pulled by ``min(1, rho_i) (Q_ret - Q~(x_i, a_i))``.
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from ...core.collect import Collector
from ...core.envs import EnvFactory, make_vec_env
from ...core.runners import sample_rollout_actions
from ...update import LossTerm, ParamGroup, TargetUpdate, UpdateSpec
from ...utils import log_softmax, scalar
from ..common import (LinearDecay, LiveActor, MLPActor, SeededInit, check_args, check_env_dims, hidden_sizes,
                      init_mlp, make_env)

__all__ = ["ACERMixin", "ACERCollector", "SegmentReplay", "retrace", "acer_targets", "EPS"]

#: guards divisions and logarithms (baselines' eps)
EPS = 1e-6


# -- the update's arithmetic (numpy) -------------------------------------------------------------
def retrace(r: np.ndarray, q_a: np.ndarray, v: np.ndarray, rho_a: np.ndarray, v_next: np.ndarray,
            terminated: np.ndarray, episode_end: np.ndarray, gamma: float) -> np.ndarray:
    """Retrace targets ``Q_ret`` (eq. 5 with lambda = 1; Algorithm 2 lines 11-13 and 19) for arrays of
    shape ``(T, n)``: ``r`` rewards, ``q_a`` = Q(x_i, a_i), ``v`` = V(x_i), ``rho_a`` = f(a_i|x_i) /
    mu(a_i|x_i), ``v_next`` = V of the state reached after each step (the last state of an episode
    where one ended), ``terminated`` (no bootstrap) and ``episode_end`` (terminated or truncated:
    the recursion restarts there)."""
    q_ret = np.zeros_like(np.asarray(r, np.float64))
    carry = np.zeros(q_ret.shape[1:])
    for t in range(len(q_ret) - 1, -1, -1):
        boot = (1.0 - terminated[t]) * v_next[t]  # V(x_k), 0 at a terminal state
        following = boot if t == len(q_ret) - 1 else np.where(episode_end[t], boot, carry)
        q_ret[t] = r[t] + gamma * following
        carry = np.minimum(1.0, rho_a[t]) * (q_ret[t] - q_a[t]) + v[t]  # the truncated trace c_i
    return q_ret


def acer_targets(logits: np.ndarray, q: np.ndarray, avg_logits: np.ndarray, mu: np.ndarray, a: np.ndarray,
                 r: np.ndarray, v_next: np.ndarray, terminated: np.ndarray, episode_end: np.ndarray,
                 gamma: float, c: float, delta: float, ent_coef: float, q_coef: float,
                 trust_region: bool = True) -> dict[str, np.ndarray | float]:
    """Everything of one ACER update that is a constant of the batch (Algorithm 2 with the network
    outputs given): inputs ``(T, n, ...)``, outputs flattened to ``T * n`` rows in time-major order.

    Returns ``grad_f`` (dL/df, the trust-region-adjusted policy gradient with respect to the
    probabilities, already divided by the batch size and negated: the loss is ``sum(grad_f * f)``),
    ``q_ret``, ``offset`` (per row; ``sum(offset)`` makes that loss's value the true policy loss),
    and scalars for logging: ``loss_policy``, ``loss_q``, ``entropy``, ``adj`` (mean trust-region
    coefficient), ``rho`` (mean importance weight of the actions taken)."""
    T, n = logits.shape[:2]
    N = T * n

    def flat(x: np.ndarray) -> np.ndarray:  # (T, n, ...) -> (T * n, ...), time-major
        return np.asarray(x, np.float64).reshape(N, *np.shape(x)[2:])

    logp, qf, a = log_softmax(flat(logits)), flat(q), flat(a).astype(np.int64)
    f, f_avg, mu = np.exp(logp), np.exp(log_softmax(flat(avg_logits))), flat(mu)
    rows = np.arange(N)
    v = (f * qf).sum(1)                                   # V(x) = sum_a f(a|x) Q(x, a)
    q_a, f_a = qf[rows, a], f[rows, a]
    rho = f / (mu + EPS)                                  # rho(a) = f(a|x) / mu(a|x)
    rho_a = rho[rows, a]
    q_ret = retrace(r, q_a.reshape(T, n), v.reshape(T, n), rho_a.reshape(T, n), v_next, terminated,
                    episode_end, gamma).reshape(N)
    # eq. 9 as a gain to ascend; each term's gradient with respect to f, times N (the sum over rows)
    adv = q_ret - v                                       # Q_ret - V
    w_trunc = np.minimum(c, rho_a)                        # min(c, rho_i): truncated importance weight
    adv_bc = qf - v[:, None]                              # Q(x, a) - V(x) for every action
    w_bc = np.maximum(0.0, 1.0 - c / (rho + EPS))         # [1 - c / rho(a)]_+: the bias correction's weight
    entropy = -(f * np.log(f + EPS)).sum(1)
    gain = np.log(f_a + EPS) * adv * w_trunc + (np.log(f + EPS) * adv_bc * w_bc * f).sum(1) + ent_coef * entropy
    g = (adv_bc * w_bc * f) / (f + EPS)                   # d gain_bc / df (f held in the weight)
    g[rows, a] += adv * w_trunc / (f_a + EPS)             # d gain_trunc / df(a_i)
    g -= ent_coef * (np.log(f + EPS) + f / (f + EPS))     # d H / df
    adj = np.zeros(N)
    if trust_region:
        k = -f_avg / (f + EPS)                            # d KL(f_avg || f) / df
        adj = np.maximum(0.0, ((k * g).sum(1) - delta) / ((k * k).sum(1) + EPS))
        g = g - adj[:, None] * k                          # eq. 13: z* = g - max(0, (k.g - delta)/|k|^2) k
    grad_f = -g / N                                       # the loss descends: minus the mean gain
    loss_policy = -gain.mean()
    offset = (loss_policy / N - (grad_f * f).sum(1))      # sum(grad_f * f) + sum(offset) = loss_policy
    loss_q = 0.5 * np.mean((q_ret - q_a) ** 2)
    return {"grad_f": grad_f.astype(np.float32), "q_ret": q_ret.astype(np.float32),
            "offset": offset.astype(np.float32), "loss_policy": float(loss_policy),
            "loss_q": float(loss_q), "loss": float(loss_policy + q_coef * loss_q),
            "entropy": float(entropy.mean()), "adj": float(adj.mean()), "rho": float(rho_a.mean())}


def acer_sdn_targets(mean: np.ndarray, mean_avg: np.ndarray, mu_mean: np.ndarray, std: np.ndarray, a: np.ndarray,
                     a_prime: np.ndarray, v: np.ndarray, adv: np.ndarray, r: np.ndarray, v_next: np.ndarray,
                     terminated: np.ndarray, episode_end: np.ndarray, gamma: float, c: float, delta: float,
                     q_coef: float, trust_region: bool = True) -> dict[str, np.ndarray | float]:
    """Box actions (Algorithm 3: a Gaussian policy of fixed ``std`` whose mean is phi, and the stochastic
    dueling network): the constants of one update from ``(T, n, ...)`` outputs.  ``adv`` holds
    ``A(x, .)`` of ``[a_i, a'_i, u_1 .. u_k]`` (``(T, n, 2 + k)``; ``a'``, ``u`` drawn from f), so
    ``Q~(x, a) = V(x) + A(x, a) - mean_j A(x, u_j)``.  Returns ``grad_mean`` (dL/dmean, as ``grad_f``),
    ``q_ret``, ``v_coef`` (``min(1, rho_i) (Q_ret - Q~_i)``, V's extra target) and ``offset``."""
    T, n, d = mean.shape
    N = T * n

    def flat(x: np.ndarray) -> np.ndarray:
        return np.asarray(x, np.float64).reshape(N, *np.shape(x)[2:])

    mean, mean_avg, mu_mean, a, a_prime, v, adv = map(flat, (mean, mean_avg, mu_mean, a, a_prime, v, adv))
    var = np.asarray(std, np.float64) ** 2

    def log_f(x: np.ndarray, m: np.ndarray) -> np.ndarray:  # log N(x; m, std), constants cancel in ratios
        return (-0.5 * (x - m) ** 2 / var).sum(-1)

    rho = np.exp(log_f(a, mean) - log_f(a, mu_mean))               # f(a_i) / mu(a_i)
    rho_p = np.exp(log_f(a_prime, mean) - log_f(a_prime, mu_mean))  # f(a'_i) / mu(a'_i)
    baseline = adv[:, 2:].mean(1)
    q_a, q_ap = v + adv[:, 0] - baseline, v + adv[:, 1] - baseline  # Q~(x, a_i), Q~(x, a'_i)
    shape = (T, n)
    args = (np.asarray(r), q_a.reshape(shape), v.reshape(shape))
    # Q_ret's trace min(1, rho^(1/d)); Q_opc is Retrace with every trace 1 (Algorithm 3)
    q_ret = retrace(*args, (rho ** (1.0 / d)).reshape(shape), v_next, terminated, episode_end, gamma).reshape(N)
    q_opc = retrace(*args, np.ones(shape), v_next, terminated, episode_end, gamma).reshape(N)
    w_trunc = np.minimum(c, rho) * (q_opc - v)                      # truncated importance term's weight
    w_bc = np.maximum(0.0, 1.0 - c / (rho_p + EPS)) * (q_ap - v)   # bias correction, one sample a'
    g = (w_trunc[:, None] * (a - mean) + w_bc[:, None] * (a_prime - mean)) / var  # d/dmean of the log f's
    adj = np.zeros(N)
    if trust_region:
        k = (mean - mean_avg) / var                                # d KL(f_avg || f) / dmean
        adj = np.maximum(0.0, ((k * g).sum(1) - delta) / ((k * k).sum(1) + EPS))
        g = g - adj[:, None] * k
    grad_mean = -g / N
    loss_policy = -(w_trunc * log_f(a, mean) + w_bc * log_f(a_prime, mean)).mean()
    v_coef = np.minimum(1.0, rho) * (q_ret - q_a)
    loss_q = 0.5 * np.mean((q_ret - q_a) ** 2)
    # the loss's value: the policy and Q losses (V's extra term, -v_coef * V, is offset to 0)
    offset = loss_policy / N - (grad_mean * mean).sum(1) + q_coef * v_coef * v / N
    return {"grad_mean": grad_mean.astype(np.float32), "q_ret": q_ret.astype(np.float32),
            "v_coef": v_coef.astype(np.float32), "offset": offset.astype(np.float32),
            "loss_policy": float(loss_policy), "loss_q": float(loss_q), "loss": float(loss_policy + q_coef * loss_q),
            "adj": float(adj.mean()), "rho": float(rho.mean())}


# -- the replay of segments ----------------------------------------------------------------------
SEGMENT_FIELDS = ("state", "action", "reward", "mu", "next_state", "terminated", "episode_end")


class SegmentReplay:
    """A ring of rollout segments (each field ``(n_steps, n_envs, ...)``), at most ``capacity``
    segments; :meth:`sample` draws ``k`` sequences, each one env's column of a random segment (as
    baselines draws one per env)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, int(capacity))
        self.segments: list[dict[str, np.ndarray]] = []
        self.next = 0

    def __len__(self) -> int:
        """Transitions held."""
        return sum(s["reward"].size for s in self.segments)

    def add(self, segment: dict[str, np.ndarray]) -> None:
        if len(self.segments) < self.capacity:
            self.segments.append(segment)
        else:
            self.segments[self.next] = segment
        self.next = (self.next + 1) % self.capacity

    def sample(self, k: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """``k`` sequences stacked on the env axis: fields ``(n_steps, k, ...)``."""
        picks = [(int(rng.integers(len(self.segments))), int(rng.integers(self.segments[0]["reward"].shape[1])))
                 for _ in range(k)]
        return {f: np.stack([self.segments[i][f][:, j] for i, j in picks], axis=1) for f in SEGMENT_FIELDS}


class ACERCollector(Collector):
    """ACER's master loop (Algorithm 1): a segment of ``n_steps`` x ``n_envs`` vectorised steps, an
    on-policy update on it, then ``Poisson(replay_ratio)`` updates on replayed sequences."""

    on_policy = True  # its own replay of segments: no replay pool_size / batch to check
    uses_replay = False

    @classmethod
    def check(cls, agent: Any, settings: Any) -> None:
        super().check(agent, settings)
        name = type(agent).__name__
        if settings.pool_network:
            raise ValueError(f"train(): {name} collects in the training process (pool_network=True is not supported)")
        if getattr(agent, "normalizer", None) is not None:
            raise ValueError(f"{name}: set(normalize=...) is not supported (replayed segments would keep "
                             "observations normalised by old statistics)")
        if agent.policy is not None:
            raise ValueError(f"{name} samples actions from its own policy (mu is stored for the importance "
                             f"weights); set(policy=...) is not supported")

    def __init__(self, agent: Any, learner: Any, run: Any, settings: Any = None) -> None:
        self.agent, self.learner, self.run = agent, learner, run
        env = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
        self.vec = make_vec_env(EnvFactory(env), agent.n_envs)
        self.obs, _ = self.vec.reset(seed=agent.copies_seed())
        self.returns = np.zeros(agent.n_envs)
        self.rng = np.random.default_rng(None if agent.seed is None else agent.seed + 11)
        if agent.replay is None:  # kept on the agent: a second train() call goes on replaying it
            agent.replay = SegmentReplay(agent.buffer_size // (agent.n_steps * agent.n_envs))

    def collect(self) -> tuple[dict[str, np.ndarray], list[float]]:
        """``n_steps`` steps acting with ``mu = f(.|x; theta)``, its probabilities stored."""
        agent, steps, finished = self.agent, [], []
        for _ in range(agent.n_steps):
            mu = agent.act_output(self.obs).astype(np.float32)  # probabilities, or the Gaussian's mean
            actions, _ = sample_rollout_actions(mu, self.rng, agent.log_std if agent.continuous else None)
            played = np.clip(actions, *agent.action_bounds) if agent.continuous else actions
            next_obs, rewards, terminated, truncated, info = self.vec.step(played)
            ended = terminated | truncated
            reached = np.array(next_obs, np.float32)
            for i in np.flatnonzero(ended):  # the episode's last state, not the reset one
                reached[i] = info["final_obs"][i]
            steps.append({"state": np.asarray(self.obs, np.float32), "action": actions, "reward": rewards,
                          "mu": mu, "next_state": reached, "terminated": terminated, "episode_end": ended})
            self.obs = next_obs
            self.returns += rewards
            finished.extend(float(self.returns[i]) for i in np.flatnonzero(ended))
            self.returns[ended] = 0.0
        return {k: np.stack([s[k] for s in steps]) for k in SEGMENT_FIELDS}, finished

    def run_unit(self) -> None:
        agent = self.agent
        self.run.begin_round()  # linear_decay's lr, at the segment's start
        segment, finished = self.collect()
        agent.step_counter += segment["reward"].size
        for episode_return in finished:
            self.run.end_episode(episode_return)
        agent.replay.add(segment)
        self.update(segment)  # on-policy ACER
        if len(agent.replay) >= agent.replay_start:
            for _ in range(int(self.rng.poisson(agent.replay_ratio))):  # off-policy ACER
                self.update(agent.replay.sample(agent.n_envs, self.rng))

    def update(self, segment: dict[str, np.ndarray]) -> None:
        if not self.agent.stop_training:
            self.learner.rollout_update(self.agent.acer_batch(segment))

    def close(self) -> None:
        self.vec.close()


# -- the agent -----------------------------------------------------------------------------------
class ACERMixin(SeededInit, LinearDecay):
    """ACER with a shared actor-critic MLP (policy and Q heads) and an average policy network;
    shared by ``note_rl.agents.torch.ACER`` and ``note_rl.agents.keras.ACER``, which add the
    networks and the loss.  Defaults are OpenAI baselines' ACER (its MLP: [64, 64] tanh, orthogonal
    init, the policy head's gain 0.01).  Give it ``note_rl.optim.RMSprop(lr=7e-4, rho=0.99, eps=1e-5)``.

    :param state_dim: observation size
    :param hidden_size: hidden units of the shared trunk (int or list)
    :param action_dim: number of discrete actions
    :param gamma: discount
    :param n_steps: segment length per env (the sequences Retrace runs over)
    :param n_envs: vectorised envs; also the sequences of a replayed batch
    :param replay_ratio: mean of the Poisson number of replay updates per on-policy update
    :param buffer_size: transitions the replay holds (in whole segments)
    :param replay_start: transitions in the replay before replay updates start
    :param c: truncation of the importance weights
    :param q_coef: weight of the Q loss
    :param ent_coef: weight of the entropy bonus (discrete actions: a Gaussian of fixed std has no gradient)
    :param trust_region: the efficient trust region (else the plain ACER gradient)
    :param delta: the trust region's bound on the KL from the average policy's step
    :param alpha: the average policy network's Polyak rate: ``theta_a <- alpha theta_a + (1 - alpha) theta``
    :param max_grad_norm: clip the gradient's global norm (``None``: no clipping)
    :param linear_decay: lower the learning rate linearly to 0 over ``train(steps=...)`` (baselines' schedule)
    :param env: env instance or gymnasium id (default ``CartPole-v1``); Discrete or Box actions
    :param seed: same as ``set(seed=seed)`` right after construction
    :param activation: hidden activation, ``"tanh"`` or ``"relu"``
    :param ortho_init: orthogonal initialisation (gains sqrt(2), 0.01 for the policy head, 1 for Q)
    :param device: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``
    :param action_std: Box actions: the policy's fixed standard deviation, as a fraction of each bound's
        half-range (of the action itself where a bound is infinite)
    :param sdn_samples: Box actions: samples ``u_j ~ f`` of the stochastic dueling network's baseline
    """

    #: the action spaces the agent handles (a builder refuses an env with others in one line)
    action_kinds = ("discrete", "continuous")

    def __init__(self, state_dim: int, hidden_size: int | Sequence[int], action_dim: int, gamma: float = 0.99,
                 n_steps: int = 20, n_envs: int = 4, replay_ratio: float = 4.0, buffer_size: int = 50_000,
                 replay_start: int = 10_000, c: float = 10.0, q_coef: float = 0.5, ent_coef: float = 0.01,
                 trust_region: bool = True, delta: float = 1.0, alpha: float = 0.99,
                 max_grad_norm: float | None = 10.0, linear_decay: bool = False, env: Any = None,
                 seed: int | None = None, activation: str = "tanh", ortho_init: bool = True,
                 device: str | None = "auto", action_std: float = 0.3, sdn_samples: int = 5) -> None:
        super().__init__()  # the backend's base class (RL_pytorch / RL)
        self.device = self.backend.resolve_device(device)
        name = type(self).__name__
        check_args(name, gamma=gamma, activation=activation, state_dim=state_dim, action_dim=action_dim,
                   n_steps=n_steps, n_envs=n_envs, buffer_size=buffer_size, sdn_samples=sdn_samples,
                   numbers={"action_std": action_std, "replay_ratio": replay_ratio, "replay_start": replay_start, "c": c, "q_coef": q_coef,
                            "ent_coef": ent_coef, "delta": delta, "alpha": alpha, "max_grad_norm": max_grad_norm})
        for arg, value, ok, rule in (("replay_ratio", replay_ratio, replay_ratio >= 0, ">= 0"),
                                     ("replay_start", replay_start, replay_start >= 0, ">= 0"),
                                     ("c", c, c > 0, "> 0"), ("action_std", action_std, action_std > 0, "> 0"), ("delta", delta, delta > 0, "> 0"),
                                     ("alpha", alpha, 0.0 <= alpha < 1.0, "in [0, 1)"),
                                     ("max_grad_norm", max_grad_norm, max_grad_norm is None or max_grad_norm > 0,
                                      "> 0 or None")):
            if not ok:
                raise ValueError(f"{name}({arg}={value!r}): must be {rule}")
        if buffer_size < n_steps * n_envs:
            raise ValueError(f"{name}(buffer_size={buffer_size!r}): must hold one segment of n_steps x n_envs = "
                             f"{n_steps * n_envs} transitions")
        self.env = make_env(env)
        self._setup_actions(name, self.env.action_space, action_std, sdn_samples)
        check_env_dims(name, self.env, state_dim, action_dim)
        self.state_dim, self.action_dim = int(state_dim), int(action_dim)
        self.hidden, self.activation, self.ortho_init = hidden_sizes(hidden_size), activation, bool(ortho_init)
        self.n_steps, self.n_envs = int(n_steps), int(n_envs)
        self.replay_ratio, self.buffer_size, self.replay_start = float(replay_ratio), int(buffer_size), int(replay_start)
        self.c, self.q_coef, self.ent_coef = float(c), float(q_coef), float(ent_coef)
        self.trust_region, self.delta, self.alpha = bool(trust_region), float(delta), float(alpha)
        self.max_grad_norm = None if max_grad_norm is None else float(max_grad_norm)
        self._init_schedules(linear_decay)  # the lr's, set before each segment
        self.replay: SegmentReplay | None = None
        #: what the last update computed: ``loss_policy``, ``loss_q``, ``entropy``, ``adj``, ``rho``
        self.last_update: dict[str, float] = {}
        self._build_networks(*self.initial_weights(seed))
        self._finish_init(gamma, seed)

    def _setup_actions(self, name: str, space: Any, action_std: float, sdn_samples: int) -> None:
        """Discrete: the softmax policy and the Q head.  Box: a Gaussian of fixed std around the
        policy network's output, and the stochastic dueling network (V and A networks)."""
        self.continuous = isinstance(space, gym.spaces.Box)
        self.action_bounds: tuple[np.ndarray, np.ndarray] | None = None
        if not self.continuous:
            if not isinstance(space, gym.spaces.Discrete):
                raise ValueError(f"{name} needs a Discrete or Box action space; the env has {space}")
            return
        low, high = space.low.astype(np.float64).ravel(), space.high.astype(np.float64).ravel()
        half = np.where(np.isfinite(high - low), (high - low) / 2.0, 1.0)
        self.std = (float(action_std) * half).astype(np.float32)
        self.log_std = np.log(self.std)
        self.sdn_samples = int(sdn_samples)
        self.action_bounds = (low.astype(np.float32), high.astype(np.float32))

    #: the collector the training loop runs this agent with (Algorithm 1)
    collector_class = ACERCollector

    def _build_networks(self, weights: list[np.ndarray], *sdn: list[np.ndarray]) -> None:  # pragma: no cover
        """``net`` and ``avg_net`` (both from ``weights``), with Box actions ``v_net`` and ``a_net`` (the
        stochastic dueling network, from ``sdn``), and ``self.param`` (all their trained variables)."""
        raise NotImplementedError

    def sdn_weights(self) -> tuple[list[np.ndarray], list[np.ndarray]]:  # pragma: no cover - per backend
        """Numpy copies of the V and A networks' weights (Box actions)."""
        raise NotImplementedError

    def net_weights(self, avg: bool = False) -> list[np.ndarray]:  # pragma: no cover - per backend
        """Numpy copies of the network's (or the average network's) weights."""
        raise NotImplementedError

    def initial_weights(self, seed: int | None) -> tuple[list[np.ndarray], ...]:
        """``(weights,)`` of the trunk and both heads (``Dense(2 * A)``: logits, then Q) drawn from
        ``seed``; Box actions: ``(policy mean, V, A(x, a))``.  The average network starts as a copy."""
        rng = np.random.default_rng(seed)
        ortho = self.ortho_init
        if self.continuous:
            d, sizes = self.action_dim, [self.state_dim, *self.hidden]
            return (init_mlp([*sizes, d], rng, 0.01 if ortho else None), init_mlp([*sizes, 1], rng, 1.0 if ortho else None),
                    init_mlp([self.state_dim + d, *self.hidden, 1], rng, 1.0 if ortho else None))
        policy = init_mlp([self.state_dim, *self.hidden, self.action_dim], rng, 0.01 if ortho else None)
        q_head = init_mlp([self.hidden[-1], self.action_dim], rng, 1.0 if ortho else None)
        return (policy[:-2] + [np.concatenate([policy[-2], q_head[0]], 1), np.concatenate([policy[-1], q_head[1]])],)

    def update_spec(self) -> UpdateSpec:
        """One group (the network), one loss (:meth:`acer_loss`, clipped to ``max_grad_norm``), and the
        average network moved by ``1 - alpha`` after every update (Algorithm 2, line 20)."""
        return UpdateSpec(groups=[ParamGroup("net", self.param)],
                          terms=[LossTerm(self.sdn_loss if self.continuous else self.acer_loss, ["net"], max_grad_norm=self.max_grad_norm, name="acer")],
                          targets=[TargetUpdate(self.avg_net, self.net, 1.0 - self.alpha, every=1)])

    def acer_batch(self, segment: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The batch of the update's loss from a segment (Box actions: :meth:`sdn_batch`).  The batch :meth:`acer_loss` takes, ``[x, a, grad_f, q_ret, offset]``, from a segment of
        ``(T, n, ...)`` arrays: the constants of the update (:func:`acer_targets`) from numpy
        forward passes of the current and the average networks."""
        if self.continuous:
            return self.sdn_batch(segment)
        T, n = segment["reward"].shape
        A = self.action_dim
        x = segment["state"].reshape(T * n, -1)
        net, avg = MLPActor(self.net_weights(), "linear", self.activation), \
            MLPActor(self.net_weights(avg=True), "linear", self.activation)
        out = net(x).reshape(T, n, 2 * A)
        out_next = net(segment["next_state"].reshape(T * n, -1)).astype(np.float64)
        v_next = (np.exp(log_softmax(out_next[:, :A])) * out_next[:, A:]).sum(1).reshape(T, n)
        targets = acer_targets(out[..., :A], out[..., A:], avg(x).reshape(T, n, 2 * A)[..., :A], segment["mu"],
                               segment["action"], segment["reward"], v_next,
                               segment["terminated"].astype(np.float64), segment["episode_end"],
                               scalar(self.gamma), self.c, self.delta, self.ent_coef, self.q_coef, self.trust_region)
        self.last_update = {k: v for k, v in targets.items() if isinstance(v, float)}
        return [x.astype(np.float32), segment["action"].reshape(T * n).astype(np.int64), targets["grad_f"],
                targets["q_ret"], targets["offset"]]

    def sdn_batch(self, segment: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Box actions: ``[x, [a, u_1 .. u_k], grad_mean, [q_ret, v_coef, offset]]`` (see
        :func:`acer_sdn_targets`); ``a'`` and the ``u_j`` are drawn from f with the agent's generator."""
        T, n = segment["reward"].shape
        N, d, k = T * n, self.action_dim, self.sdn_samples
        x, a = segment["state"].reshape(N, -1), segment["action"].reshape(N, d).astype(np.float32)
        mean = MLPActor(self.net_weights(), "linear", self.activation)(x)
        mean_avg = MLPActor(self.net_weights(avg=True), "linear", self.activation)(x)
        v_w, a_w = self.sdn_weights()
        v_net, a_net = MLPActor(v_w, "linear", self.activation), MLPActor(a_w, "linear", self.activation)
        drawn = (mean[:, None] + self.std * self._sample_rng().standard_normal((N, 1 + k, d))).astype(np.float32)
        actions = np.concatenate([a[:, None], drawn], 1)  # a_i, a'_i, u_1 .. u_k
        adv = a_net(np.concatenate([np.repeat(x[:, None], 2 + k, 1), actions], -1).reshape(N * (2 + k), -1))
        v_next = v_net(segment["next_state"].reshape(N, -1))[:, 0].reshape(T, n)
        t = acer_sdn_targets(mean.reshape(T, n, d), mean_avg.reshape(T, n, d), segment["mu"], self.std,
                             a.reshape(T, n, d), drawn[:, 0].reshape(T, n, d), v_net(x)[:, 0].reshape(T, n),
                             adv.reshape(T, n, 2 + k), segment["reward"], v_next,
                             segment["terminated"].astype(np.float64), segment["episode_end"],
                             scalar(self.gamma), self.c, self.delta, self.q_coef, self.trust_region)
        self.last_update = {key: v for key, v in t.items() if isinstance(v, float)}
        return [x.astype(np.float32), np.concatenate([a[:, None], drawn[:, 1:]], 1), t["grad_mean"],
                np.stack([t["q_ret"], t["v_coef"], t["offset"]], 1)]

    def sdn_loss(self, x: Any, au: Any, grad_mean: Any, targets: Any) -> Any:  # pragma: no cover - per backend
        """Box actions: ``sum(grad_mean * mean(x)) + sum(offset) + q_coef * (mean(0.5 (q_ret - Q~(x, a))^2)
        - mean(v_coef * V(x)))``, ``Q~(x, a) = V(x) + A(x, a) - mean_j A(x, u_j)``."""
        raise NotImplementedError

    def _sample_rng(self) -> np.random.Generator:
        rng = getattr(self, "_rng", None)
        if rng is None:
            rng = self._rng = np.random.default_rng(self.seed)
        return rng

    def acer_loss(self, x: Any, a: Any, grad_f: Any, q_ret: Any, offset: Any) -> Any:  # pragma: no cover
        """``sum(grad_f * f(x)) + sum(offset) + q_coef * mean(0.5 (q_ret - Q(x, a))^2)`` (per backend)."""
        raise NotImplementedError

    def distributed_training(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: ACER's loop replays its own segments in the training process."""
        raise ValueError(f"{type(self).__name__}: distributed_training is not supported; train it with train()")

    # -- acting ------------------------------------------------------------------------------
    def policy_weights(self) -> list[np.ndarray]:
        """The trunk and the policy head only (the first ``A`` output units)."""
        w = self.net_weights()
        return w[:-2] + [w[-2][:, :self.action_dim], w[-1][:self.action_dim]]

    def numpy_actor(self) -> LiveActor:
        if self.continuous:  # the Gaussian's mean
            return LiveActor(self, self.net_weights, "linear", self.activation)
        return LiveActor(self, self.policy_weights, "softmax", self.activation)

    def worker_actor(self) -> MLPActor:
        if self.continuous:
            return MLPActor(self.net_weights(), "linear", self.activation)
        return MLPActor(self.policy_weights(), "softmax", self.activation)

    def greedy_action(self, output: np.ndarray) -> Any:
        """The mean action clipped to the bounds (Box), or the most probable action."""
        return np.clip(output, *self.action_bounds) if self.continuous else int(np.argmax(output))

