"""A study has an identity (tuner/study/identity.py): a command pointed at another study's dir, or resuming a
study with another definition (env, budget, backend, ...), is one line naming the key and changes
nothing; ``tuner.resume=force`` continues deliberately; the same command resumes; a default-named
study with another definition gets its own study; a command that will run no trial says why;
storages that cannot outlive the process are refused."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import optuna
import pytest

from tests.tuner.conftest import NO_REEVAL, TINY, compose_cfg, run_app
from tests.tuner.study.test_study_settings import _driver
from tuner.common.errors import ConfigError
from tuner.config.schema import validate
from tuner.study.driver import Driver
from tuner.study.identity import ATTR, IDENTITY_FILE
from tuner.study.settings import tuner_settings

HOW = "start a new study with tuner.study_name=<new> or continue deliberately with tuner.resume=force"


def _hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file below ``folder`` (paths relative to it)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _one_line(out, start: str) -> str:
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith(start), out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    return lines[0]


def test_a_study_pointed_at_another_studys_dir_is_refused_and_changes_nothing(tmp_path) -> None:
    keep = ["tuner=optuna", *NO_REEVAL, "search=none", "tuner.pruner=none", "tuner.n_trials=1",
            "tuner.study_name=keep", *TINY]
    run_app(keep, cwd=str(tmp_path))
    folder = tmp_path / "studies" / "keep"
    record = json.loads((folder / IDENTITY_FILE).read_text())
    assert record["study_name"] == "keep" and record["storage"] == "../journal.log"
    assert record["definition"]["env.id"] == "CartPole-v1" and record["definition"]["budget.steps"] == 300
    before = _hashes(folder)
    assert {"study.json", "best_config.yaml", "trials/0000/result.json", IDENTITY_FILE} <= set(before)
    for extra in ([], ["tuner.resume=force"], ["env=acrobot"]):  # force does not hand over another study's dir
        out = run_app([*keep, "tuner.study_name=other", "tuner.study_dir=studies/keep", *extra], cwd=str(tmp_path),
                      check=False)
        line = _one_line(out, f"error: tuner.study_dir: {folder} holds study 'keep' (its {IDENTITY_FILE}); "
                              "study 'other' needs a dir of its own")
        assert _hashes(folder) == before, (extra, line)
    # a finder's study is refused there too
    out = run_app(["tuner=lr_finder", "tuner.study_dir=studies/keep", *TINY], cwd=str(tmp_path), check=False)
    _one_line(out, f"error: tuner.study_dir: {folder} holds study 'keep'")
    assert _hashes(folder) == before
    # the same command again resumes the full study, and says why it runs no trial
    again = run_app(keep, cwd=str(tmp_path))
    assert "note: study 'keep' already holds 1 finished trial (tuner.n_trials=1): no trial to run; raise " \
           "tuner.n_trials to add trials" in again.stdout
    assert _hashes(folder / "trials") == {k[len("trials/"):]: v for k, v in before.items() if k.startswith("trials/")}


def test_a_study_made_before_identities_keeps_its_dir(tmp_path) -> None:
    """A dir known only by its study.json (made before study_identity.json existed) is protected too."""
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "study.json").write_text(json.dumps({"study_name": "old"}))
    with pytest.raises(ConfigError, match=r"^tuner.study_dir: .* holds study 'old' \(its study.json\)"):
        _driver(tmp_path, [f"tuner.study_dir={folder}"])
    assert sorted(p.name for p in folder.iterdir()) == ["study.json"]


@pytest.mark.parametrize("override,message", [
    ("env=acrobot", f"env.id: study 's' was made with CartPole-v1, this command has Acrobot-v1; {HOW}"),
    ("budget.steps=400", f"budget.steps: study 's' was made with 300, this command has 400; {HOW}"),
    ("backend=tf", f"backend.name: study 's' was made with torch, this command has tf; {HOW}"),
    ("objective.source=train", f"objective.source: study 's' was made with eval, this command has train; {HOW}"),
    # interleaved trials report their seeds' combined curve to the pruner, sequential ones each seed's
    ("tuner.seed_order=interleaved",
     f"tuner.seed_order: study 's' was made with sequential, this command has interleaved; {HOW}"),
    ("+search.values.agent.tau='interval(0.1, 0.9)'",
     f"search.values.agent.tau: study 's' was made with (not searched), this command has interval(0.1, 0.9); {HOW}"),
])
def test_resuming_with_another_definition_is_refused_naming_the_key(tmp_path, override, message) -> None:
    base = ["tuner.n_trials=1", "tuner.pruner=none", "tuner.enqueue_defaults=false"]
    _driver(tmp_path, base).run()
    folder = tmp_path / "study"
    before = _hashes(folder)
    with pytest.raises(ConfigError) as info:
        _driver(tmp_path, [*base, override])
    assert str(info.value) == message
    assert _hashes(folder) == before  # not a byte of the study changed


def test_force_continues_and_the_same_command_resumes(tmp_path, capsys) -> None:
    base = ["tuner.n_trials=1", "tuner.pruner=none", "tuner.enqueue_defaults=false"]
    _driver(tmp_path, base).run()
    again = _driver(tmp_path, base)  # the same command: resumes, the study is full, and it says so
    again.run()
    note = "note: study 's' already holds 1 finished trial (tuner.n_trials=1): no trial to run"
    assert note in capsys.readouterr().out
    forced = _driver(tmp_path, ["tuner.n_trials=2", "tuner.pruner=none", "budget.steps=400", "tuner.resume=force"])
    assert "warning: tuner.resume=force: study 's' continues with budget.steps 300 -> 400" in capsys.readouterr().err
    forced.run()
    assert len(forced.study.trials) == 2 and forced.study.user_attrs[ATTR]["budget.steps"] == 400
    record = json.loads((tmp_path / "study" / IDENTITY_FILE).read_text())
    assert record["definition"]["budget.steps"] == 400
    assert [p["definition"]["budget.steps"] for p in record["previous"]] == [300]
    # from now on the study is defined by the forced command: it resumes, the first one is refused
    assert len(_driver(tmp_path, ["tuner.n_trials=2", "budget.steps=400"]).study.trials) == 2
    with pytest.raises(ConfigError, match=r"^budget.steps: study 's' was made with 400, this command has 300"):
        _driver(tmp_path, base)


def test_a_shared_storage_checks_the_study_whatever_the_study_dir(tmp_path) -> None:
    """Drivers on several machines share a storage (PostgreSQL; SQLite here), each with its own study
    dir: the definition recorded in the storage is checked."""
    db = f"tuner.storage='sqlite:///{tmp_path}/shared.db'"
    _driver(tmp_path, ["tuner.n_trials=1", "tuner.pruner=none", db]).run()
    other = ["tuner.n_trials=1", db, f"tuner.study_dir={tmp_path}/elsewhere"]
    with pytest.raises(ConfigError, match=r"^env.id: study 's' was made with CartPole-v1, this command has Acrobot-v1"):
        _driver(tmp_path, [*other, "env=acrobot"])
    assert len(_driver(tmp_path, other).study.trials) == 1  # the same definition from another dir resumes


def _default_named(tmp_path, overrides: list[str]) -> Driver:
    """A driver of a study under the default name (<agent>_<env>) in its default dir below ``tmp_path``."""
    overrides = ["tuner=optuna", "search=none", "tuner.pruner=none", *TINY, *overrides]
    cfg = validate(compose_cfg(overrides))
    return Driver(cfg, tuner_settings(cfg.tuner), compose_cfg, overrides)


def test_a_default_named_study_with_another_definition_gets_its_own(tmp_path, monkeypatch, capsys) -> None:
    """The documentation's commands one after another (another budget, another search space) each tune their
    own study instead of adding trials to the first one's; re-running one resumes it."""
    monkeypatch.chdir(tmp_path)
    first = _default_named(tmp_path, ["tuner.n_trials=1"])
    first.run()
    assert first.s.study_name == "dqn_CartPole-v1"
    base = tmp_path / "studies" / "dqn_CartPole-v1"
    before = _hashes(base)
    capsys.readouterr()
    second = _default_named(tmp_path, ["tuner.n_trials=1", "budget.steps=200"])
    name = second.s.study_name
    assert name.startswith("dqn_CartPole-v1-") and second.study_dir == str(tmp_path / "studies" / name)
    assert (f"note: study 'dqn_CartPole-v1' was made with budget.steps 300, this command has 200: this command "
            f"tunes its own study '{name}'") in capsys.readouterr().out
    second.run()
    assert _hashes(base) == before and len(second.study.trials) == 1
    third = _default_named(tmp_path, ["tuner.n_trials=1", "budget.steps=200"])  # the same command: same study
    assert third.s.study_name == name and len(third.study.trials) == 1
    forced = _default_named(tmp_path, ["tuner.n_trials=1", "budget.steps=200", "tuner.resume=force"])
    assert forced.s.study_name == "dqn_CartPole-v1"  # force continues the default-named study itself


