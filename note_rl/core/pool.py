"""Pool network: experience collection in worker processes.

Workers are started with ``spawn`` (default) or ``forkserver`` and run
:func:`note_rl.core.pool_worker.worker_main`; they never import TensorFlow or PyTorch.  Built-in
agents give each worker a numpy copy of the acting network (refreshed every phase), so a worker
plays whole episodes on its own and sends them back in one message per phase, never one message
per transition.  Agents without a numpy actor use env mode: workers only step their env and the
training process acts for all of them in one batched forward pass.

One phase (Note_rl's pool-mode "episode"): every worker plays ``num_store`` episodes; each
worker's data goes to its own buffer segment, or, with ``random=True`` or a uniform buffer, to a
segment drawn with probability proportional to ``1 / (len + 1)`` (Note_rl's inverse-length
placement); the phase reward is the mean return of the episodes played.  With
``parallel_store_and_training`` the gradient steps earned by one phase run while the workers
collect the next (data lags one phase; that is Note_rl's ``parallel_store_and_training``).
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing as mp
import signal
from typing import Any

import numpy as np

from ..utils import main_not_rerun, scalar, standard_start_method, stop_workers
from .collect import Collector, TrainingCadence, train_on_rollout
from .envs import EnvFactory, dumps_noting_main, is_discrete
from .pool_worker import worker_main
from .run_context import RunContext
from .settings import TrainSettings

__all__ = ["WorkerPool", "WorkerError", "PoolCollector", "PoolRolloutCollector"]


class WorkerError(RuntimeError):
    """A pool worker raised or died."""


class WorkerPool:
    """``len(inits)`` worker processes, each with a duplex pipe."""

    def __init__(self, inits: list[dict[str, Any]], start_method: str) -> None:
        standard_start_method()  # see its docstring (joblib/loky workers)
        ctx = mp.get_context(start_method)
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        with contextlib.nullcontext() if _uses_main(inits) else main_not_rerun(), _sigint_blocked():
            for i, init in enumerate(inits):
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=worker_main, args=(child, init), daemon=True,
                                   name=f"note_rl-pool-{i}")
                proc.start()
                child.close()
                self.conns.append(parent)
                self.procs.append(proc)
        for i in range(len(inits)):
            self.recv(i)  # "ready" or the construction error

    def __len__(self) -> int:
        return len(self.conns)

    def send(self, i: int, cmd: str, payload: Any = None) -> None:
        self.conns[i].send((cmd, payload))

    def recv(self, i: int) -> Any:
        try:
            status, payload = self.conns[i].recv()
        except (EOFError, ConnectionError):
            code = self.procs[i].exitcode
            raise WorkerError(f"pool worker {i} died (exit code {code})") from None
        if status == "error":
            raise WorkerError(f"pool worker {i} failed:\n{payload}")
        return payload

    def call_all(self, cmd: str, payloads: list[Any]) -> list[Any]:
        for i, payload in enumerate(payloads):
            self.send(i, cmd, payload)
        return [self.recv(i) for i in range(len(self))]

    def close(self) -> None:
        stop_workers(self.conns, self.procs)


@contextlib.contextmanager
def _sigint_blocked() -> Any:
    """SIGINT blocked while workers start: a child inherits the blocked mask, so a Ctrl-C that reaches
    the process group while a worker is still importing stays pending there until the worker has
    chosen to ignore it (``worker_main``) instead of printing a traceback from the middle of an
    import.  The parent's own pending Ctrl-C is delivered when the mask is restored.  (``spawn``;
    a ``forkserver`` worker is forked by a server that was started unmasked.)"""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no signal masks
        yield
        return
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()  # started later, inside the first start(), it would unblock SIGINT
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _uses_main(inits: list[dict[str, Any]]) -> bool:
    """Whether the workers need the parent's ``__main__`` to unpickle what they are sent."""
    try:
        return dumps_noting_main(inits)[1]
    except Exception:  # noqa: BLE001 - starting the worker will raise the real pickling error
        return True


