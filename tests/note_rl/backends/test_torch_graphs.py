"""``jit_compile="cudagraph"``: the whole gradient step (forward, backward, clipping, optimizer step)
captured as one CUDA graph (note_rl/backends/torch_graphs.py).  The CPU tests run everywhere (the
fallback, the optimizer made capturable); the CUDA tests run where a GPU is (``bench/gpu_check.sh``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from note_rl.agents.torch import DQN, PPO, SAC, TD3  # noqa: E402
from note_rl.backends.torch_backend import BACKEND  # noqa: E402
from note_rl.backends import torch_graphs  # noqa: E402
from note_rl.backends.torch_graphs import WARMUP, GraphedStep, make_capturable  # noqa: E402

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: runs where one is")


def _build(algo: str, device: str):
    if algo == "dqn":
        agent = DQN(4, [64], 2, seed=0, device=device)
        agent.set(pool_size=2000, batch=32, learning_starts=64, train_freq=4, seed=0)
    elif algo == "dqn_per":
        agent = DQN(4, [64], 2, seed=0, device=device)
        agent.set(pool_size=2000, batch=32, learning_starts=64, train_freq=4, seed=0, PR=True)
    elif algo == "ppo":  # 2 x 50 steps in batches of 32: a last batch of 4, a second shape
        agent = PPO(4, [64], 2, n_steps=50, n_envs=2, n_epochs=2, max_grad_norm=0.5, linear_decay=True,
                    seed=0, device=device)
        agent.set(batch=32, seed=0)
    elif algo == "td3":
        agent = TD3(hidden_size=[64], env="Pendulum-v1", seed=0, device=device)
        agent.set(pool_size=2000, batch=32, learning_starts=64, seed=0)
    else:
        agent = SAC(hidden_size=[64], env="Pendulum-v1", seed=0, device=device)
        agent.set(pool_size=2000, batch=32, learning_starts=64, seed=0)
    return agent


def _train(algo: str, device: str, jit, steps: int = 300):
    agent = _build(algo, device)
    groups = agent.param if isinstance(agent.param[0], (list, tuple)) else [agent.param]
    optimizers = [torch.optim.Adam(g, lr=1e-3) for g in groups]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent.fit(optimizers if len(optimizers) > 1 else optimizers[0], None, steps=steps, p=0, jit_compile=jit)
    weights = [p.detach().cpu().numpy().copy() for g in groups for p in g]
    notes = [str(w.message) for w in caught if "cudagraph" in str(w.message)]
    return agent, optimizers, weights, notes


def test_without_a_gpu_one_warning_and_the_eager_step() -> None:
    """On the CPU there is no graph to capture: one warning naming the reason, and the very same
    updates as ``jit_compile=False``."""
    _, _, eager, _ = _train("dqn", "cpu", False)
    agent, _, graphed, notes = _train("dqn", "cpu", "cudagraph")
    assert len(notes) == 1 and "CUDA graphs need a CUDA device" in notes[0]
    assert agent.compile_time is None
    for a, b in zip(eager, graphed, strict=True):
        np.testing.assert_array_equal(a, b)


def test_an_unknown_mode_is_refused_with_the_choices() -> None:
    agent = _build("dqn", "cpu")
    with pytest.raises(ValueError, match="cudagraph.*compile\\+cudagraph"):
        agent.fit(torch.optim.Adam(agent.param, lr=1e-3), None, steps=100, p=0, jit_compile="cudagraphs")


def test_make_capturable_keeps_the_lr_reachable() -> None:
    """The learning rate becomes a tensor that ``set_hparam`` changes in place (a replayed graph
    reads it), ``get_hparam`` and the checkpointed optimizer state still see a number."""
    net = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, foreach=True)
    net(torch.ones(1, 3)).sum().backward()
    opt.step()  # a CPU step counter exists before the switch
    make_capturable([opt], torch.device("cpu"))
    lr = opt.param_groups[0]["lr"]
    assert opt.param_groups[0]["capturable"] and isinstance(lr, torch.Tensor)
    assert BACKEND.set_hparam(opt, "lr", 5e-4)
    assert opt.param_groups[0]["lr"] is lr and float(lr) == pytest.approx(5e-4)
    assert BACKEND.get_hparam(opt, "lr") == pytest.approx(5e-4)
    meta, _ = BACKEND.optimizer_state(opt)
    assert meta["param_groups"][0]["lr"] == pytest.approx(5e-4) and isinstance(meta["param_groups"][0]["lr"], float)


@cuda
@pytest.mark.parametrize("algo", ["dqn", "dqn_per", "ppo", "td3", "sac"])
def test_graphed_steps_match_the_eager_steps(algo, monkeypatch) -> None:
    """Every step after the warm-up is a replay, and the weights follow the eager run's (PPO's
    linearly decayed lr reaches the replays through the lr tensor; SAC's noise comes from the
    graph's own draws, so its weights only have to move and stay finite)."""
    _, _, eager, _ = _train(algo, "cuda", False)
    replays, warm = [], []
    real_call, real_warm = torch_graphs._Graph.__call__, GraphedStep._warm_up
    monkeypatch.setattr(torch_graphs._Graph, "__call__", lambda g, a: replays.append(1) or real_call(g, a))
    monkeypatch.setattr(GraphedStep, "_warm_up", lambda s, a: warm.append(1) or real_warm(s, a))
    agent, optimizers, graphed, notes = _train(algo, "cuda", "cudagraph")
    assert notes == []
    shapes = 2 if algo == "ppo" else 1  # PPO's last batch of an epoch is a second shape
    terms = 2 if algo in ("td3", "sac") else 1  # critic and actor steps are graphs of their own
    # the captured batch itself runs by replaying the new graph, not through _Graph.__call__
    assert len(warm) == WARMUP * shapes * terms
    if terms == 1:  # every step: a warm-up, a capture (then its first replay) or a replay
        assert len(replays) == agent.batch_counter - (WARMUP + 1) * shapes > 0
    else:
        assert len(replays) > 0
    if algo == "ppo":  # the lr tensor holds the decayed value, as the eager run's float does
        assert isinstance(optimizers[0].param_groups[0]["lr"], torch.Tensor)
    assert agent.compile_time is not None and agent.compile_time > 0
    for a, b in zip(eager, graphed, strict=True):
        assert np.isfinite(b).all()
        if algo != "sac":
            np.testing.assert_allclose(b, a, atol=2e-4)


