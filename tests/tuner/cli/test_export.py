"""Models that load anywhere: ``note_rl.load(run_dir).predict(obs)`` and ``note-tune export``.

Tiny runs of the tool (both backends, a discrete and a continuous agent each) are loaded back with
``note_rl.load``; their policies are exported as TorchScript / a TF SavedModel and read back in a fresh
Python process that never imports note_rl, which must act exactly as ``predict`` does on a batch of
observations.  A run dir whose config names code outside note_rl is refused without running it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

from tests.tuner.conftest import run_app

pytestmark = pytest.mark.slow

#: (backend, agent, env): a discrete and a continuous agent per backend
RUNS = {"torch_dqn": ("torch", "dqn", "cartpole"), "torch_sac": ("torch", "sac", "pendulum"),
        "tf_ppo": ("tf", "ppo", "cartpole"), "tf_td3": ("tf", "td3", "pendulum")}


def _overrides(backend: str, agent: str, env: str) -> list[str]:
    out = [f"agent={agent}", f"env={env}", f"backend={backend}", "backend.threads=1", "logger=none",
           "eval.episodes=1", "budget.steps=300", "agent.hidden_size=[16,16]", "agent.batch=32"]
    if agent == "ppo":
        return [*out, "agent.n_envs=1", "agent.n_steps=64", "agent.n_epochs=1"]
    return [*out, "agent.learning_starts=50", *(["agent.train_freq=16"] if agent == "dqn" else [])]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, str]:
    """Run dirs of tiny trainings (in this process, ~3-6 s each)."""
    from omegaconf import OmegaConf

    from tests.tuner.conftest import compose_cfg
    from tuner.config.schema import validate
    from tuner.run.train import run_training

    out = {}
    for name, spec in RUNS.items():
        folder = str(tmp_path_factory.mktemp(name))
        cfg = OmegaConf.to_container(validate(compose_cfg(_overrides(*spec))), resolve=True)
        run_training(cfg, folder)
        out[name] = folder
    return out


def _observations(env_id: str, n: int = 64, seed: int = 0) -> np.ndarray:
    """States of random-action episodes on the raw env (what a user feeds a loaded policy)."""
    env = gym.make(env_id)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    out = []
    while len(out) < n:
        out.append(obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset(seed=seed + len(out))
    return np.asarray(out, dtype=np.float32)


ENV_IDS = {"cartpole": "CartPole-v1", "pendulum": "Pendulum-v1"}

#: loads an exported policy with its framework only and prints its actions as JSON
READER = textwrap.dedent("""
    import json, sys
    import numpy as np
    fmt, path, obs_file = sys.argv[1:4]
    obs = np.load(obs_file)
    if fmt == "torchscript":
        import torch
        policy = torch.jit.load(path)
        actions = policy(torch.from_numpy(obs)).numpy()
        meta = {"policy.json": ""}
        torch.jit.load(path, _extra_files=meta)
        info = json.loads(meta["policy.json"])
    elif fmt == "onnx":
        import onnxruntime
        session = onnxruntime.InferenceSession(path)
        actions = session.run(["action"], {"obs": obs})[0]
        info = json.loads(session.get_modelmeta().custom_metadata_map["policy.json"])
    else:
        import tensorflow as tf
        policy = tf.saved_model.load(path)
        actions = policy(obs).numpy()
        served = policy.signatures["serving_default"](obs=tf.constant(obs))["action"].numpy()
        assert np.array_equal(served, actions)
        info = json.loads(open(policy.info.asset_path.numpy().decode()).read())
    assert "note_rl" not in sys.modules and "tuner" not in sys.modules, "the reader imported note_rl"
    print(json.dumps({"actions": actions.tolist(), "dtype": str(actions.dtype), "info": info}))