def _pick(obj: Any, p: int) -> Any:
    return obj[p] if isinstance(obj, (list, tuple)) else obj


def _worker_inits(agent: Any, n: int, extra: dict[str, Any]) -> list[dict[str, Any]]:
    envs = agent.env if isinstance(agent.env, (list, tuple)) else [agent.env] * n
    if len(envs) < n:
        raise ValueError(f"pool_network with processes={n} needs {n} envs in self.env, got {len(envs)}")
    seed = agent.copies_seed()
    gamma = getattr(agent, "gamma", None)
    inits = []
    for p in range(n):
        inits.append(dict(
            env_factory=EnvFactory(envs[p]), policy=copy.deepcopy(_pick(agent.policy, p)),
            noise=copy.deepcopy(_pick(agent.noise, p)), num_steps=agent.num_steps,
            gamma=scalar(gamma) if gamma is not None else 1.0, discrete=is_discrete(envs[p]),
            seed=None if seed is None else seed + 1000 * (p + 1), **extra))
    return inits


def _explore_state(agent: Any, p: int) -> dict[str, Any]:
    policy = _pick(agent.policy, p)
    if policy is None:
        return {}
    return {k: copy.copy(getattr(policy, k)) for k in getattr(policy, "_state_keys", ())}


class PoolCollector(Collector):
    """Off-policy pool collection (one unit = one phase)."""

    def __init__(self, agent: Any, learner: Any, run: RunContext, settings: TrainSettings) -> None:
        self.agent, self.run, self.settings = agent, run, settings
        self.n = int(settings.processes)
        actor = agent.worker_actor() if callable(getattr(agent, "worker_actor", None)) else None
        self.mode = "episodes" if actor is not None else "env"
        seed = agent.seed
        self.pool = WorkerPool(_worker_inits(agent, self.n, {"actor": actor}), settings.start_method)
        self.cadence = TrainingCadence(agent, learner, run)
        self.rng = np.random.default_rng(None if seed is None else seed + 13)
        self.sent_weights: list[np.ndarray] | None = None  # what the workers' actors hold

    def _segment(self, p: int) -> int:
        buffer = self.agent.buffer
        if buffer.own_segments and not self.settings.random:
            return p
        if buffer.sizes[p] == 0:
            return p
        w = 1.0 / (buffer.sizes + 1.0)
        return int(self.rng.choice(self.n, p=w / w.sum()))

    def run_unit(self) -> None:
        agent = self.agent
        if self.mode == "episodes":
            weights = self._changed_weights()
            payloads = [{"actor": weights, "explore": _explore_state(agent, p),
                         "step_counter": agent.step_counter, "num_store": self.settings.num_store}
                        for p in range(self.n)]
            for p, payload in enumerate(payloads):
                self.pool.send(p, "episodes", payload)
            if self.settings.parallel_store_and_training:
                self.cadence.run_owed()  # train on the last phase while workers collect
            results = [self.pool.recv(p) for p in range(self.n)]
            steps, returns = self._store(results)
        else:
            steps, returns = self._env_mode_phase()
        before = agent.step_counter
        agent.step_counter += steps
        self.cadence.account(steps, before)
        # Note_rl's prepare(): adjust_func() once per collection phase, after the merge and before
        # the phase's training, once the pool holds pool_size_ = num_updates * batch items
        if len(agent.buffer) >= (agent.num_updates or 1) * agent.batch:
            self.cadence.run_adjust_hook()
        if not self.settings.parallel_store_and_training:
            self.cadence.run_owed()
        self.run.end_episode(float(np.mean(returns)))
        if self.run.finished and not agent.stop_training:
            self.cadence.run_owed()  # the last phase's data still trains

    def _changed_weights(self) -> list[np.ndarray] | None:
        """The acting weights, or ``None`` when the workers already hold them (no gradient step
        since the last phase): a 256x256 network is a quarter megabyte to pickle per worker."""
        weights = self.agent.worker_actor().weights
        sent = self.sent_weights
        if sent is not None and len(sent) == len(weights) and all(map(np.array_equal, weights, sent)):
            return None
        self.sent_weights = [np.array(w) for w in weights]
        return weights

    def _store(self, results: list[dict[str, Any]]) -> tuple[int, list[float]]:
        steps, returns = 0, []
        for p, res in enumerate(results):
            d = res["data"]
            self.agent.buffer.add_batch(d["state"], d["action"], d["next_state"], d["reward"],
                                        d["done"], self._segment(p))
            steps += res["steps"]
            returns.extend(res["returns"])
        return steps, returns

    def _env_mode_phase(self) -> tuple[int, list[float]]:
        """Workers step, the training process acts for all of them in one forward pass."""
        agent = self.agent
        segments = [self._segment(p) for p in range(self.n)]
        states = self.pool.call_all("reset", [None] * self.n)
        active = list(range(self.n))
        totals = np.zeros(self.n)
        steps = 0
        while active:
            outputs = agent.act_output(np.stack([states[p] for p in active]).astype(np.float32))
            actions = {p: agent.explore(outputs[k], p) for k, p in enumerate(active)}
            for p in active:
                self.pool.send(p, "step", actions[p])
            still = []
            for p in active:
                s2, r, terminated, truncated = self.pool.recv(p)
                agent.buffer.add(states[p], actions[p], s2, r, float(terminated), segments[p])
                totals[p] += r
                states[p] = s2
                steps += 1
                if not (terminated or truncated):
                    still.append(p)
            active = still
        return steps, list(totals)

    def close(self) -> None:
        self.pool.close()


