"""A corpus of bad command-line values: each is exit status 2 and exactly one line naming its key, with
no traceback, and leaves an existing study byte-for-byte unchanged.  The bulk runs the real console
entry point (:func:`tuner.cli.app.main`, what ``note-tune`` calls) with ``sys.argv`` set, all cases in
one child interpreter (:mod:`tests.tuner.cli_batch`), so that ~200 cases take one start-up, not one
each; a few run as separate real subprocesses."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
from omegaconf import OmegaConf

from tests.tuner.conftest import NO_REEVAL, REPO, TINY, compose_cfg, journal_of, run_app
from tuner.config.bounds import AT_MOST, CHOICES, NON_NEGATIVE, POSITIVE, UNIT

AGENTS = {"dqn": [], "ppo": [], "td3": ["env=pendulum"], "ddpg": ["env=pendulum"], "sac": ["env=pendulum"]}
_NOWHERE = object()
# every corpus command runs against the existing study "keep"; should a case ever pass validation,
# these keep its study short (a case's own override comes last and wins)
STUDY = ["tuner=optuna", "tuner.study_name=keep", "tuner.n_trials=1", *NO_REEVAL, "budget.steps=256"]


@functools.lru_cache(maxsize=None)
def _defaults(agent: str):
    return compose_cfg([f"agent={agent}", *AGENTS[agent]])


def _base(key: str) -> list[str] | None:
    """Overrides of the first agent whose config has ``key``."""
    for agent, extra in AGENTS.items():
        if OmegaConf.select(_defaults(agent), key, default=_NOWHERE) is not _NOWHERE:
            return [f"agent={agent}", *extra]
    return None


def _cases() -> list[tuple[str, str]]:
    cases = [(k, v) for k in POSITIVE for v in ("0", "-1")]
    cases += [(k, "-1") for k in NON_NEGATIVE]
    cases += [(k, v) for k, (low, high, _) in UNIT.items() for v in (str(low - 0.5), str(high + 0.5))]
    cases += [(k, "bogus") for k in CHOICES]
    cases += [(k, str(v + 1)) for k, v in AT_MOST.items()]  # seeds of 2**32 and more, backend.threads > 1024
    cases += [("seed", str(2**64)), ("backend.threads", "100000")]  # a traceback / a segfault before
    cases += [(k, v) for k in ("optimizer.lr", "agent.gamma", "agent.max_grad_norm", "agent.lr", "eval.every",
                               "agent.tau", "agent.lam", "agent.clip", "agent.entropy_coef", "agent.vf_coef",
                               "optimizer.weight_decay", "optimizer.eps", "agent.target_policy_noise")
              for v in ("nan", "inf", "-inf")]
    cases += [("agent.hidden_size", "[1000000,1000000]"), ("buffer.pool_size", "100000000000"),
              ("agent.hidden_size", "[0]"), ("agent.hidden_size", "[]"), ("seed", "${seed}"),
              ("agent.gamma", "abc"), ("budget.steps", "1.5e3x"), ("agent.batch", "[1,2]")]
    return cases


CASES = [(k, v) for k, v in _cases() if _base(k) is not None]


def run_batch(cases: list[dict[str, Any]], folder: Path, timeout: float = 1200) -> list[dict[str, Any]]:
    """Run ``cases`` (see :mod:`tests.tuner.cli_batch`) through ``tuner.cli.app.main`` in one child
    interpreter; one result per case.  ``timeout`` fails a batch that hangs instead of hanging."""
    src, dst = folder / "cases.json", folder / "results.json"
    src.write_text(json.dumps(cases))
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-m", "tests.tuner.cli_batch", str(src), str(dst)], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(dst.read_text())


def _case(home: Path, args: list[str], study: bool = True, env: dict[str, str | None] | None = None) -> dict:
    run_dir = home / "run"
    full = [*STUDY, f"hydra.run.dir={run_dir}", *args] if study else list(args)
    return {"args": full, "cwd": str(home), "watch": str(home / "studies"), "run_dir": str(run_dir),
            "env": {"HYDRA_FULL_ERROR": "0", "OPTUNA_STORAGE": None, **(env or {})}}


def assert_refused(result: dict[str, Any], key: str, args: list[str]) -> str:
    """Exit 2, one line starting ``error: <key>``, no traceback, the study unchanged, no run dir left."""
    lines = result["err"].strip().splitlines()
    assert result["code"] == 2 and len(lines) == 1 and lines[0].startswith(f"error: {key}"), (args, result)
    assert "Traceback" not in result["out"] + result["err"], (args, result)
    assert result["unchanged"], args
    assert not result["run_dir_left"], args  # the run dir Hydra made is removed again
    return lines[0]


@pytest.fixture(scope="module")
def _study_home(tmp_path_factory) -> Path:
    """A folder holding an existing study ``studies/keep`` (journal with a finished trial, outputs)."""
    home = tmp_path_factory.mktemp("home")
    folder = home / "studies" / "keep"
    (folder / "trials" / "0000").mkdir(parents=True)
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal_of(folder)))
    study = optuna.create_study(study_name="keep", storage=storage, direction="maximize")
    study.set_user_attr("agent", "dqn")
    gamma = optuna.distributions.CategoricalDistribution([0.9, 0.99])
    study.add_trial(optuna.trial.create_trial(params={"agent.gamma": 0.9}, distributions={"agent.gamma": gamma},
                                              value=20.0))
    (folder / "study.json").write_text(json.dumps({"study_name": "keep", "n_complete": 1}))
    (folder / "trials" / "0000" / "result.json").write_text("{}")
    (folder.parent / "journal.log.driver-lock").touch()  # a real study's drivers left their lock file
    return home


@pytest.fixture(scope="module")
def _corpus(_study_home, tmp_path_factory) -> dict[tuple[str, ...], dict[str, Any]]:
    """Every parametrized case below, run once per test process in one child interpreter."""
    commands = [[*_base(k), f"{k}={v}"] for k, v in CASES] + [[f"tuner.{k}={v}"] for k, v in TUNER] + \
        [list(args) for args, _ in OTHER]
    results = run_batch([_case(_study_home, args) for args in commands], tmp_path_factory.mktemp("corpus"))
    return {tuple(args): result for args, result in zip(commands, results)}


def refused(corpus: dict[tuple[str, ...], dict[str, Any]], args: list[str], key: str) -> str:
    return assert_refused(corpus[tuple(args)], key, args)


@pytest.mark.parametrize("key,value", CASES, ids=[f"{k}={v}" for k, v in CASES])
def test_bad_value_is_one_line_naming_its_key(key, value, _corpus) -> None:
    refused(_corpus, [*_base(key), f"{key}={value}"], key.split("[")[0])


TUNER = [("percentile", "150"), ("percentile", "-1"), ("n_warmup_steps", "-1"), ("timeout", "-1"),
         ("timeout", "0"), ("max_failures", "-1"), ("n_startup_trials", "-1"), ("sampler_seed", "-1"),
         ("n_trials", "0"), ("n_jobs", "0"), ("n_seeds", "0"), ("report_every", "0"),
         ("max_total_trials", "0"), ("max_runs", "0"), ("trial_timeout", "-5"), ("trial_memory_mb", "0"), ("sampler", "bogus"),
         ("pruner", "bogus"), ("direction", "sideways"), ("aggregation", "max"), ("study_name", "../x"),
         ("study_name", "''"), ("max_cost_ratio", "0.5"), ("reevaluate.top_k", "-1"), ("reevaluate.episodes", "0"),
         ("reevaluate.seeds", "0"), ("reevaluate.timeout", "-1"), ("reevaluate.n_jobs", "0"),
         ("reevaluate.aggregation", "max"), ("storage", "mysql://u@h/db"), ("storage", "sqlite://"), ("storage", "'sqlite:///:memory:'"),
         ("n_trials", "many"), ("resume", "always")]


@pytest.mark.parametrize("key,value", TUNER, ids=[f"{k}={v}" for k, v in TUNER])
def test_bad_study_setting_is_one_line_naming_its_key(key, value, _corpus) -> None:
    refused(_corpus, [f"tuner.{key}={value}"], f"tuner.{key}")


# overrides that are not one key=value of the schema's lists
OTHER = [(["+env.kwargs.foo=1"], "env.kwargs.foo"),
         (["+env.kwargs.foo=1", "env=pendulum", "agent=sac"], "env.kwargs.foo"),
         (["tuner.direction=minimize"], "tuner.direction: study 'keep' was created to maximize"),
         (["agent=ppo"], "agent: study 'keep' tunes agent 'dqn'"),
         # a first rollout longer than budget.steps (STUDY's 256) ran past the budget
         (["agent=ppo", "agent.n_steps=512", "agent.n_envs=1"], "agent.n_steps: one rollout (agent.n_steps=512 x "
          "agent.n_envs=1 = 512 env steps) is longer than budget.steps=256"),
         (["agent=ppo", "agent.n_envs=16"], "agent.n_steps: one rollout (agent.n_steps=32 x agent.n_envs=16 = 512"),
         (["agent=a2c", "agent.n_steps=64"], "agent.n_steps: one rollout (agent.n_steps=64 x agent.n_envs=8"),
         # search ranges reaching outside a key's schema bound: every trial sampling there would FAIL
         (["search.values.agent.gamma='interval(1.2, 1.5)'"],
          "search.values.agent.gamma: interval(1.2, 1.5) is outside agent.gamma's bound: must be in (0.0, 1.0]"),
         (["search.values.agent.gamma='interval(0.9, 1.5)'"],
          "search.values.agent.gamma: interval(0.9, 1.5) goes outside agent.gamma's bound: must be in (0.0, 1.0], "
          "got 1.5"),
         (["search.values.agent.gamma='choice(0.9, 1.1)'"], "search.values.agent.gamma: choice(0.9, 1.1) goes outside"),
         (["++search.values.agent.batch='int(interval(0, 64))'"], "search.values.agent.batch: int(interval(0, 64)) "
          "goes outside agent.batch's bound: must be > 0, got 0"),
         (["++search.values.agent.batch='range(-8, 64, 8)'"], "search.values.agent.batch: range(-8, 64, 8) goes"),
         (["agent=dqn", "++search.values.agent.tau='tag(log, interval(0.001, 2.0))'"],
          "search.values.agent.tau: tag(log, interval(0.001, 2.0)) goes outside agent.tau's bound: must be in "
          "(0.0, 1.0], got 2.0"),
         (["++search.values.agent.activation='choice(relu, gelu)'"], "search.values.agent.activation: choice(relu, "
          "gelu) goes outside agent.activation's bound: 'gelu' is not one of relu, tanh"),
         (["++search.values.backend.threads='choice(1, 100000)'"], "search.values.backend.threads: "),
         (["++search.values.seed='int(interval(0, 5000000000))'"], "search.values.seed: "),
         (["agent=dqn", "search=none", "+search.values.agent.gamma='interval(0.9, 0.99)'"],
          "search.agent.gamma: study 'keep' searched it as choice(0.9, 0.99)"),
         # found by tests/tuner/cli/test_fuzz.py: accepted values that trained forever or were tracebacks
         (["budget.steps=1000000000000000000000000000000"], "budget.steps: "),
         (["eval.episodes=100000000000000000000"], "eval.episodes: 1e+20 is beyond any setting's range"),
         (["agent=dqn", "agent.double=9223372036854775808"], "agent.double: must be true or false"),
         (["buffer._target_=nan"], "buffer._target_: cannot import 'nan'"),
         (["backend.name=''"], "backend.name: '' is not one of"),
         (["agent=dqn", "agent.policy._target_=[1,2]"], "agent.policy._target_: expected a dotted class path"),
         (["agent.hidden_size=[[]]"], "agent.hidden_size: expected a list of layer sizes"),
         (["seed=4294967295", "tuner.n_seeds=2"], "seed: 4294967295 + tuner.n_seeds=2 trains seeds past")]


@pytest.mark.parametrize("args,key", OTHER, ids=[" ".join(a) for a, _ in OTHER])
def test_other_bad_overrides_are_one_line_naming_their_key(args, key, _corpus) -> None:
    refused(_corpus, list(args), key)


def test_unusable_paths_and_files_are_one_line(_study_home, tmp_path) -> None:
    """Run, sweep and study dirs that cannot be made (below a regular file: root ignores permission
    bits), storages that are not Optuna journals, ``OPTUNA_STORAGE`` naming a bad storage."""
    afile, garbage, foreign = _study_home / "afile", _study_home / "garbage", _study_home / "foreign.log"
    afile.write_text("x")
    (garbage / "journal.log").parent.mkdir(exist_ok=True)
    (garbage / "journal.log").write_bytes(b"\x00\x01 not a journal\n")
    foreign.write_text('{"op_code": 99, "worker_id": "w"}\n')  # looks like a journal's, does not replay
    files = {p: p.read_bytes() for p in (afile, garbage / "journal.log", foreign)}
    expected = [  # (args, the line's start, run against the study, environment)
        ([f"hydra.run.dir={afile}/sub"], f"hydra.run.dir: cannot create {afile}/sub ({afile} is not a directory)",
         True, None),
        (["-m", "seed=0,1", f"hydra.sweep.dir={afile}/sub"], "hydra.sweep.dir: cannot create", False, None),
        ([f"tuner.study_dir={afile}/study"], f"tuner.study_dir: cannot create {afile}/study", True, None),
        ([f"tuner.study_dir={garbage}"], f"tuner.study_dir: {garbage}/journal.log is not an Optuna journal file",
         True, None),
        ([f"tuner.storage={foreign}"], f"tuner.storage: cannot open {foreign}", True, None)]
    for command in ("dashboard", "report"):
        name = ["study_name=keep"] if command == "report" else []
        expected += [([command, f"storage={afile}", *name], f"storage: {afile} is not an Optuna journal file",
                      False, None),
                     ([command, f"study_dir={garbage}", *name],
                      f"study_dir: {garbage}/journal.log is not an Optuna journal file", False, None),
                     ([command, f"storage={foreign}", *name], f"storage: {foreign} is not a readable Optuna journal",
                      False, None)]
    expected += [([], "OPTUNA_STORAGE: unsupported storage 'mysql'", True, {"OPTUNA_STORAGE": "mysql://bob:pw1234@db/x"}),
                 (["dashboard"], f"OPTUNA_STORAGE: {afile} is not an Optuna journal file", False,
                  {"OPTUNA_STORAGE": str(afile)})]
    results = run_batch([_case(_study_home, args, study, env) for args, _, study, env in expected], tmp_path)
    lines = [assert_refused(result, key, args) for (args, key, _, _), result in zip(expected, results)]
    assert not any("pw1234" in line for line in lines)
    assert sorted(p.name for p in garbage.iterdir()) == ["journal.log"]  # no trials/ or lock made beside it
    assert {p: p.read_bytes() for p in files} == files


def test_corpus_size() -> None:
    assert len(CASES) + len(TUNER) >= 150


def test_bad_commands_leave_an_existing_study_unchanged(tmp_path) -> None:
    common = ["tuner=optuna", *NO_REEVAL, "tuner.study_name=keep", "search=none", "tuner.pruner=none",
              "+search.values.agent.gamma='choice(0.9, 0.99)'", *TINY]
    run_app(common + ["tuner.n_trials=1"], cwd=str(tmp_path))
    study_dir = tmp_path / "studies" / "keep"
    before = {p.name: p.read_bytes() for p in study_dir.iterdir() if p.is_file()}
    bad = [(["optimizer.lr=nan"], "error: optimizer.lr: must be a finite number"),
           (["tuner.percentile=150"], "error: tuner.percentile: must be in [0, 100]"),
           (["tuner.direction=minimize"], "error: tuner.direction: study 'keep' was created to maximize"),
           (["+search.values.agent.tau='interval(0.1, 0.9)'", "search.values.agent.gamma='interval(0.9, 0.99)'"],
            "error: search.agent.gamma: study 'keep' searched it as choice(0.9, 0.99)"),
           (["seed=${seed}"], "error: seed: ")]
    for extra, message in bad:
        out = run_app(common + ["tuner.n_trials=2", *extra], cwd=str(tmp_path), check=False)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith(message), (extra, out.stderr)
        assert "Traceback" not in out.stdout + out.stderr
        assert {p.name: p.read_bytes() for p in study_dir.iterdir() if p.is_file()} == before


def test_bad_config_dirs_storages_and_study_dirs_are_one_line(tmp_path) -> None:
    broken = tmp_path / "broken"
    (broken / "agent").mkdir(parents=True)
    (broken / "agent" / "mine.yaml").write_text("name: mine\nhidden_size: [1, 2\n")
    shadowed = tmp_path / "shadowed"
    shadowed.mkdir()
    (shadowed / "config.yaml").write_text("seed: 5\n")
    (tmp_path / "afile").write_text("x")
    cases = [(["--config-dir", str(broken)], f"error: --config-dir: {broken}/agent/mine.yaml line 3: expected ','"),
             (["--config-dir", str(shadowed)], f"error: --config-dir: {shadowed}/config.yaml would be ignored"),
             (["tuner=optuna", f"tuner.storage='sqlite:///{tmp_path}/afile/x.db'"],
              "error: tuner.storage: cannot create the SQLite file's directory"),
             (["tuner=optuna", f"tuner.study_dir={tmp_path}/afile/study"],
              f"error: tuner.study_dir: cannot create {tmp_path}/afile/study"),
             (["report", "study_name=x", f"storage={tmp_path / 'afile'}"],
              f"error: storage: {tmp_path / 'afile'} is not an Optuna journal file"),
             (["tuner=parallel_finder", "tuner.candidates=[['agent.nope=1']]"],
              "error: tuner.candidates: candidate agent.nope=1: agent.nope: no such config key"),
             (["tuner=parallel_finder", "tuner.candidates=[['optimizer=bogus']]"],
              "error: tuner.candidates: candidate optimizer=bogus: optimizer: no option 'bogus'")]
    for args, message in cases:
        out = run_app([*args, *([] if args[0] == "report" else TINY)], cwd=str(tmp_path), check=False)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith(message), (args, out.stderr)
    assert (tmp_path / "afile").read_text() == "x"  # not "repaired"
    # a SQLite file in a directory that does not exist yet: the directory is made, as for a journal
    run_app(["tuner=optuna", *NO_REEVAL, f"tuner.storage='sqlite:///{tmp_path}/new/dir/t.db'", "tuner.n_trials=1",
             "search=none", *TINY], cwd=str(tmp_path))
    assert (tmp_path / "new" / "dir" / "t.db").exists()


def _billion_laughs(path: Path) -> None:
    """The classic alias bomb: nine levels of nine aliases, ~10**9 values once expanded, < 500 bytes."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size < 500