@pytest.mark.parametrize("storage", ["sqlite:///:memory:", "sqlite://", "sqlite:///file::memory:?cache=shared",
                                     "sqlite:///file:x?mode=memory&uri=true"])
def test_storages_lost_at_exit_are_refused(storage) -> None:
    with pytest.raises(ConfigError, match=r"^tuner.storage: .* keeps the study in memory, lost when this process"):
        tuner_settings({"storage": storage})


def test_memory_storage_on_the_command_line_is_one_line(tmp_path) -> None:
    out = run_app(["tuner=optuna", "tuner.storage='sqlite:///:memory:'", *TINY], cwd=str(tmp_path), check=False)
    _one_line(out, "error: tuner.storage: 'sqlite:///:memory:' keeps the study in memory")
    assert not (tmp_path / "studies").exists()


def test_resume_setting_is_checked() -> None:
    with pytest.raises(ConfigError, match=r"^tuner.resume: 'always' must be auto or force"):
        tuner_settings({"resume": "always"})


def test_the_storage_attribute_holds_the_definition(tmp_path) -> None:
    driver = _driver(tmp_path, ["tuner.n_trials=1"])
    defn = driver.study.user_attrs[ATTR]
    assert defn["agent.name"] == "dqn" and defn["backend.name"] == "torch" and defn["tuner.n_seeds"] == 1
    assert "tuner.seed_order" not in defn  # sequential, as every study made before the key
    journal = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(
        os.path.join(tmp_path, "journal.log")))
    assert optuna.load_study(study_name="s", storage=journal).user_attrs[ATTR] == defn