def _log_std(agent: Any) -> np.ndarray | None:
    """The log standard deviations of a Gaussian rollout policy, ``None`` for a categorical one."""
    read = getattr(agent, "rollout_log_std", None)
    return read() if callable(read) else None


class PoolRolloutCollector(Collector):
    """On-policy pool collection: each worker runs ``n_envs / processes`` envs for ``n_steps``."""

    on_policy = True  # trains on its own rollouts: no replay pool_size / batch to check

    uses_replay = False

    def __init__(self, agent: Any, learner: Any, run: RunContext, settings: TrainSettings) -> None:
        self.agent, self.learner, self.run = agent, learner, run
        n = int(settings.processes)
        if agent.n_envs % n:
            raise ValueError(f"pool_network: n_envs={agent.n_envs} must be a multiple of processes={n}")
        if agent.worker_actor() is None:  # workers act with numpy copies of an MLP
            raise ValueError(f"pool_network: {type(agent).__name__} with network={getattr(agent, 'network', None)!r} "
                             "acts through its framework, which rollout workers do not load; use pool_network=False "
                             "(n_envs vectorised envs in the training process)")
        extra = {"actor": agent.worker_actor(), "critic": agent.worker_critic(), "n_envs": agent.n_envs // n,
                 "log_std": _log_std(agent), "action_bounds": getattr(agent, "action_bounds", None),
                 "sde_every": agent.sde_sample_freq if getattr(agent, "use_sde", False) else None}
        self.pool = WorkerPool(_worker_inits(agent, n, extra), settings.start_method)
        self.rng = np.random.default_rng(None if agent.seed is None else agent.seed + 11)

    def run_unit(self) -> None:
        agent = self.agent
        hook = getattr(agent, "on_rollout_start", None)
        if callable(hook):
            hook(self.run.progress_remaining())
        self.run.begin_round()  # PPO's / A2C's lr and clip decay, at the rollout's start
        payload = {"actor": agent.worker_actor().weights, "critic": agent.worker_critic().weights,
                   "n_steps": agent.n_steps, "log_std": _log_std(agent)}
        results = self.pool.call_all("rollout", [payload] * len(self.pool))
        fields = {k: np.concatenate([r["fields"][k] for r in results], axis=-1 if k == "last_value" else 1)
                  for k in results[0]["fields"]}
        finished = [ret for r in results for ret in r["returns"]]
        train_on_rollout(agent, self.learner, self.run, fields, finished, self.rng)

    def close(self) -> None:
        self.pool.close()