def test_fifos_and_alias_bombs_are_one_line_not_a_hang(_study_home, tmp_path) -> None:
    """A FIFO as a config file or a journal blocked the first open for ever, and a YAML alias bomb in a
    ``--config-dir`` made Hydra expand 10**9 values: each is refused before it is read.  The batch runs
    under a timeout, so a regression fails here instead of hanging the suite."""
    configs = {}
    for name, write in (("bomb", _billion_laughs),
                        ("deep", lambda path: path.write_text("x: " + "[" * 3000 + "]" * 3000 + "\n")),
                        ("recursive", lambda path: path.write_text("x: &a [1, *a]\n")),
                        ("pipe", lambda path: os.mkfifo(path))):
        folder = tmp_path / name / "agent"
        folder.mkdir(parents=True)
        write(folder / "mine.yaml")
        configs[name] = folder.parent
    fifo, fifo_study = tmp_path / "journal.fifo", tmp_path / "fifo_study"
    os.mkfifo(fifo)
    fifo_study.mkdir()
    os.mkfifo(fifo_study / "journal.log")
    run_dir = ["hydra.run.dir=" + str(_study_home / "run")]
    primary = tmp_path / "primary"  # a user's primary config that adds the FIFO's folder to the search path
    primary.mkdir()
    (primary / "mine.yaml").write_text(f"defaults:\n  - config\n  - _self_\nhydra:\n  searchpath: [file://{configs['pipe']}]\n")
    expected = [(["--config-dir", str(configs["bomb"]), *run_dir],
                 f"--config-dir: {configs['bomb']}/agent/mine.yaml expands to more than 100000 values", False),
                (["--config-dir", str(configs["deep"]), *run_dir],
                 f"--config-dir: {configs['deep']}/agent/mine.yaml is nested more than 100 levels deep", False),
                (["--config-dir", str(configs["recursive"]), *run_dir],
                 f"--config-dir: {configs['recursive']}/agent/mine.yaml has an alias inside its own anchor", False),
                (["--config-dir", str(configs["pipe"]), *run_dir],
                 f"--config-dir: {configs['pipe']}/agent/mine.yaml is a FIFO (named pipe)", False),
                # the other ways a user's folder enters Hydra's search path
                (["--config-path", str(configs["bomb"]), *run_dir],
                 f"--config-path: {configs['bomb']}/agent/mine.yaml expands to more than 100000 values", False),
                ([f"hydra.searchpath=[file://{configs['pipe']}]", *run_dir],
                 f"hydra.searchpath: {configs['pipe']}/agent/mine.yaml is a FIFO (named pipe)", False),
                (["--config-dir", str(primary), "--config-name", "mine", *run_dir],
                 f"hydra.searchpath: {configs['pipe']}/agent/mine.yaml is a FIFO (named pipe)", False),
                ([f"tuner.storage={fifo}"], f"tuner.storage: {fifo} is a FIFO (named pipe), not an Optuna journal",
                 True),
                ([f"tuner.study_dir={fifo_study}"],
                 f"tuner.study_dir: {fifo_study}/journal.log is a FIFO (named pipe)", True),
                (["report", "study_name=keep", f"storage={fifo}"], f"storage: no Optuna journal file {fifo}", False)]
    results = run_batch([_case(_study_home, args, study) for args, _, study in expected], tmp_path, timeout=300)
    for (args, key, _), result in zip(expected, results):
        assert_refused(result, key, args)
    assert sorted(p.name for p in fifo_study.iterdir()) == ["journal.log"]  # no trials/ or lock beside it