@pytest.mark.parametrize("odd", [["agent.name"], "dqn", 5])
def test_a_stored_identity_that_is_not_one_is_refused_unless_forced(tmp_path, odd) -> None:
    """The storage's identity record is data: one of another shape (a hand-edited journal) is one line,
    as a broken study_identity.json is, and ``tuner.resume=force`` records this command's over it."""
    driver = _driver(tmp_path, ["tuner.n_trials=1"])
    driver.study.set_user_attr(ATTR, odd)
    with pytest.raises(ConfigError, match=rf"^identity: study 's' holds an identity record that is not one "
                                          rf"\({type(odd).__name__}\); {HOW}$"):
        _driver(tmp_path, ["tuner.n_trials=1"])
    _driver(tmp_path, ["tuner.n_trials=1", "tuner.resume=force"])
    assert _driver(tmp_path, ["tuner.n_trials=1"]).study.user_attrs[ATTR] == driver.identity.defn


def test_the_warm_start_model_is_part_of_the_identity(tmp_path) -> None:
    """A study started with init_from=<model.npz> records the model by path and SHA-256: the same study
    name without it, with another model, or with another file written over the same path is refused in
    one line and changes nothing; the same command resumes; a study made without it refuses one."""
    cold = ["tuner=optuna", *NO_REEVAL, "search=none", "tuner.pruner=none", "tuner.n_trials=1", *TINY]
    run_app([*cold, "tuner.study_name=cold"], cwd=str(tmp_path))
    trial = tmp_path / "studies" / "cold" / "trials" / "0000"
    model, other = tmp_path / "model.npz", tmp_path / "other.npz"
    model.write_bytes((trial / "model.npz").read_bytes())
    sha = hashlib.sha256(model.read_bytes()).hexdigest()
    warm = [*cold, "tuner.study_name=warm"]
    run_app([*warm, f"init_from={model}"], cwd=str(tmp_path))
    folder = tmp_path / "studies" / "warm"
    recorded = f"{model} (sha256 {sha})"
    assert json.loads((folder / IDENTITY_FILE).read_text())["definition"]["init_from"] == recorded
    result = json.loads((folder / "trials" / "0000" / "result.json").read_text())
    assert result["config"]["init_from"] == str(model)  # the trial did start from it
    other.write_bytes((folder / "trials" / "0000" / "model.npz").read_bytes())  # trained on from it: other weights
    before = _hashes(folder)
    # the same command (the model given as a relative path: the same file) resumes the study
    again = run_app([*warm, "init_from=model.npz"], cwd=str(tmp_path))
    assert "no trial to run" in again.stdout and _hashes(folder / "trials") == {
        k[len("trials/"):]: v for k, v in before.items() if k.startswith("trials/")}
    before = _hashes(folder)
    other_sha = hashlib.sha256(other.read_bytes()).hexdigest()
    assert other_sha != sha
    for extra, now in (([], "(unset)"), ([f"init_from={other}"], f"{other} (sha256 {other_sha})")):
        out = run_app([*warm, *extra], cwd=str(tmp_path), check=False)
        _one_line(out, f"error: init_from: study 'warm' was made with {recorded}, this command has {now}; {HOW}")
        assert _hashes(folder) == before, extra
    model.write_bytes(other.read_bytes())  # another model under the same path: another study
    out = run_app([*warm, f"init_from={model}"], cwd=str(tmp_path), check=False)
    _one_line(out, f"error: init_from: study 'warm' was made with {recorded}, this command has {model} "
                   f"(sha256 {other_sha}); {HOW}")
    assert _hashes(folder) == before
    cold_dir = tmp_path / "studies" / "cold"
    cold_before = _hashes(cold_dir)
    out = run_app([*cold, "tuner.study_name=cold", f"init_from={other}"], cwd=str(tmp_path), check=False)
    _one_line(out, f"error: init_from: study 'cold' was made with (unset), this command has {other} "
                   f"(sha256 {other_sha}); {HOW}")
    assert _hashes(cold_dir) == cold_before