""")


def _read_back(fmt: str, path: str, obs: np.ndarray, tmp_path) -> dict:
    """Actions of the exported policy at ``path``, computed in a fresh process run outside the repo
    (cwd is a temporary folder, the repo off PYTHONPATH: note_rl cannot even be found there)."""
    obs_file = str(tmp_path / "obs.npy")
    np.save(obs_file, obs)
    env = dict(os.environ)
    # PYTHONPATH without the repo (entries that hold a note_rl package): note_rl cannot be imported there
    paths = [p for p in env.pop("PYTHONPATH", "").split(os.pathsep) if p and not os.path.isdir(os.path.join(p, "note_rl"))]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    proc = subprocess.run([sys.executable, "-c", READER, fmt, path, obs_file], capture_output=True, text=True,
                          cwd=str(tmp_path), env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _same(expected: np.ndarray, got: np.ndarray) -> None:
    assert got.shape == expected.shape
    if expected.dtype.kind == "i":
        assert got.dtype.kind == "i" and np.array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-5)


# every run in its backend's own format, and one of each backend in the other's
EXPORTS = [("torch_dqn", "torchscript"), ("torch_sac", "torchscript"), ("tf_ppo", "saved_model"),
           ("tf_td3", "saved_model"), ("torch_dqn", "saved_model"), ("tf_td3", "torchscript"),
           ("torch_dqn", "onnx"), ("torch_sac", "onnx"), ("tf_ppo", "onnx")]
SUFFIX = {"torchscript": ".pt", "onnx": ".onnx", "saved_model": ""}


@pytest.mark.parametrize(("run", "fmt"), EXPORTS)
def test_exported_policy_acts_as_predict_without_note_rl(runs, run, fmt, tmp_path) -> None:
    import note_rl

    if fmt == "onnx":  # the [onnx] extra, and onnxruntime to read it back ([dev] installs both)
        pytest.importorskip("onnx")
        pytest.importorskip("onnxruntime")
    agent = note_rl.load(runs[run])
    obs = _observations(ENV_IDS[RUNS[run][2]])
    expected, state = agent.predict(obs, deterministic=True)
    assert state is None and len(expected) == len(obs)
    path = note_rl.export(agent, str(tmp_path / f"policy{SUFFIX[fmt]}"), fmt)
    back = _read_back(fmt, path, obs, tmp_path)
    _same(expected, np.asarray(back["actions"]))
    discrete = RUNS[run][2] == "cartpole"
    assert back["info"]["action"] == ("discrete" if discrete else "continuous") and back["info"]["obs_dim"] == obs.shape[1]
    assert back["info"]["env"] == ENV_IDS[RUNS[run][2]] and back["info"]["format"] == fmt


@pytest.mark.parametrize("run", sorted(RUNS))
def test_predict_takes_one_observation_or_a_batch_in_the_envs_own_actions(runs, run) -> None:
    """SB3's habit: one observation -> one action, a batch -> a batch, ``(action, None)``; actions
    are the raw env's (Pendulum's [-2, 2], not the agent's internal [-1, 1]); a greedy episode on
    the raw env with ``predict`` scores what ``note_rl.evaluation.evaluate`` (the agent's own
    wrapped env) scores."""
    import note_rl
    from note_rl.evaluation import evaluate

    agent = note_rl.load(runs[run])
    env_id = ENV_IDS[RUNS[run][2]]
    obs = _observations(env_id, 8)
    batch, _ = agent.predict(obs)
    for i, o in enumerate(obs):
        one, state = agent.predict(o)
        assert state is None and np.shape(one) == np.shape(batch[i])
        _same(np.asarray(batch[i]), np.asarray(one))
    env = gym.make(env_id)
    assert all(env.action_space.contains(np.asarray(a, dtype=env.action_space.dtype)) for a in batch)
    obs_, _ = env.reset(seed=123)
    total, done = 0.0, False
    while not done:
        action, _ = agent.predict(obs_)
        obs_, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        done = terminated or truncated
    assert total == pytest.approx(evaluate(agent, 1, seed=123)[0], rel=1e-4, abs=1e-3)
    if RUNS[run][2] == "pendulum":
        assert np.max(np.abs(batch)) <= 2.0


def test_load_takes_a_run_dir_or_its_model_file(runs) -> None:
    import note_rl

    obs = _observations("CartPole-v1", 16)
    folder = runs["torch_dqn"]
    final = note_rl.load(folder).predict(obs)[0]
    assert np.array_equal(final, note_rl.load(os.path.join(folder, "model.npz")).predict(obs)[0])
    best = note_rl.load(os.path.join(folder, "best_eval_model.npz"))
    assert best.predict(obs)[0].shape == final.shape
    with pytest.raises(note_rl.loading.LoadError, match="no such file"):
        note_rl.load(os.path.join(folder, "nothing"))


PLANTED = "planted_export_target"


def test_load_refuses_a_run_dir_naming_other_code_and_runs_none_of_it(runs, tmp_path, monkeypatch) -> None:
    """A run dir someone else wrote, whose result.json names a class outside note_rl's allow-list:
    ``load`` refuses it in one line and the named module is never imported (its import would write
    a marker file); ``trust_code=True`` is the explicit opt-in that does import it."""
    import note_rl

    marker = tmp_path / "imported"
    (tmp_path / f"{PLANTED}.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass Agent: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    folder = tmp_path / "run"
    shutil.copytree(runs["torch_dqn"], folder)
    result = json.loads((folder / "result.json").read_text())
    result["config"]["agent"]["_target_"] = f"{PLANTED}.Agent"
    (folder / "result.json").write_text(json.dumps(result))
    with pytest.raises(note_rl.loading.LoadError) as err:
        note_rl.load(str(folder))
    message = str(err.value)
    assert "\n" not in message and "agent._target_" in message and "trust_code" in message
    assert not marker.exists() and PLANTED not in sys.modules

    out = run_app(["export", str(folder), "out=" + str(tmp_path / "p.pt")], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and out.stderr.strip().startswith("error: model: ") and "trust_code" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not marker.exists() and not (tmp_path / "p.pt").exists()

    with pytest.raises(note_rl.loading.LoadError):  # trusted: imported, then refused as no agent of the backend
        note_rl.load(str(folder), trust_code=True)
    assert marker.exists()


def test_export_command_writes_a_policy_and_refuses_bad_input_in_one_line(runs, tmp_path) -> None:
    folder = runs["tf_td3"]
    out = run_app(["export", folder, "format=torchscript", f"out={tmp_path / 'td3.pt'}"], cwd=str(tmp_path))
    assert f"as torchscript -> {tmp_path / 'td3.pt'}" in out.stdout and (tmp_path / "td3.pt").is_file()
    # the default: the backend's own format, beside the model
    out = run_app(["export", f"model={folder}/model.npz"], cwd=str(tmp_path))
    assert os.path.isfile(os.path.join(folder, "saved_model", "saved_model.pb"))
    bad = [(["format=pickle"], "error: format: 'pickle' is not one of torchscript, onnx, saved_model"),
           ([f"out={tmp_path / 'p.txt'}", "format=torchscript"], "error: out: "),
           ([f"out={tmp_path}", "format=torchscript"], "error: out: "),
           ([f"out={tmp_path / 'no' / 'p.pt'}"], "error: out: no such directory"),
           ([f"out={tmp_path / 'td3.pt'}", "format=saved_model"], "error: out: "),  # a file, not a SavedModel
           (["trust_code=maybe"], "error: trust_code: expected true or false"),
           (["bogus=1"], "error: export: unknown argument 'bogus=1'")]
    for extra, start in bad:
        proc = run_app(["export", folder, *extra], cwd=str(tmp_path), check=False)
        assert proc.returncode == 2 and proc.stderr.strip().startswith(start), (extra, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1
    proc = run_app(["export", str(tmp_path / "none")], cwd=str(tmp_path), check=False)
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: model: no such file {str(tmp_path / 'none')!r}"
    proc = run_app(["export", str(tmp_path)], cwd=str(tmp_path), check=False)
    assert proc.returncode == 2 and "is a directory without a model.npz" in proc.stderr
    assert (tmp_path / "td3.pt").is_file()  # a refused export leaves an earlier file alone
