"""The PyTorch backend's fast paths (issue "Speed"): fused optimizers whatever the user passes, the
MLP's cached parameters, and ``jit_compile=True`` (torch.compile, its compile time, the eager
fallback when compiling fails)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from note_rl.agents.torch import DQN, MLP  # noqa: E402
from note_rl.backends.torch_backend import BACKEND  # noqa: E402
from note_rl.backends.torch_optim import fast_step, fuse_optimizer  # noqa: E402
from note_rl.optim import Adam as AdamSpec  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _twin_params(seed: int = 0) -> tuple[torch.nn.Parameter, torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(6, 3, generator=g)
    return torch.nn.Parameter(w.clone()), torch.nn.Parameter(w.clone())


@pytest.mark.parametrize("cls,kwargs", [(torch.optim.Adam, {}), (torch.optim.AdamW, {"weight_decay": 0.1}),
                                        (torch.optim.SGD, {"momentum": 0.9})])
def test_a_default_optimizer_is_fused_and_takes_the_same_steps(cls, kwargs) -> None:
    plain_w, fused_w = _twin_params()
    plain, fused = cls([plain_w], lr=0.05, **kwargs), cls([fused_w], lr=0.05, **kwargs)
    assert fuse_optimizer(fused) and fused.param_groups[0]["fused"] is True
    for _ in range(10):
        for w, opt in ((plain_w, plain), (fused_w, fused)):
            opt.zero_grad()
            (w ** 3 - w).sum().backward()
            opt.step()
    np.testing.assert_allclose(fused_w.detach().numpy(), plain_w.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_users_explicit_choice_and_other_optimizers_are_left_alone() -> None:
    w, _ = _twin_params()
    for opt in (torch.optim.Adam([w], foreach=True), torch.optim.Adam([w], fused=False),
                torch.optim.RMSprop([w]), torch.optim.Adam([w], differentiable=True)):
        assert not fuse_optimizer(opt)
    stepped = torch.optim.Adam([w])
    w.grad = torch.ones_like(w)
    stepped.step()
    assert not fuse_optimizer(stepped)  # its state was made for the unfused kernel


def test_train_fuses_the_users_adam_and_the_tuner_builds_fused_optimizers() -> None:
    agent = DQN(4, 16, 2, seed=0)
    agent.set(pool_size=500, batch=16, learning_starts=32, seed=0)
    users = torch.optim.Adam(agent.param, lr=1e-3)  # as a user writes it
    agent.train(users, None, steps=80, p=0)
    assert users.param_groups[0]["fused"] is True and agent.batch_counter > 0
    built = BACKEND.build_optimizer(AdamSpec(lr=1e-3), agent.param)
    assert built.param_groups[0]["fused"] is True
    # a checkpoint's recipe rebuilds the same fused optimizer
    again = BACKEND.rebuild_optimizer(BACKEND.optimizer_recipe(built), agent.param)
    assert again.param_groups[0]["fused"] is True


def test_mlp_reads_its_parameters_after_a_dtype_change() -> None:
    weights = [np.full((2, 3), 0.5, np.float32), np.zeros(3, np.float32), np.ones((3, 1), np.float32),
               np.zeros(1, np.float32)]
    net = MLP(weights).double()
    out = net(torch.ones(1, 2, dtype=torch.float64))
    assert out.dtype == torch.float64 and float(out.detach()) == pytest.approx(3.0)  # relu(1.0) * 3
    with torch.no_grad():
        net.layers[0].fill_(1.0)  # in place: the cached tuple sees it
    assert float(net(torch.ones(1, 2, dtype=torch.float64)).detach()) == pytest.approx(6.0)


_COMPILED_RUN = r"""
import json, sys, warnings
import torch
from note_rl.agents.torch import DQN
if sys.argv[1] == "broken":  # no C++ compiler: Inductor cannot build its kernels
    import torch._inductor.config as config
    config.cpp.cxx = ("/nonexistent/c++",)