@cuda
def test_compiled_loss_inside_the_graph() -> None:
    """``compile+cudagraph``: the compiled loss's kernels are what the graph replays."""
    _, _, eager, _ = _train("dqn", "cuda", False)
    agent, _, graphed, notes = _train("dqn", "cuda", "compile+cudagraph")
    assert notes == [] and agent.compile_time > 0
    for a, b in zip(eager, graphed, strict=True):
        np.testing.assert_allclose(b, a, atol=2e-3)


class _Reading(DQN):
    """A DQN whose loss reads a value back to the host: such a step cannot be captured."""

    def __call__(self, *batch):
        out = super().__call__(*batch)
        self.seen = float(out)
        return out


@cuda
def test_a_step_that_cannot_be_captured_falls_back_and_loses_nothing() -> None:
    agent = _Reading(4, [64], 2, seed=0, device="cuda")
    agent.set(pool_size=2000, batch=32, learning_starts=64, train_freq=4, seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent.fit(torch.optim.Adam(agent.param, lr=1e-3), None, steps=300, p=0, jit_compile="cudagraph")
    notes = [str(w.message) for w in caught if "cudagraph" in str(w.message)]
    assert len(notes) == 1 and "capturing the step failed" in notes[0]
    _, _, eager, _ = _train("dqn", "cuda", False)
    for a, b in zip(eager, [p.detach().cpu().numpy() for p in agent.param], strict=True):
        np.testing.assert_allclose(b, a, atol=2e-4)
    # the failed capture left the device's random generator usable (SAC draws its noise on it)
    _, _, sac, _ = _train("sac", "cuda", False, steps=100)
    assert all(np.isfinite(w).all() for w in sac)



class _NoRecord:
    def pop(self):
        return None, None


@cuda
def test_shapes_beyond_the_cap_run_eagerly_and_the_graphs_keep_replaying(monkeypatch) -> None:
    """Every new batch shape costs a capture; past MAX_GRAPHS of them (an adjuster that keeps changing
    the batch size) a step runs eagerly, adds nothing to the first steps' time, and the graph already
    made keeps replaying; the updates are the eager twin's."""
    from note_rl.backends.base import BoundGroup

    monkeypatch.setattr(torch_graphs, "MAX_GRAPHS", 1)
    replays = []
    real_call = torch_graphs._Graph.__call__
    monkeypatch.setattr(torch_graphs._Graph, "__call__", lambda g, a: replays.append(1) or real_call(g, a))
    torch.manual_seed(0)
    nets = [torch.nn.Linear(4, 1).cuda() for _ in range(2)]
    nets[1].load_state_dict(nets[0].state_dict())
    steps = []
    for net, jit in zip(nets, ("cudagraph", False)):
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)

        def loss(x, y, net=net):
            return ((net(x).squeeze(1) - y) ** 2).mean()

        BACKEND.prepare_optimizer(opt, list(net.parameters()))
        steps.append(BACKEND.make_update(loss, [BoundGroup("net", list(net.parameters()), opt, None)],
                                         _NoRecord(), jit))
    rng = np.random.default_rng(0)
    batches = [(rng.normal(size=(n, 4)).astype(np.float32), rng.normal(size=n).astype(np.float32))
               for n in [8] * (WARMUP + 1) + [4] * 5 + [8] * 3]
    for i, batch in enumerate(batches):
        graphed, eager = (step(list(batch)) for step in steps)
        assert graphed.loss == pytest.approx(eager.loss, rel=1e-5)
        if i == WARMUP:
            first = steps[0].compile_s
    assert len(steps[0].graphs) == 1 and steps[0].compile_s == first  # the batches of 4: no capture, no time
    assert len(replays) == 3  # the last three batches of 8
    for a, b in zip(nets[0].parameters(), nets[1].parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
