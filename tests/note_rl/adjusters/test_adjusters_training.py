"""Adjusters in training: Note_rl's hook points, end-to-end ESS and GNS runs on both backends,
pool mode, checkpoints, and the examples."""

import importlib.util
import os

import numpy as np
import pytest

from note_rl import Callback, LambdaCallback
from note_rl.policy import EpsGreedyQPolicy, SoftmaxPolicy
from tests.conftest import agents_module, make_optimizer, train

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _dqn(backend, **kwargs):
    agent = agents_module(backend).DQN(4, 32, 2, seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.2), pool_size=2000, batch=16, seed=0, **kwargs)
    return agent


def _ppo_optimizers(backend, agent):
    if backend == "torch":
        import torch

        return [torch.optim.Adam(agent.param[0], lr=1e-4), torch.optim.Adam(agent.param[1], lr=5e-3)]
    import keras

    return [keras.optimizers.Adam(1e-4), keras.optimizers.Adam(5e-3)]


def _recorder():
    reports, episodes = [], []
    cb = LambdaCallback(on_adjust=lambda logs: reports.append(logs),
                        on_episode_end=lambda episode, logs: episodes.append(logs))
    return cb, reports, episodes


def _ess(weights):
    p = np.asarray(weights, dtype=np.float64) / np.sum(weights)
    return 1.0 / np.sum(p ** 2)


class _Probe(Callback):
    """Each adjuster report with the buffer's length and ESS at that moment (``_len``, ``_ess``),
    and each trim of the buffer: ``(segment, k, sizes before, sizes after)``."""

    def __init__(self) -> None:
        self.reports, self.drops = [], []

    def on_train_begin(self, logs=None) -> None:
        buffer = self.model.buffer
        drop = buffer.drop_oldest

        def recording(k, segment=0):
            before = buffer.sizes.copy()
            drop(k, segment)
            self.drops.append((segment, int(k), before, buffer.sizes.copy()))

        buffer.drop_oldest = recording

    def on_adjust(self, logs=None) -> None:
        buffer = self.model.buffer
        self.reports.append(dict(logs, _len=len(buffer), _ess=_ess(buffer.weights())))


# -- Note_rl's hook points -------------------------------------------------------------------
def _counting_dqn(**kwargs):
    from note_rl.agents.torch import DQN

    class Counting(DQN):
        """Counts (and logs the counters at) every ``adjust_func()`` and ``update_param()``."""

        adjust_calls = syncs = 0

        def adjust_func(self):
            self.adjust_calls += 1
            self.adjust_log.append((len(self.buffer), self.batch_counter))

        def update_param(self):
            self.syncs += 1
            self.sync_log.append((self.batch_counter, self.step_counter))
            super().update_param()

    agent = Counting(4, 32, 2, seed=0)
    agent.adjust_log, agent.sync_log = [], []
    agent.set(policy=EpsGreedyQPolicy(0.2), pool_size=2000, batch=16, seed=0, **kwargs)
    return agent


