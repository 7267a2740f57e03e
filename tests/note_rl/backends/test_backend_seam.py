"""The backend owns everything framework-specific: no code outside ``note_rl/backends/`` branches on
a backend's name; optimizers, threads and devices come from the backend."""

import os
import re

import pytest

from note_rl.backends import DeviceError, backend_info, backend_names, get_backend
from note_rl.optim import SPECS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PACKAGES = ("note_rl", "tuner", "hydra_plugins")
NAMES = r"(?:torch|tf|tensorflow|keras|pytorch)"
# `x == "torch"`, `x != "tf"`, `x in ("torch", ...)`, `"torch" == x`, `"torch" in sys.modules`, ...
BRANCH = re.compile(rf"""(?:==|!=|\bin)\s*[\(\[{{]?\s*["']{NAMES}["']|["']{NAMES}["']\s*(?:==|!=|\bin\b)""")


def _sources():
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            rel = os.path.relpath(folder, ROOT)
            if rel.startswith(os.path.join("note_rl", "backends")):
                continue
            yield from (os.path.join(folder, f) for f in files if f.endswith(".py"))


def test_the_pattern_finds_what_it_should() -> None:
    for line in ('if cfg["backend"]["name"] == "torch":', "if backend != 'tf':",
                 'if name in ("torch", "tf"):', 'if "torch" in sys.modules:', 'x = a if "keras" == b else c'):
        assert BRANCH.search(line), line
    for line in ('backend_name = "torch"', 'name: str = "torch"', 'choices=backend_names()'):
        assert not BRANCH.search(line), line


def test_no_backend_name_branch_outside_the_backends() -> None:
    found = []
    for path in _sources():
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if BRANCH.search(line.split("#", 1)[0]):
                    found.append(f"{os.path.relpath(path, ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("name", backend_names())
def test_backend_info_needs_no_framework(name) -> None:
    info = backend_info(name)
    assert info.start_method in ("forkserver", "spawn") and info.agents.startswith("note_rl.agents.")
    with pytest.raises(ValueError, match="unknown backend 'jax'"):
        backend_info("jax")


@pytest.mark.parametrize("name", backend_names())
@pytest.mark.parametrize("device", ["cuda", "cuda:3", "mps", "gpu", "cuda:x"])
def test_missing_or_unknown_device_is_one_line(name, device) -> None:
    backend = get_backend(name)
    if device.startswith("cuda") and device != "cuda:x" and "GPU" in backend.resolve_device("auto"):
        pytest.skip("this machine has a GPU")
    with pytest.raises(DeviceError) as info:
        backend.resolve_device(device)
    assert "\n" not in str(info.value) and device.split(":")[0] in str(info.value)


@pytest.mark.parametrize("name", backend_names())
def test_auto_and_cpu_devices_resolve_here(name) -> None:
    backend = get_backend(name)
    assert backend.resolve_device("cpu") in ("cpu", "/CPU:0")
    assert backend.resolve_device("auto") == backend.resolve_device(None)


@pytest.mark.parametrize("name", backend_names())
@pytest.mark.parametrize("kind", sorted(SPECS))
def test_optimizer_specs_build_with_their_hyperparameters(name, kind) -> None:
    import numpy as np

    backend = get_backend(name)
    agent = getattr(__import__(backend_info(name).agents, fromlist=["DQN"]), "DQN")(4, 8, 2, device="cpu")
    spec = SPECS[kind](lr=0.005, weight_decay=0.01 if kind != "adamw" else 0.02)
    opt = backend.build_optimizer(spec, backend.flatten(agent.param))
    assert backend.optimizer_name(opt) == kind
    assert backend.get_hparam(opt, "lr") == pytest.approx(0.005)
    backend.prepare_optimizer(opt, backend.flatten(agent.param))
    assert np.isclose(backend.get_hparam(opt, "weight_decay"), spec.weight_decay)
    # the recipe rebuilds the same class with the same hyperparameters (finders send it to a child)
    again = backend.rebuild_optimizer(backend.optimizer_recipe(opt), backend.flatten(agent.param))
    assert type(again) is type(opt) and backend.get_hparam(again, "lr") == pytest.approx(0.005)
    with pytest.raises(ValueError, match="lr is not set"):
        backend.build_optimizer(SPECS[kind](), backend.flatten(agent.param))


@pytest.mark.parametrize("name", backend_names())
def test_threads_are_set_through_the_backend(name, monkeypatch) -> None:
    backend = get_backend(name)
    for var in ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        monkeypatch.delenv(var, raising=False)
    before = backend.framework_threads()
    try:
        backend.set_threads(1)
        assert os.environ["OMP_NUM_THREADS"] == os.environ["TF_NUM_INTRAOP_THREADS"] == "1"
        assert backend.framework_threads() in (1, before)  # TF: fixed once its runtime started
    finally:
        if before:
            backend.set_threads(before)


def test_fit_is_train_with_one_signature(backend) -> None:
    from note_rl.optim import Adam
    from tests.conftest import agents_module

    agent = agents_module(backend).DQN(4, 16, 2, seed=0)
    agent.set(batch=16, learning_starts=16)
    loss = agent.fit(agent.backend.build_optimizer(Adam(lr=1e-3), agent.param), 2, p=0)
    assert agent.total_episode == 2 and loss is not None