# components that training refuses together (the core's set() / train() rules), refused before a run
# or a study starts: (args, the key the line names)
CONFLICTS = [(["agent=dqn", "env=bit_flip", "agent.num_steps=3"], "agent.num_steps=3: HER=True cannot be combined "
               "with num_steps"),
             (["agent=ddpg", "env=point_reach", "strategy=pool_network"], "strategy=pool_network: HER=True cannot"),
             (["agent=ppo", "env=point_reach"], "buffer=her: HER=True cannot be combined with PPO"),
             (["agent=a2c", "env=point_reach"], "buffer=her: HER=True cannot be combined with PPO"),
             (["agent=maddpg", "env=simple_spread", "buffer=prioritized"], "buffer=prioritized: MARL=True cannot"),
             (["agent=maddpg", "env=simple_spread", "agent.num_steps=2"], "agent.num_steps=2: MARL=True cannot"),
             (["agent=maddpg", "env=simple_spread", "strategy=pool_network"], "strategy=pool_network: MARL=True"),
             (["agent=ddpg", "env=point_reach", "agent.n_envs=2"], "agent.n_envs=2: n_envs=2 (vectorised envs) "
              "cannot be combined with HER=True"),
             (["agent=dqn", "agent.n_envs=2", "strategy=pool_network"], "agent.n_envs=2: n_envs=2 (vectorised "
              "envs) cannot be combined with pool_network=True"),
             (["agent=sac", "env=pendulum", "buffer=her"], "buffer=her: Pendulum-v1 is not a goal env"),
             # the adjuster examples (docs/guide/adjusters.md) once met the default PPO, which trains on rollouts: a traceback
             (["adjuster=gns"], "adjuster=gns: adjusters tune replay training; agent=ppo with agent.n_steps=32")]


def test_conflicting_components_are_one_line_before_anything_starts(tmp_path) -> None:
    """A plain run and a study of each combination: exit 2, one line naming the key (was a traceback
    from set() / train(), and a study whose every trial would fail), no run dir, no study made."""
    cases = [_case(tmp_path, [*args, f"hydra.run.dir={tmp_path / 'run'}"], study=False) for args, _ in CONFLICTS]
    cases += [_case(tmp_path, [*args, "tuner=optuna", "tuner.study_name=clash"], study=False)
              for args, _ in CONFLICTS[:3]]
    results = run_batch(cases, tmp_path)
    for (args, key), result in zip([*CONFLICTS, *CONFLICTS[:3]], results):
        assert_refused(result, key, args)
    assert not (tmp_path / "studies").exists()