torch.set_num_threads(1)
out = {}
for jit in (False, True):
    agent = DQN(4, 16, 2, seed=0)
    agent.set(pool_size=500, batch=16, learning_starts=32, seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent.train(torch.optim.Adam(agent.param, lr=1e-3), None, steps=60, p=0, jit_compile=jit)
    out[str(jit)] = {"weights": [float(p.detach().double().sum()) for p in agent.param],
                     "steps": agent.batch_counter, "compile_time": agent.compile_time,
                     "warnings": [str(w.message) for w in caught if "jit_compile=True" in str(w.message)]}
print(json.dumps(out))
"""


@pytest.mark.parametrize("case", ["working", "broken"])
def test_jit_compile_compiles_or_falls_back_to_eager(case) -> None:
    """jit_compile=True trains the same steps as eager: compiled (its compile time recorded) or, when
    the compiler is missing, eagerly after one warning."""
    import json

    out = subprocess.run([sys.executable, "-c", _COMPILED_RUN, case], capture_output=True, text=True,
                         timeout=600, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))
    assert out.returncode == 0, out.stderr[-3000:]
    runs = json.loads(out.stdout.strip().splitlines()[-1])
    eager, jit = runs["False"], runs["True"]
    assert eager["compile_time"] is None and jit["steps"] == eager["steps"] > 0
    np.testing.assert_allclose(jit["weights"], eager["weights"], rtol=1e-4, atol=1e-4)
    if case == "working":
        assert jit["compile_time"] > 0 and not jit["warnings"]
    else:
        assert jit["compile_time"] == 0.0
        assert len(jit["warnings"]) == 1 and "failed" in jit["warnings"][0] and "runs eagerly" in jit["warnings"][0]


@pytest.mark.parametrize("cls,kwargs", [(torch.optim.Adam, {}), (torch.optim.Adam, {"weight_decay": 0.01}),
                                        (torch.optim.AdamW, {"weight_decay": 0.1}),
                                        (torch.optim.Adam, {"lr": torch.tensor(0.05)})])
def test_fast_step_takes_exactly_the_steps_of_optimizer_step(cls, kwargs) -> None:
    kwargs = {"lr": 0.05, **kwargs}
    ref_w, fast_w = _twin_params(1)
    ref, fast = cls([ref_w], fused=True, **kwargs), cls([fast_w], fused=True, **kwargs)
    stepper = fast_step(fast)
    for i in range(8):
        for w, do in ((ref_w, ref.step), (fast_w, stepper)):
            w.grad = None
            (w ** 3 - w).sum().backward()
            do()
        if i == 4:  # an adjuster changes the learning rate between steps
            for opt in (ref, fast):
                opt.param_groups[0]["lr"] = 0.01
    assert torch.equal(ref_w, fast_w)
    assert torch.equal(ref.state[ref_w]["exp_avg_sq"], fast.state[fast_w]["exp_avg_sq"])
    assert float(fast.state[fast_w]["step"]) == 8.0


def test_fast_step_leaves_hooks_and_lr_schedulers_to_optimizer_step() -> None:
    import warnings

    w, _ = _twin_params()
    opt = torch.optim.Adam([w], lr=0.1, fused=True)
    calls = []
    handle = opt.register_step_post_hook(lambda *a: calls.append(1))
    stepper = fast_step(opt)
    for _ in range(3):
        w.grad = torch.ones_like(w)
        stepper()
    assert len(calls) == 3
    handle.remove()
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "lr_scheduler.step() before optimizer.step()" if bypassed
        w.grad = torch.ones_like(w)
        stepper()
        scheduler.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05)


def test_training_flushes_subnormals_and_puts_the_flag_back() -> None:
    """Adam's second moments of near-silent weights decay into subnormal floats, on which every CPU
    step crawls; train() flushes them to zero (as TensorFlow's kernels do) and restores the flag."""
    from note_rl.backends.torch_backend import flushing_denormals
    from note_rl.callbacks import LambdaCallback

    seen = []
    agent = DQN(4, 16, 2, seed=0)
    agent.set(pool_size=500, batch=16, learning_starts=32, seed=0)
    tiny = torch.tensor([1e-30]) * 1e-10
    assert not flushing_denormals() and tiny.item() > 0  # the process default: subnormals kept
    agent.train(torch.optim.Adam(agent.param, lr=1e-3), None, steps=60, p=0,
                callbacks=[LambdaCallback(on_batch_end=lambda batch, logs: seen.append(flushing_denormals()))])
    assert seen and all(seen)
    assert not flushing_denormals()
    torch.set_flush_denormal(True)  # a caller who flushes keeps flushing after train()
    try:
        agent.train(torch.optim.Adam(agent.param, lr=1e-3), None, steps=20, p=0)
        assert flushing_denormals()
    finally:
        torch.set_flush_denormal(False)
