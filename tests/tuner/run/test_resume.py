"""Checkpoints, resume and warm starts (tuner.run.checkpoints): real processes.

A DQN run killed with SIGKILL after it wrote a checkpoint, then ``note-tune resume=<run dir>``, ends
exactly where the uninterrupted run of the same seed ends: same final evaluation, same returns and
losses per episode, same evaluations, bit-identical final weights.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.tuner.conftest import REPO, TINY, run_app

pytestmark = pytest.mark.slow

# DQN on a CartPole that sleeps 4 ms per env step (tests/tuner/faulty_envs.py): slow enough to be killed
# mid-way; its env module is not note_rl's own, so resuming it needs trust_code=true
SLOW = [*TINY, "env.module=tests.tuner.faulty_envs", "env.id=Slow-v0", "backend.threads=1"]
RUN = [*SLOW, "budget.steps=1500", "checkpoint.every=300", "eval.every=500", "eval.episodes=2", "seed=3"]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), HYDRA_FULL_ERROR="0")


def _weights(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files if k != "__meta__"}


def _kill_after_checkpoint(args: list[str], cwd: Path, run_dir: Path, timeout: float = 240) -> None:
    """Start ``note-tune <args>``, SIGKILL its process group once a checkpoint exists (training still on)."""
    with open(cwd / "killed.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tuner", *args], cwd=str(cwd), env=_env(), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    state = run_dir / "checkpoint" / "state.npz"
    deadline = time.monotonic() + timeout
    try:
        while not state.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    assert state.exists(), (cwd / "killed.log").read_text()[-2000:]
    assert proc.returncode == -signal.SIGKILL, f"the run ended before it was killed ({proc.returncode})"


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_killed_run_resumes_to_the_uninterrupted_result(tmp_path: Path, backend: str) -> None:
    if backend == "tf":
        pytest.importorskip("tensorflow")
    run = [*RUN, f"backend={backend}"]
    run_app([*run, "hydra.run.dir=straight"], cwd=str(tmp_path))
    straight = json.loads((tmp_path / "straight" / "result.json").read_text())

    killed = tmp_path / "killed"
    _kill_after_checkpoint([*run, "hydra.run.dir=killed"], tmp_path, killed)
    assert not (killed / "result.json").exists()
    hydra_config = (killed / ".hydra" / "config.yaml").read_text()

    out = run_app(["resume=killed", "trust_code=true"], cwd=str(tmp_path))
    assert "resuming killed from its checkpoint" in out.stdout
    resumed = json.loads((killed / "result.json").read_text())

    assert 0 < resumed["resumed_at_step"] < 1500
    assert resumed["status"] == "complete"
    for key in ("final_eval_mean_return", "env_steps", "episodes", "gradient_steps", "returns", "losses",
                "evaluations", "best_eval_mean_return", "initial_weights_sha256"):
        assert resumed[key] == straight[key], key
    a, b = _weights(tmp_path / "straight" / "model.npz"), _weights(killed / "model.npz")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert (killed / ".hydra" / "config.yaml").read_text() == hydra_config  # the run's config is left alone
    assert not any(p.name.startswith(".state.npz.tmp") for p in (killed / "checkpoint").iterdir())


def _lines(out: subprocess.CompletedProcess) -> list[str]:
    return [line for line in out.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("args, key", [
    (["checkpoint.every=0"], "checkpoint.every"),
    (["checkpoint.every=100", "strategy=pool_network"], "checkpoint.every"),
])
def test_bad_checkpoint_settings(tmp_path: Path, args: list[str], key: str) -> None:
    out = run_app([*TINY, *args], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and _lines(out)[0].startswith(f"error: {key}:"), out.stderr


@pytest.mark.parametrize("args, key", [
    (["resume=empty"], "resume"),
    (["resume=nowhere"], "resume"),
    (["resume=empty", "seed=3"], "resume"),
    (["init_from=missing.npz"], "init_from"),
    (["init_from=empty"], "init_from"),
])
def test_bad_resume_and_init_from_are_one_line(tmp_path: Path, args: list[str], key: str) -> None:
    (tmp_path / "empty").mkdir()
    out = run_app([*args, *TINY], cwd=str(tmp_path), check=False)
    assert out.returncode == 2, out.stderr
    assert len(_lines(out)) == 1 and _lines(out)[0].startswith(f"error: {key}:"), out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"] and not any((tmp_path / "empty").iterdir())


def test_init_from_warm_starts_and_refuses_another_architecture(tmp_path: Path) -> None:
    run_app([*TINY, "hydra.run.dir=first"], cwd=str(tmp_path))
    model = _weights(tmp_path / "first" / "model.npz")
    digest = hashlib.sha256()
    for i in range(sum(k.startswith("param/") for k in model)):
        digest.update(np.ascontiguousarray(model[f"param/{i}"]).tobytes())

    for source in ("first", "first/model.npz"):  # a run dir or its model file
        run_app([*TINY, f"init_from={source}", "seed=5", "hydra.run.dir=warm"], cwd=str(tmp_path))
        warm = json.loads((tmp_path / "warm" / "result.json").read_text())
        assert warm["initial_weights_sha256"] == digest.hexdigest()
        assert warm["init_from"] == str(tmp_path / "first" / "model.npz")

    before = sorted(p.name for p in tmp_path.iterdir())
    out = run_app([*TINY, "agent.hidden_size=[8]", "init_from=first", "hydra.run.dir=bad"], cwd=str(tmp_path),
                  check=False)
    assert out.returncode == 2 and len(_lines(out)) == 1, out.stderr
    assert _lines(out)[0].startswith("error: init_from:") and "the agent's weight is" in _lines(out)[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_ppo_resume_continues_from_its_checkpoint(tmp_path: Path) -> None:
    """An on-policy run continues but not bit-identically (docs/guide/checkpoints.md): a
    checkpoint is taken when an episode ends, in the middle of a rollout of n_envs envs, and a simulator's state
    mid-episode is not something a checkpoint can hold, so the resumed run drops that rollout and restarts the
    other envs' episodes.  What holds: everything up to the checkpoint is the uninterrupted run's (its
    evaluations and episode returns), the budget is counted from the run's start, and the run completes."""
    run = [*SLOW, "agent=ppo", "agent.n_envs=2", "agent.n_steps=64", "agent.batch=64", "agent.n_epochs=2",
           "agent.hidden_size=[16]", "budget.steps=1500", "checkpoint.every=300", "eval.every=250",
           "eval.episodes=2", "seed=3"]
    run = [a for a in run if not a.startswith(("agent.train_freq", "agent.num_updates", "agent.learning_starts",
                                               "buffer.pool_size"))]
    run_app([*run, "hydra.run.dir=straight"], cwd=str(tmp_path))
    straight = json.loads((tmp_path / "straight" / "result.json").read_text())
    killed = tmp_path / "killed"
    _kill_after_checkpoint([*run, "hydra.run.dir=killed"], tmp_path, killed)
    run_app(["resume=killed", "trust_code=true"], cwd=str(tmp_path))
    resumed = json.loads((killed / "result.json").read_text())
    at = resumed["resumed_at_step"]
    assert resumed["status"] == "complete" and resumed["env_steps"] == straight["env_steps"]
    assert [e for e in resumed["evaluations"] if e["step"] <= at] == [e for e in straight["evaluations"]
                                                                      if e["step"] <= at]
    assert len(resumed["evaluations"]) == len(straight["evaluations"])  # those after it were made too
    assert resumed["returns"][:5] == straight["returns"][:5]  # episodes finished before the checkpoint


def test_a_tampered_or_truncated_checkpoint_is_one_line(tmp_path: Path) -> None:
    from note_rl.core.checkpoint import read_npz, write_npz

    run_app([*TINY, "checkpoint.every=100", "hydra.run.dir=run"], cwd=str(tmp_path))
    state = tmp_path / "run" / "checkpoint" / "state.npz"
    meta, arrays = read_npz(str(state))
    meta["run"]["episode"] = "many"
    write_npz(str(state), meta, arrays)
    out = run_app(["resume=run"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and _lines(out) == [f"error: resume: {state}: run metadata 'episode' is str"], out.stderr
    state.write_bytes(state.read_bytes()[:1000])
    out = run_app(["resume=run"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and len(_lines(out)) == 1 and "not a note_rl checkpoint" in out.stderr, out.stderr


def test_torch_backend_generator_state_round_trips() -> None:
    torch = pytest.importorskip("torch")
    from note_rl.backends import get_backend

    backend = get_backend("torch")
    state = backend.rng_state()
    assert state is not None and state.dtype == np.uint8
    first = torch.rand(3)
    backend.set_rng_state(state)
    assert torch.equal(torch.rand(3), first)
