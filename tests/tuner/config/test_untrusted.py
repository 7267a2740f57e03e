"""A model folder is data: ``eval`` / ``play`` / ``reevaluate`` rebuild agents only from note_rl's own
classes (unless ``trust_code=true``), read its files within bounds, and check checkpoint arrays
against the agent before any framework sees them; every refusal is one line, exit 2."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from tests.tuner.conftest import TINY, run_app
from tuner.cli import subcommands
from tuner.config.untrusted import MAX_DEPTH, UntrustedFileError, check_code_refs, read_json, read_yaml


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> str:
    """One tiny trained run (model.npz + result.json), copied by each test that changes it."""
    from omegaconf import OmegaConf

    from tests.tuner.conftest import compose_cfg
    from tuner.config.schema import validate
    from tuner.run.train import run_training

    folder = tmp_path_factory.mktemp("run")
    cfg = OmegaConf.to_container(validate(compose_cfg([*TINY, "eval.episodes=1"])), resolve=True)
    run_training(cfg, str(folder))
    return str(folder)


def _copy(run_dir: str, tmp_path) -> tuple[str, dict]:
    folder = tmp_path / "run"
    shutil.copytree(run_dir, folder)
    result = json.loads((folder / "result.json").read_text())
    return str(folder), result


def _eval(capsys, *args: str) -> tuple[int, str]:
    code = subcommands.main("eval", list(args))
    err = capsys.readouterr().err.strip()
    return code, err


def _one_line(code: int, err: str, *needles: str) -> None:
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)


def test_a_result_json_naming_a_command_runs_nothing(run_dir, tmp_path) -> None:
    """The reported hole, end to end in a real process: ``env.factory: subprocess.run`` with a command
    in ``env.kwargs`` is refused before anything is imported or built; the command never runs."""
    folder, result = _copy(run_dir, tmp_path)
    marker = tmp_path / "pwned"
    result["config"]["env"].update(factory="subprocess.run", kwargs={"args": ["touch", str(marker)]})
    with open(os.path.join(folder, "result.json"), "w") as f:
        json.dump(result, f)
    for command in ("eval", "play"):
        out = run_app([command, f"model={folder}/model.npz"], cwd=str(tmp_path), check=False)
        _one_line(out.returncode, out.stderr.strip(), "result.json: env.factory: 'subprocess.run' is not one of "
                  "note_rl's own classes", "trust_code=true")
        assert not marker.exists()


@pytest.mark.parametrize("where,ref", [
    ("agent._target_", "os.system"),
    ("agent.policy._target_", "subprocess.Popen"),
    ("optimizer._target_", "builtins.exec"),
    ("buffer._target_", "note_rl.buffers.compute_gae_evil"),
    ("env.module", "antigravity"),
])
def test_every_code_reference_is_allow_listed(run_dir, tmp_path, capsys, where, ref) -> None:
    folder, result = _copy(run_dir, tmp_path)
    node = result["config"]
    *path, last = where.split(".")
    for key in path:
        if not isinstance(node.get(key), dict):  # e.g. an agent without a policy node
            node[key] = {"_target_": "note_rl.policy.LinearEpsGreedyPolicy"}
        node = node[key]
    node[last] = ref
    (tmp_path / "run" / "result.json").write_text(json.dumps(result))
    code, err = _eval(capsys, f"model={folder}/model.npz")
    _one_line(code, err, f"{where}: {ref!r} is not one of note_rl's own classes")


def test_a_gymnasium_id_that_imports_a_module_is_refused(run_dir, tmp_path, capsys) -> None:
    folder, result = _copy(run_dir, tmp_path)
    (tmp_path / "evil_env_module.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'w').close()\n")
    result["config"]["env"]["id"] = "evil_env_module:Evil-v0"
    (tmp_path / "run" / "result.json").write_text(json.dumps(result))
    code, err = _eval(capsys, f"model={folder}/model.npz")
    _one_line(code, err, "env.id: 'evil_env_module:Evil-v0' would import module 'evil_env_module'")
    assert not (tmp_path / "imported").exists()


def test_resolver_interpolations_and_alias_bombs_are_refused(run_dir, tmp_path, capsys) -> None:
    folder, result = _copy(run_dir, tmp_path)
    os.remove(os.path.join(folder, "result.json"))
    import yaml

    cfg = result["config"]
    cfg["env"]["id"] = "${oc.env:HOME}"  # would read the environment into an error line
    (tmp_path / "run" / "config.yaml").write_text(yaml.safe_dump(cfg))
    code, err = _eval(capsys, f"model={folder}/model.npz")
    _one_line(code, err, "config.yaml: env.id: resolver interpolations")
    # a "billion laughs": ten levels of ten aliases, 10**10 strings once expanded
    bomb = "a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol','lol']\n"
    for i in range(1, 10):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        bomb += f"{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
    (tmp_path / "run" / "config.yaml").write_text(bomb)
    code, err = _eval(capsys, f"model={folder}/model.npz")
    _one_line(code, err, "config.yaml: YAML anchors and aliases are not accepted")
    # interpolations that double at every level
    doubling = {"x0": "lol"} | {f"x{i}": "${x%d}${x%d}" % (i - 1, i - 1) for i in range(1, 40)}
    (tmp_path / "run" / "config.yaml").write_text(yaml.safe_dump(doubling))
    code, err = _eval(capsys, f"model={folder}/model.npz")
    _one_line(code, err, "more interpolations than a saved run config holds")


@pytest.mark.parametrize("content,needle", [
    (b"[1, 2, 3]", "result.json: config: missing"),
    (b"\xff\xfe\x00garbage", "result.json: not UTF-8 text"),
    (b"[" * 100_000 + b"]" * 100_000, "nested more than"),
    (b'{"config": ' + b'{"a": ' * (MAX_DEPTH + 5) + b"1" + b"}" * (MAX_DEPTH + 6), "nested more than 64 levels"),
    (b'{"config": {"seed": 0}}', "result.json: "),
    (b"{not json", "result.json: not JSON"),
])
def test_malformed_result_json_is_one_line(run_dir, tmp_path, capsys, content, needle) -> None:
    folder, _ = _copy(run_dir, tmp_path)
    (tmp_path / "run" / "result.json").write_bytes(content)
    code, err = _eval(capsys, f"model={folder}/model.npz")
    _one_line(code, err, needle)


def test_configs_that_do_not_build_are_one_line(run_dir, tmp_path, capsys) -> None:
    folder, result = _copy(run_dir, tmp_path)
    cases = [
        (lambda c: c.pop("agent"), "agent"),
        (lambda c: c["env"]["kwargs"].update(gravity_well=3), "env: cannot make 'CartPole-v1'"),
        (lambda c: c["env"].update(id="NoSuchEnv-v9"), "env: cannot make 'NoSuchEnv-v9'"),
        (lambda c: c["backend"].update(threads=100_000), "backend.threads"),
        (lambda c: c["agent"].update(gamma="high"), "agent.gamma"),
    ]
    for change, needle in cases:
        cfg = json.loads(json.dumps(result))
        change(cfg["config"])
        (tmp_path / "run" / "result.json").write_text(json.dumps(cfg))
        code, err = _eval(capsys, f"model={folder}/model.npz")
        _one_line(code, err, needle)


def test_checkpoint_arrays_are_checked_against_the_agent(run_dir, tmp_path, capsys) -> None:
    """A (4, 64) array where the agent has (64, 4), or float64 where it has float32, is refused whole
    before anything is assigned (the framework would have reshaped or cast it silently)."""
    from note_rl.core.checkpoint import read_npz, write_npz

    folder, _ = _copy(run_dir, tmp_path)
    model = os.path.join(folder, "model.npz")
    meta, arrays = read_npz(model)
    name = next(k for k, v in arrays.items() if k.startswith("param/") and v.ndim == 2)
    for bad, needle in ((arrays[name].T.copy(), "array, the agent's weight is"),
                        (arrays[name].astype(np.float64), "float64 array, the agent's weight is")):
        write_npz(model, meta, {**arrays, name: bad})
        code, err = _eval(capsys, f"model={model}")
        _one_line(code, err, "does not load into this agent", f"member '{name}'", needle)


def test_trust_code_lets_a_users_own_classes_build(run_dir, tmp_path, capsys, monkeypatch) -> None:
    """With ``trust_code=true`` the run's own code references are imported, as for a config on the
    command line: here a user's env factory module on the path."""
    folder, result = _copy(run_dir, tmp_path)
    (tmp_path / "my_envs.py").write_text("import gymnasium as gym\n\ndef cartpole(**kw):\n"
                                         "    return gym.make('CartPole-v1', **kw)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result["config"]["env"]["factory"] = "my_envs.cartpole"
    (tmp_path / "run" / "result.json").write_text(json.dumps(result))
    code, err = _eval(capsys, f"model={folder}/model.npz")
    _one_line(code, err, "'my_envs.cartpole' is not one of note_rl's own classes")
    code = subcommands.main("eval", [f"model={folder}/model.npz", "episodes=1", "seeds=0", "trust_code=true"])
    captured = capsys.readouterr()
    assert code == 0 and "dqn on CartPole-v1: mean" in captured.out, captured.err


def test_eval_and_play_arguments_and_output_paths(run_dir, tmp_path, capsys) -> None:
    folder, _ = _copy(run_dir, tmp_path)
    model = f"model={folder}/model.npz"
    (tmp_path / "adir.gif").mkdir()
    os.mkfifo(tmp_path / "fifo.npz")
    cases = [("eval", [model, "episodes=0"], "episodes: expected positive integers"),
             ("eval", [model, "seeds=18446744073709551616"], "seeds: expected non-negative integers"),
             ("eval", [model, "trust_code=maybe"], "trust_code: expected true or false"),
             ("eval", [f"model={tmp_path / 'fifo.npz'}"], "is not a regular file"),
             ("play", [model, f"out={tmp_path / 'adir.gif'}"], "is a directory"),
             ("play", [model, f"out={tmp_path / ('x' * 300)}.gif"], "longer than the file system allows"),
             ("play", [model, "fps=0"], "fps: expected positive integers"),
             ("play", [model, "max_steps=0"], "max_steps: expected positive integers")]
    for command, args, needle in cases:
        code = subcommands.main(command, args)
        _one_line(code, capsys.readouterr().err.strip(), needle)


def test_a_failed_recording_keeps_the_earlier_file(run_dir, tmp_path, capsys, monkeypatch) -> None:
    """A write that fails (here: the disk is full when the frames are saved) is one line naming
    ``out``; an earlier recording under that name is kept and no partial file is left."""
    import errno

    from note_rl.core import plots

    folder, _ = _copy(run_dir, tmp_path)
    out = tmp_path / "episode.gif"
    out.write_bytes(b"earlier recording")

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(plots, "animate_agent", full_disk)
    code = subcommands.main("play", [f"model={folder}/model.npz", f"out={out}", "max_steps=5"])
    _one_line(code, capsys.readouterr().err.strip(), f"out: cannot write {out} (No space left on device)")
    assert out.read_bytes() == b"earlier recording" and sorted(p.name for p in tmp_path.iterdir()) == \
        ["episode.gif", "run"]


def test_reevaluate_refuses_a_trial_config_naming_code(tmp_path, capsys) -> None:
    """A study folder someone sent: its trials' config.yaml files are data for ``note-tune
    reevaluate`` too."""
    run_app([*TINY, "tuner=optuna", "tuner.n_trials=1", "tuner.reevaluate.top_k=0", "tuner.seeds.test=0",
             f"tuner.study_dir={tmp_path / 'study'}"], cwd=str(tmp_path))
    config = next((tmp_path / "study" / "trials").glob("*/config.yaml"))
    text = config.read_text()
    assert "_target_: note_rl.agents." in text
    config.write_text(text.replace("note_rl.buffers.ReplayBuffer", "os.system", 1))
    before = (tmp_path / "journal.log").read_bytes()
    code = subcommands.main("reevaluate", [f"study_dir={tmp_path / 'study'}", "top_k=1", "seeds=1"])
    _one_line(code, capsys.readouterr().err.strip(), "trial 0:", "buffer._target_: 'os.system' is not one of")
    assert (tmp_path / "journal.log").read_bytes() == before


def test_bounded_readers_by_hand(tmp_path) -> None:
    path = tmp_path / "f.json"
    path.write_text('{"a": [1, {"b": 2}]}')
    assert read_json(str(path)) == {"a": [1, {"b": 2}]}
    with pytest.raises(UntrustedFileError, match="20 bytes, more than the 10 "):
        read_json(str(path), limit=10)
    path.write_text("a: 1\nb: [x, y]\n")
    assert read_yaml(str(path)) == {"a": 1, "b": ["x", "y"]}
    path.write_text("a: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(UntrustedFileError, match="not YAML"):
        read_yaml(str(path))
    # names of the project's own classes pass; a public name of a project module that is not a
    # class of its __all__ does not
    check_code_refs({"agent": {"_target_": "note_rl.agents.torch.DQN",
                               "policy": {"_target_": "note_rl.policy.LinearEpsGreedyPolicy"}},
                     "buffer": {"_target_": "note_rl.buffers.PrioritizedReplayBuffer"},
                     "env": {"id": "CartPole-v1", "factory": None, "module": "note_rl.goal_envs"}}, "x")
    # the per-algorithm files behind note_rl.agents.<backend> (issue 33's one folder per algorithm)
    for target in ("note_rl.agents.dqn.torch.DQN", "note_rl.agents.sac.keras.SAC", "note_rl.agents.tf.PPO"):
        check_code_refs({"agent": {"_target_": target}}, "x")
    for cfg in ({"agent": {"_target_": "note_rl.agents.torch.os"}}, {"buffer": {"_target_": "note_rl.core.checkpoint.os"}},
                {"agent": {"_target_": "note_rl.agents.evil.DQN"}}, {"agent": {"_target_": "note_rl.agents.dqn.torch.os"}},
                {"agent": {"_target_": "note_rl.agents.dqn.torch.SAC"}}, {"agent": {"_target_": "note_rl.agents.dqn.tf.DQN"}},
                {"agent": {"_target_": "note_rl.agents.common.torch.DQN"}}):
        with pytest.raises(UntrustedFileError, match="is not one of note_rl's own classes"):
            check_code_refs(cfg, "x")


def test_report_output_paths_are_one_line(tmp_path, capsys) -> None:
    """``note-tune report out=...``: a file, a folder under a file, an over-long name, and a write that
    fails (full disk) are one line naming ``out``; the study is unchanged."""
    import errno

    import optuna
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    from tuner.report import report as report_module

    journal = tmp_path / "study" / "journal.log"  # a study dir with a journal of its own
    journal.parent.mkdir()
    study = optuna.create_study(study_name="s", direction="maximize",
                                storage=JournalStorage(JournalFileBackend(str(journal))))
    for x in (0.1, 0.5, 0.9):
        study.enqueue_trial({"x": x})
        study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=1)
    capsys.readouterr()  # Optuna's own log lines of the set-up
    before = journal.read_bytes()
    (tmp_path / "afile").write_text("x")
    base = [f"study_dir={journal.parent}", "wandb=none"]
    for out, needle in ((tmp_path / "afile", "is a file"), (tmp_path / "afile" / "sub", "is not a writable directory"),
                        (tmp_path / ("d" * 300), "longer than the file system allows")):
        code = subcommands.main("report", [*base, f"out={out}"])
        _one_line(code, capsys.readouterr().err.strip(), "error: out: ", needle)

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "rep" / "report.md"))

    original = report_module.write_report
    report_module.write_report = full_disk
    try:
        code = subcommands.main("report", [*base, f"out={tmp_path / 'rep'}"])
    finally:
        report_module.write_report = original
    _one_line(code, capsys.readouterr().err.strip(), "error: out: cannot write the report (No space left on device")
    assert journal.read_bytes() == before
    assert subcommands.main("report", [*base, f"out={tmp_path / 'rep'}"]) == 0
    assert (tmp_path / "rep" / "report.md").exists()
