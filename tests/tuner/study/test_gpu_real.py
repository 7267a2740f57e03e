"""Issue 37: the GPU paths on a real GPU.  Skipped where torch sees no CUDA device (CI, this 2-core
machine); ``bench/gpu_check.sh`` runs them on a GPU machine: four trials sharing one GPU, the
compiled update step (plain and with CUDA graphs) training on it, and torch.distributed over NCCL."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device on this machine: these run where one is")

from tests.tuner.conftest import NO_REEVAL, TINY, run_app  # noqa: E402
from tests.tuner.study.test_workers import SPACE, _journal_study  # noqa: E402


def test_four_trials_share_one_gpu(tmp_path) -> None:
    """``tuner.gpus_per_trial=0.25`` with 4 jobs: the four trials run at once on GPU 0, each capped
    at a quarter of its memory, and each trained on CUDA (result.json's device)."""
    steps = ["budget.steps=2000", "agent.learning_starts=200"]
    run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=quarter", "tuner.n_trials=4", "tuner.n_jobs=4",
             "tuner.gpus_per_trial=0.25", "backend.device=auto", *SPACE, *TINY, *steps],
            cwd=str(tmp_path), env={"CUDA_VISIBLE_DEVICES": "0"})
    study_dir = tmp_path / "studies" / "quarter"
    study = _journal_study(study_dir, "quarter")
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 4
    assert [t.user_attrs["gpus"] for t in study.trials] == ["0"] * 4
    for t in study.trials:
        trial_dir = study_dir / "trials" / f"{t.number:04d}"
        assert "CUDA_VISIBLE_DEVICES=0, memory fraction 0.25" in (trial_dir / "trial.log").read_text()
        assert json.loads((trial_dir / "result.json").read_text())["device"].startswith("cuda")
    # all four were running together: the last to start started before the first to end ended
    assert max(t.datetime_start for t in study.trials) < min(t.datetime_complete for t in study.trials)


@pytest.mark.parametrize("algo", ["dqn", "ppo", "sac"])
@pytest.mark.parametrize("mode", [True, "reduce-overhead"])
def test_compiled_update_trains_on_the_gpu(algo, mode) -> None:
    """``jit_compile`` on CUDA compiles (no eager fallback), steps its optimizer on the GPU, and its
    updates match the eager step's to float32 rounding (SAC: the compiled graph draws its
    reparameterisation noise from Inductor's own generator, so its weights only have to move)."""
    from note_rl.agents.torch import DQN, PPO, SAC

    def build():
        if algo == "dqn":
            a = DQN(4, [64], 2, seed=0, device="cuda")
            a.set(pool_size=2000, batch=32, learning_starts=64, train_freq=4, seed=0)
        elif algo == "ppo":
            a = PPO(4, [64], 2, n_steps=64, n_envs=2, n_epochs=2, seed=0, device="cuda")
            a.set(batch=64, seed=0)
        else:
            a = SAC(hidden_size=[64], env="Pendulum-v1", seed=0, device="cuda")
            a.set(pool_size=2000, batch=32, learning_starts=64, seed=0)
        return a

    runs = []
    for jit in (False, mode):
        agent = build()
        groups = agent.param if isinstance(agent.param[0], (list, tuple)) else [agent.param]
        optimizers = [torch.optim.Adam(g, lr=1e-3) for g in groups]
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager warns
            agent.fit(optimizers if len(optimizers) > 1 else optimizers[0], None, steps=256, p=0, jit_compile=jit)
        assert agent.batch_counter > 0
        assert all(p.device.type == "cuda" for g in groups for p in g)
        runs.append((agent.compile_time, [p.detach().cpu().numpy() for g in groups for p in g]))
    (eager_time, eager_w), (compile_time, compiled_w) = runs
    assert eager_time is None and compile_time is not None and compile_time > 0
    for a, b in zip(eager_w, compiled_w, strict=True):
        assert np.isfinite(b).all()
        if algo != "sac":
            np.testing.assert_allclose(b, a, atol=2e-3)  # 256 env steps of updates; kernels differ in rounding


def test_ddp_over_nccl_on_the_gpu() -> None:
    """torch.distributed over NCCL (one replica per GPU; one GPU here, so one replica): six Adam
    updates on CUDA equal one process's on the CPU to float32 rounding."""
    from note_rl.distributed import launch
    from tests.note_rl import ddp_replicas

    (replica,) = launch(ddp_replicas.updates, nprocs=1, args=(1, None, "cuda"), backend="nccl")
    single = ddp_replicas.updates(None, 1, None)
    for a, b in zip(single["weights"], replica["weights"], strict=True):
        np.testing.assert_allclose(b, a, atol=1e-4)
    if torch.cuda.device_count() >= 2:
        replicas = launch(ddp_replicas.replica_updates, nprocs=2, args=("cuda",), backend="nccl")
        for a, b in zip(replicas[0]["None"]["weights"], replicas[1]["None"]["weights"], strict=True):
            np.testing.assert_array_equal(a, b)


def test_result_records_the_device(tmp_path) -> None:
    out = run_app(["backend.device=cuda", *TINY], cwd=str(tmp_path))
    result = next(tmp_path.glob("outputs/*/*/result.json"))
    assert json.loads(result.read_text())["device"] == "cuda", out.stdout
    assert os.path.exists(result.parent / "model.npz")


def test_nccl_only_with_a_gpu_per_replica() -> None:
    from note_rl.backends.torch_ddp import default_backend

    on_gpu = [torch.zeros(1, device="cuda")]
    assert default_backend(on_gpu, {"WORLD_SIZE": "1"}) == "nccl"
    many = str(torch.cuda.device_count() + 1)
    assert default_backend(on_gpu, {"WORLD_SIZE": many}) == "gloo"  # NCCL refuses two ranks on one GPU