@pytest.mark.parametrize("kwargs, expected", [
    ({"update_batches": 4}, lambda a: a.batch_counter // 4),      # after each update_param()
    ({"update_steps": 10}, lambda a: a.syncs),                    # idem, env-step cadence
    ({"PR": True}, lambda a: a.batch_counter),                     # PR: after every step
    ({"PR": True, "update_steps": 10}, lambda a: a.batch_counter + a.syncs),   # both points
])
def test_adjust_func_runs_at_note_rl_points(kwargs, expected) -> None:
    import torch

    agent = _counting_dqn(**kwargs)
    agent.train(torch.optim.Adam(agent.param), 3, p=0)
    assert agent.batch_counter > 0 and agent.syncs > 0
    assert agent.adjust_calls == expected(agent)


def test_window_size_func_decides_the_trim_after_update_param() -> None:
    import torch

    agent = _counting_dqn(PR=True, update_steps=10)
    calls = []

    def window_size_func(*args):
        calls.append(args)
        return 3

    agent.window_size_func = window_size_func
    agent.train(torch.optim.Adam(agent.param), 2, p=0)
    assert len(calls) == agent.syncs and set(calls) == {()}     # single process: no segment
    assert agent.step_counter - len(agent.buffer) == 3 * agent.syncs


def test_adjust_func_runs_once_per_collection_phase_in_pool_mode() -> None:
    import torch

    # uniform buffer, neither update_batches nor update_steps: the phase is the only hook point
    agent = _counting_dqn()
    phases = []   # (buffer length, gradient steps) at the end of each phase
    probe = LambdaCallback(on_episode_end=lambda e, logs: phases.append((len(agent.buffer), agent.batch_counter)))
    # collect -> merge -> adjust_func() -> train, as in Note_rl's prepare() + train1() (with the
    # default parallel_store_and_training a phase's data trains during the next phase instead)
    agent.train(torch.optim.Adam(agent.param), 5, pool_network=True, processes=2, p=0, callbacks=[probe],
                parallel_store_and_training=False)
    assert len(phases) == 5 and agent.batch_counter > 0
    # called with the phase's data merged (its length at the phase's end; this buffer never drops)
    # and before the phase trains (the gradient steps of the previous phase), once the pool holds
    # pool_size_ = num_updates * batch = 16 items
    expected = [(n, phases[i - 1][1] if i else 0) for i, (n, _) in enumerate(phases) if n >= 16]
    assert len(expected) >= 4 and agent.adjust_log == expected


def test_window_size_func_trims_each_segment_in_pool_mode() -> None:
    import torch

    agent = _counting_dqn(PR=True, update_batches=10)
    calls = []

    def window_size_func(p=None):
        calls.append(p)
        return 3

    agent.window_size_func = window_size_func
    probe = _Probe()
    agent.train(torch.optim.Adam(agent.param), 4, pool_network=True, processes=2, p=0, callbacks=[probe])
    assert agent.syncs > 0 and calls == [0, 1] * agent.syncs          # once per segment p
    assert [(seg, k) for seg, k, _, _ in probe.drops] == [(0, 3), (1, 3)] * agent.syncs
    for seg, _, before, after in probe.drops:                           # that segment only
        assert after[seg] == before[seg] - 3 and after[1 - seg] == before[1 - seg]


@pytest.mark.parametrize("attr, every", [("update_batches", 8), ("update_steps", 8)])
def test_the_freq_rule_changes_the_update_param_cadence(attr, every) -> None:
    import torch

    agent = _counting_dqn(PR=True, **{attr: every})
    # ESS mode: period * T / E with T = 0.01 far below any ESS -> clipped to min 3 at the first run
    agent.adjuster = {"kind": "ess", "every": 16, "target_ess": 0.01,
                      "freq_params": {"scale": 1.0, "min": 3, "max": 8}}
    cb, reports, _ = _recorder()
    agent.train(torch.optim.Adam(agent.param), 5, p=0, callbacks=[cb])
    first = reports[0]
    assert first["batch_counter"] == 16 and first["freq"] == 3 and getattr(agent, attr) == 3
    # update_batches counts gradient steps, update_steps env steps
    counter = 0 if attr == "update_batches" else 1
    change = first["batch_counter" if counter == 0 else "env_steps"]
    syncs = [log[counter] for log in agent.sync_log]
    before, after = [c for c in syncs if c <= change], [c for c in syncs if c > change]
    assert before == list(range(every, change + 1, every))               # every 8 until the change
    first_after = change + 3 - change % 3                                 # then every 3
    assert len(after) >= 5 and after == list(range(first_after, after[-1] + 1, 3))


# -- end to end ------------------------------------------------------------------------------
def test_ppo_with_pr_and_the_ess_adjuster(backend) -> None:
    agent = agents_module(backend).PPO(4, 32, 2, seed=0)
    agent.set(policy=SoftmaxPolicy(), pool_size=2000, batch=16, update_steps=50, PR=True, seed=0)
    agent.adjuster = {"kind": "ess", "every": 5, "target_ess": 8.0,
                      "batch_params": {"min": 16, "max": 64, "align": 16},
                      "clip_params": {"rate": 0.05, "min": 0.1, "max": 0.3},
                      "lr_params": {"rate": 1e-4, "min": 1e-5, "max": 1e-2},
                      "window": {"scale": 4.0}}
    opts = _ppo_optimizers(backend, agent)
    cb, reports, episodes = _recorder()
    train(agent, backend, opts, 6, p=0, callbacks=[cb])
    runs = [r for r in reports if "ess" in r]
    assert runs and all(r["batch_counter"] % 5 == 0 for r in runs)
    last = runs[-1]
    assert last["ess_ema"] > 8.0                      # so every rule moved up
    assert agent.batch == last["batch"] == 64
    assert float(np.asarray(agent.clip)) == pytest.approx(last["clip"]) and 0.2 < last["clip"] <= 0.3
    lrs = [agent.backend.get_hparam(o, "lr") for o in opts]
    assert lrs == pytest.approx([last["lr/0"], last["lr/1"]], rel=1e-6) and lrs[0] > 1e-4 and lrs[1] > 5e-3
    assert any("window" in r for r in reports)        # the ESS trim after update_param()
    assert episodes[-1]["adjust/batch"] == 64 and "adjust/ess_ema" in episodes[-1]


def test_dqn_with_the_gns_adjuster(backend) -> None:
    agent = _dqn(backend, update_steps=20)
    agent.adjuster = {"kind": "gns", "every": 10, "num_samples": 4, "target_noise": 1e-3,
                      "batch_params": {"min": 16, "max": 64, "align": 16},
                      "lr_params": {"rate": 1e-4, "min": 1e-4, "max": 1e-2}}
    sizes = []

    def watch_sampling(logs):
        sample = agent.buffer.sample
        agent.buffer.sample = lambda n: sizes.append(n) or sample(n)

    cb, reports, _ = _recorder()
    opt = make_optimizer(backend, agent.param, lr=1e-3)
    # Keras: the default jit_compile=True, so the new batch shape runs through XLA after a retrace
    train(agent, backend, opt, 10, p=0, callbacks=[cb, LambdaCallback(on_train_begin=watch_sampling)])
    last = reports[-1]
    assert {"noise", "noise_ema", "b_simple", "tr_sigma", "grad_sq", "noise_ratio"} <= set(last)
    assert last["noise_ratio"] > 1e-3                  # noisier than the target: bigger batch, lower lr
    assert agent.batch == last["batch"] == 64 and sizes[0] == 16 and sizes[-1] == 64
    assert len(reports) >= 2 and sizes.count(64) >= 10  # steps ran with the new batch
    lr = agent.backend.get_hparam(opt, "lr")
    assert lr == pytest.approx(last["lr"], rel=1e-6) and 1e-4 <= lr < 1e-3


def test_pool_mode_reports_each_segment_and_adjusts_num_store() -> None:
    agent = agents_module("torch").PPO(4, 32, 2, seed=0)
    agent.set(policy=SoftmaxPolicy(), pool_size=2000, batch=16, update_batches=20, PR=True, seed=0)
    agent.adjuster = {"kind": "ess", "every": 5, "target_ess": 4.0, "store_params": {"min": 1, "max": 3},
                      "window": {"scale": 4.0}}
    seen = []
    cb, reports, _ = _recorder()
    probe = LambdaCallback(on_episode_end=lambda e, logs: seen.append(agent._trainer.settings.num_store))
    agent.train(_ppo_optimizers("torch", agent), 4, pool_network=True, processes=2, num_store=2,
                p=0, callbacks=[cb, probe])
    runs = [r for r in reports if "ess" in r]
    assert runs and {"ess/0", "ess/1"} <= set(runs[-1])
    assert any({"window/0"} <= set(r) for r in reports) and any({"window/1"} <= set(r) for r in reports)
    assert runs[-1]["store"] == 1 and seen[-1] == 1    # E > T: num_store * T / E, down to min


def test_adjuster_state_survives_a_checkpoint(backend, tmp_path) -> None:
    path = str(tmp_path / "agent.dat")
    spec = {"kind": "gns", "every": 7, "num_samples": 3, "target_noise": 1e-3,
            "batch_params": {"min": 16, "max": 48, "align": 16},
            "gamma_params": {"rate": 0.01, "min": 0.9, "max": 0.999},
            "tau_params": {"rate": 0.1, "min": 0.1, "max": 1.0}, "window": {"scale": 3.0}}
    a = _dqn(backend, update_steps=25, PR=True, learning_starts=20)
    a.adjuster = spec
    opt_a = make_optimizer(backend, a.param)
    train(a, backend, opt_a, 5, p=0, jit_compile=False)
    a.save(path)
    saved = a.adjust_state()
    assert saved["adjuster"]["state"]["runs"] > 0 and saved["values"]["tau"] != [1.0]
    cb_a, reports_a, _ = _recorder()
    train(a, backend, opt_a, 3, p=0, jit_compile=False, callbacks=[cb_a])

    b = agents_module(backend).DQN(4, 32, 2, seed=123)
    b.set(policy=EpsGreedyQPolicy(0.2))
    opt_b = make_optimizer(backend, b.param)
    b.restore(path, optimizer=opt_b)                  # rebuilds b.adjuster from the file
    assert b.adjust_state() == saved and b.adjuster.spec() == a.adjuster.spec()
    cb_b, reports_b, _ = _recorder()
    train(b, backend, opt_b, 3, p=0, jit_compile=False, callbacks=[cb_b])
    assert len(reports_b) == len(reports_a) > 0
    for ra, rb in zip(reports_a, reports_b):
        assert ra.keys() == rb.keys()
        np.testing.assert_allclose([rb[k] for k in ra], [ra[k] for k in ra], rtol=1e-4, equal_nan=True)


# -- examples --------------------------------------------------------------------------------
def _example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ppo_pr_example_trims_by_ess_and_adapts_the_batch(backend) -> None:
    probe = _Probe()
    # initial batch 8: it is also the alignment, and this short run's ESS (~25-45) is above it
    agent = _example("ppo_pr_ess").main(backend, episodes=4, update_steps=25, batch=8, callbacks=[probe])
    windows = [r for r in probe.reports if "window" in r]
    runs = [r for r in probe.reports if "ess" in r]
    assert windows and runs
    # adjust_window_size(): ESS of the buffer, its own EMA (0.2), keep clip(int(EMA), 1, n - 1)
    ema = None
    for w in windows:
        assert w["window_ess"] == pytest.approx(w["_ess"], rel=1e-5)
        ema = w["_ess"] if ema is None else 0.2 * w["_ess"] + 0.8 * ema
        assert w["window_ess_ema"] == pytest.approx(ema, rel=1e-5)
    # the loop dropped exactly that many oldest items, once per update_param(): sizes fall to keep
    assert [k for _, k, _, _ in probe.drops] == [w["window"] for w in windows]
    for w, (_, k, before, after) in zip(windows, probe.drops):
        n = w["_len"]
        keep = min(max(int(w["window_ess_ema"]), 1), n - 1)
        assert before[0] == n and after[0] == keep == n - k < n
    # adjust(batch_params) without a target: b = round(EMA(ESS)); default min 8 // 2, align 8,
    # max = buffer length
    ema, batch = None, 8
    for r in runs:
        assert r["ess"] == pytest.approx(r["_ess"], rel=1e-5)
        ema = r["_ess"] if ema is None else 0.2 * r["_ess"] + 0.8 * ema
        assert r["ess_ema"] == pytest.approx(ema, rel=1e-5)
        hi = r["_len"]
        b = min(max(round(r["ess_ema"]), min(4, hi)), hi)
        batch = b if hi < 8 else max(8, 8 * (b // 8))
        assert r["batch"] == batch
    # the ESS is above the initial batch, so the batch grew with it
    assert runs[-1]["ess_ema"] >= 16 and agent.batch == batch > 8


@pytest.mark.parametrize("declarative", [False, True])
def test_dqn_gns_example_moves_batch_and_lr_with_the_noise(backend, declarative) -> None:
    cb, reports, _ = _recorder()
    agent = _example("dqn_gns").main(backend, episodes=40, declarative=declarative, callbacks=[cb])
    runs = [r for r in reports if "noise_ema" in r]
    assert runs
    # Note_rl style: adjust(target_noise=1e-3), Note_rl's variance; declarative: E = B_simple / batch, T = 1
    key, target = ("noise_ratio", 1.0) if declarative else ("noise_ema", 1e-3)
    batch, lr = 64, 1e-3                         # the example's set(batch=64) and Adam(1e-3)
    for r in runs:
        ratio = r[key] / target
        # noise mode: round(batch * E / T) in [32, 512], down to a multiple of 32
        expected_batch = max(32, 32 * (min(max(round(batch * ratio), 32), 512) // 32))
        # lr falls when the noise is above its target: 0.2 lr + 0.8 clip(lr - 2e-4 (E/T - 1))
        expected_lr = 0.2 * lr + 0.8 * min(max(lr - 2e-4 * (ratio - 1.0), 1e-4), 3e-3)
        assert r["batch"] == expected_batch and r["lr"] == pytest.approx(expected_lr, rel=1e-6)
        assert (r["batch"] - batch) * (ratio - 1) >= 0 and (r["lr"] - lr) * (ratio - 1) <= 0
        batch, lr = r["batch"], r["lr"]
    first = runs[0][key] / target
    assert abs(first - 1) > 0.5                  # a clear signal: both values had to move
    assert agent.batch == batch and np.sign(batch - 64) == np.sign(first - 1)
    applied = agent.backend.get_hparam(agent.optimizer, "lr")
    assert applied == pytest.approx(lr, rel=1e-6) and np.sign(applied - 1e-3) == -np.sign(first - 1)


def test_adjusters_refuse_rollout_training_and_missing_buffers_before_training() -> None:
    from note_rl.adjusters import AdjusterError

    ppo = agents_module("torch").PPO(4, 8, 2, n_steps=8, n_envs=2, seed=0)
    ppo.set(batch=8)
    ppo.adjuster = {"kind": "gns"}
    with pytest.raises(AdjusterError, match="replay"):
        ppo.train(make_optimizer("torch", ppo.param), None, steps=16, p=0)
    dqn = _dqn("torch")                                  # uniform buffer: no ESS
    dqn.adjuster = {"kind": "ess"}
    with pytest.raises(AdjusterError, match="PR=True"):
        dqn.train(make_optimizer("torch", dqn.param), 1, p=0)
    assert dqn.batch_counter == 0 and dqn._trainer is None
