"""Our Optuna sweeper for Hydra multirun: parallel trials, pruning, resume, optimization_results.yaml,
non-blocking slots, SQLite storage with direction=minimize, the report and wandb by default."""

import json
import os
import time

import gymnasium as gym
import optuna
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from omegaconf import OmegaConf
from optuna.trial import TrialState
from PIL import Image

from tests.tuner.conftest import TINY, journal_of, run_app
from tests.tuner.wandb_read import offline_runs, read_run

SLOW_DIR = "NOTE_TEST_FIRST_SLOW_DIR"


class FirstSlow(CartPoleEnv):
    """CartPole that is slow (40 ms per step) in the first trial process to reset one, and fast in
    every other: one long trial whatever the sampler picks.  The claim is a file created with
    O_EXCL in ``$NOTE_TEST_FIRST_SLOW_DIR``, decided once per process."""

    slow: bool | None = None  # per process

    def reset(self, **kwargs):
        if FirstSlow.slow is None:
            try:
                os.close(os.open(os.path.join(os.environ[SLOW_DIR], "claimed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                FirstSlow.slow = True
            except FileExistsError:
                FirstSlow.slow = False
        return super().reset(**kwargs)

    def step(self, action):
        if FirstSlow.slow:
            time.sleep(0.04)
        return super().step(action)


if "FirstSlow-v0" not in gym.registry:
    gym.register("FirstSlow-v0", entry_point="tests.tuner.sweeper.test_sweeper:FirstSlow", max_episode_steps=500)


def test_sweeper_parallel_pruning_and_resume(tmp_path) -> None:
    storage = str(tmp_path / "sweep.log")
    common = ["-m", "hydra/sweeper=optuna", f"hydra.sweeper.storage={storage}", "hydra.sweeper.study_name=sw",
              "hydra.sweeper.n_jobs=2", "hydra.sweeper.sampler=random", "hydra.sweeper.report_every=1",
              f"hydra.sweep.dir={tmp_path / 'sweep'}", "optimizer.lr=tag(log, interval(1e-4, 1e-2))",
              "agent.batch=choice(16, 32)", *TINY]
    run_app(common + ["hydra.sweeper.n_trials=2", "hydra.sweeper.pruner=none"], cwd=str(tmp_path))
    # same study, more trials, and a pruner no return can satisfy: the new trials stop mid-training
    run_app(common + ["hydra.sweeper.n_trials=4", "hydra.sweeper.pruner=threshold",
                      "hydra.sweeper.threshold_lower=1e9"], cwd=str(tmp_path))
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    study = optuna.load_study(study_name="sw", storage=JournalStorage(JournalFileBackend(storage)))
    states = [t.state for t in study.trials]
    assert states == [TrialState.COMPLETE] * 2 + [TrialState.PRUNED] * 2
    first, second = study.trials[0], study.trials[1]
    assert first.datetime_start < second.datetime_complete and second.datetime_start < first.datetime_complete
    for t in study.trials:
        assert 1e-4 <= t.params["optimizer.lr"] <= 1e-2 and t.params["agent.batch"] in (16, 32)
        run_dir = t.user_attrs["run_dir"]
        assert os.path.exists(os.path.join(run_dir, "config.yaml"))
    for t in study.trials[2:]:
        assert len(t.intermediate_values) == 1  # pruned at its first report
    results = OmegaConf.load(tmp_path / "sweep" / "optimization_results.yaml")
    assert results.best_value == study.best_value and dict(results.best_params) == study.best_params
    job = OmegaConf.load(os.path.join(study.best_trial.user_attrs["run_dir"], "config.yaml"))
    assert job.optimizer.lr == study.best_params["optimizer.lr"]


def test_a_finished_trial_frees_its_slot_at_once(tmp_path) -> None:
    # n_jobs=2, four trials: one long (~12 s), three short.  Non-blocking: trials 2 and 3 take the
    # slot of each short trial as it finishes, while the long one still runs (blocking batches of
    # two, the published plugin's behaviour, would start them only after the long trial ended).
    (tmp_path / "claim").mkdir()
    run_app(["-m", "hydra/sweeper=optuna", "hydra.sweeper.study_name=nb", "hydra.sweeper.n_jobs=2",
             "hydra.sweeper.n_trials=4", "hydra.sweeper.sampler=random", "hydra.sweeper.pruner=none",
             f"hydra.sweep.dir={tmp_path / 'sweep'}", "env.id=FirstSlow-v0", "env.module=tests.tuner.sweeper.test_sweeper",
             "agent.gamma=choice(0.9, 0.95, 0.99)", *TINY], cwd=str(tmp_path), env={SLOW_DIR: str(tmp_path / "claim")})
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    storage = JournalStorage(JournalFileBackend(str(tmp_path / "sweep" / "journal.log")))
    trials = sorted(optuna.load_study(study_name="nb", storage=storage).trials, key=lambda t: t.number)
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 4
    long = max(trials, key=lambda t: t.duration)
    assert long.number in (0, 1) and long.duration.total_seconds() > 10
    for t in trials[2:]:
        assert long.datetime_start < t.datetime_start and t.datetime_complete < long.datetime_complete, (
            f"trial {t.number} did not run inside long trial {long.number}")


def test_sqlite_storage_minimize_report_and_wandb_by_default(tmp_path) -> None:
    # no logger override: sweeper trials log to wandb (offline), as tuner=optuna trials do.  The
    # objective (mean return) can be minimised like any value: the best trial must be the lowest.
    db = f"sqlite:///{tmp_path / 'sweep.db'}"
    sweep = tmp_path / "sweep"
    run_app(["-m", "hydra/sweeper=optuna", f"hydra.sweeper.storage={db}", "hydra.sweeper.study_name=mn",
             "hydra.sweeper.direction=minimize", "hydra.sweeper.n_trials=3", "hydra.sweeper.n_jobs=2",
             "hydra.sweeper.sampler=random", "hydra.sweeper.sampler_seed=0", "hydra.sweeper.pruner=none",
             f"hydra.sweep.dir={sweep}", "seed=int(interval(0, 1000))", "objective.source=train",
             *[o for o in TINY if not o.startswith("logger=")]], cwd=str(tmp_path))
    study = optuna.load_study(study_name="mn", storage=db)
    values = [t.value for t in study.trials if t.state == TrialState.COMPLETE]
    assert study.direction == optuna.study.StudyDirection.MINIMIZE and len(values) == 3 and len(set(values)) > 1
    assert study.best_value == min(values)
    results = OmegaConf.load(sweep / "optimization_results.yaml")
    assert results.best_value == min(values) and dict(results.best_params) == study.best_params
    # the end-of-study report in the sweep dir
    text = (sweep / "report" / "report.md").read_text()
    assert f"best tuning value: {min(values):.6g} (trial {study.best_trial.number}" in text and "| `seed` |" in text
    with Image.open(sweep / "report" / "optimization_history.png") as img:
        img.verify()
    # wandb: one run per trial (group = study name) and the study's own run
    for t in study.trials:
        (path,) = offline_runs(t.user_attrs["run_dir"])
        run = read_run(path)
        assert run["run"]["job_type"] == "trial" and run["run"]["run_group"] == "mn"
        assert run["config"]["params"] == t.params and run["summary"]["state"] == "complete"
    (path,) = offline_runs(str(sweep))
    assert read_run(path)["run"]["job_type"] == "study"


def test_published_plugin_sampler_form_progress_lines_default_name_and_rerun(tmp_path) -> None:
    """``hydra.sweeper.sampler._target_`` (the published plugin's form) works; off a terminal each
    finished trial prints a progress line; the study is named ``<agent>_<env id>``, not after the
    sweep folder's clock time; ``hydra.sweeper.params.<key>=...`` needs no ``+``; the printed re-run
    command trains the best trial's config again."""
    sweep = tmp_path / "sweep"
    out = run_app(["-m", "hydra/sweeper=optuna", "hydra.sweeper.sampler._target_=optuna.samplers.RandomSampler",
                   "hydra.sweeper.sampler.seed=0", "hydra.sweeper.n_trials=2", "hydra.sweeper.pruner=none",
                   # the published plugin's params form, without Hydra's `+` for a new key
                   f"hydra.sweep.dir={sweep}", "hydra.sweeper.params.agent.gamma=choice(0.9, 0.99)", *TINY],
                  cwd=str(tmp_path)).stdout
    assert "[study] 1/2 finished" in out and "[study] 2/2 finished" in out
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    storage = JournalStorage(JournalFileBackend(journal_of(sweep)))
    assert [s.study_name for s in optuna.get_all_study_summaries(storage)] == ["dqn_CartPole-v1"]
    study = optuna.load_study(study_name="dqn_CartPole-v1", storage=storage)
    (line,) = [x for x in out.splitlines() if x.startswith("re-run the best configuration")]
    command = line.split(": ", 1)[1].split()
    assert command[:2] == ["note-tune", "--config-dir"] and command[3:] == ["--config-name", "best_config"]
    run_app(command[1:] + [f"hydra.run.dir={tmp_path / 'rerun'}"], cwd=str(tmp_path))
    cfg = json.loads((tmp_path / "rerun" / "result.json").read_text())["config"]
    assert cfg["agent"]["gamma"] == study.best_params["agent.gamma"]
    bad = run_app(["-m", "hydra/sweeper=optuna", "hydra.sweeper.sampler._target_=optuna.samplers.NoSuchSampler",
                   f"hydra.sweep.dir={tmp_path / 'bad'}", "agent.gamma=choice(0.9, 0.99)", *TINY],
                  cwd=str(tmp_path), check=False)
    assert bad.returncode == 2
    assert "hydra.sweeper.sampler._target_: cannot import 'optuna.samplers.NoSuchSampler'" in bad.stderr


def test_any_optuna_sampler_node_sweeps(tmp_path) -> None:
    """A sampler beyond the published plugin's six (here NSGA-II with its own population size) is built
    as ``tuner.sampler`` builds a node, seeded from the node; a key its class does not take is one line."""
    sweep = tmp_path / "sweep"
    run_app(["-m", "hydra/sweeper=optuna", "+hydra.sweeper.sampler={_target_: optuna.samplers.NSGAIISampler, "
             "population_size: 2, seed: 0}", "hydra.sweeper.n_trials=2", "hydra.sweeper.pruner=none",
             f"hydra.sweep.dir={sweep}", "agent.gamma=choice(0.9, 0.99)", *TINY], cwd=str(tmp_path))
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    storage = JournalStorage(JournalFileBackend(journal_of(sweep)))
    study = optuna.load_study(study_name="dqn_CartPole-v1", storage=storage)
    assert len(study.trials) == 2
    # trial 0 is the sweep's own values (enqueued); NSGA-II marks the trial it sampled with its
    # generation, which TPE or random search would not
    assert [t.user_attrs.get("enqueued") for t in study.trials] == ["defaults", None]
    assert study.trials[1].system_attrs.get("NSGAIISampler:generation") == 0
    bad = run_app(["-m", "hydra/sweeper=optuna", "+hydra.sweeper.sampler={_target_: optuna.samplers.NSGAIISampler, "
                   "bogus: 1}", f"hydra.sweep.dir={tmp_path / 'bad'}", "agent.gamma=choice(0.9, 0.99)", *TINY],
                  cwd=str(tmp_path), check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith(
        "error: hydra.sweeper.sampler.bogus: not an argument of optuna.samplers.NSGAIISampler")
    assert not (tmp_path / "bad").exists()


def test_sweeper_enqueues_known_good_trials_then_the_defaults(tmp_path) -> None:
    """``hydra.sweeper.enqueue`` runs first, then the sweep's own values (trial 0 of tuner=optuna)."""
    sweep = tmp_path / "sweep"
    run_app(["-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=3", "hydra.sweeper.pruner=none",
             "hydra.sweeper.sampler=random", "hydra.sweeper.enqueue=[{optimizer.lr: 0.005}]", f"hydra.sweep.dir={sweep}",
             "optimizer.lr=tag(log, interval(1e-4, 1e-2))", *TINY, "agent.lr=0.003"], cwd=str(tmp_path))
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    storage = JournalStorage(JournalFileBackend(journal_of(sweep)))
    study = optuna.load_study(study_name="dqn_CartPole-v1", storage=storage)
    trials = sorted(study.trials, key=lambda t: t.number)
    assert [t.params["optimizer.lr"] for t in trials[:2]] == [0.005, 0.003]  # optimizer.lr: null -> agent.lr
    assert [t.user_attrs.get("enqueued") for t in trials] == ["hydra.sweeper.enqueue", "defaults", None]
    bad = run_app(["-m", "hydra/sweeper=optuna", "hydra.sweeper.enqueue=[{agent.tau: 0.1}]",
                   f"hydra.sweep.dir={tmp_path / 'bad'}", "optimizer.lr=tag(log, interval(1e-4, 1e-2))", *TINY],
                  cwd=str(tmp_path), check=False)
    assert bad.returncode != 0 and "hydra.sweeper.enqueue: agent.tau is not a searched parameter" in bad.stderr



def test_sweeper_refuses_bad_storages_and_ranges_in_one_line(tmp_path) -> None:
    """An in-memory SQLite storage (the study would be lost at exit), a server that is not there
    (was a 115-line traceback) and a range outside its key's bound are one line, exit 2, before the
    sweep dir is made; the password of the URL is masked in the line."""
    base = ["-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=1", f"hydra.sweep.dir={tmp_path / 'sweep'}", *TINY]
    cases = [(["hydra.sweeper.storage=sqlite:///:memory:", "agent.gamma=choice(0.9,0.99)"],
              "error: hydra.sweeper.storage: 'sqlite:///:memory:' keeps the study in memory"),
             (["hydra.sweeper.storage=postgresql://bob:s3cr3t-pw@127.0.0.1:1/db", "agent.gamma=choice(0.9,0.99)"],
              "error: hydra.sweeper.storage: cannot open postgresql+psycopg://bob:***@127.0.0.1:1/db: "),
             (["agent.gamma=interval(0.9,1.5)"],
              "error: search.values.agent.gamma: interval(0.9,1.5) goes outside agent.gamma's bound")]
    for extra, message in cases:
        out = run_app([*base, *extra], cwd=str(tmp_path), check=False)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith(message), (extra, out.stderr)
        assert "s3cr3t-pw" not in out.stdout + out.stderr
        assert not (tmp_path / "sweep").exists()


def test_a_resumed_sweeper_study_keeps_its_identity(tmp_path) -> None:
    """A sweeper study resumed on its storage with another env (or search space) is refused in one
    line naming the key, exit 2, the study unchanged; the same command resumes it;
    hydra.sweeper.resume=force continues deliberately."""
    journal = tmp_path / "journal.log"
    base = ["-m", "hydra/sweeper=optuna", f"hydra.sweeper.storage={journal}", "hydra.sweeper.study_name=s", *TINY]
    first = [*base, "hydra.sweeper.n_trials=1", "agent.gamma=choice(0.9,0.99)"]
    run_app([*first, f"hydra.sweep.dir={tmp_path / 'a'}"], cwd=str(tmp_path))
    before = journal.read_bytes()
    out = run_app([*first, "env=acrobot", f"hydra.sweep.dir={tmp_path / 'b'}"], cwd=str(tmp_path), check=False)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith("error: env.id: study 's' was made with CartPole-v1, this command has Acrobot-v1")
    assert "hydra.sweeper.resume=force" in lines[0] and journal.read_bytes() == before
    out = run_app([*base, "hydra.sweeper.n_trials=1", "agent.gamma=choice(0.8,0.99)", f"hydra.sweep.dir={tmp_path / 'c'}"],
                  cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and out.stderr.strip().startswith("error: search.agent.gamma: study 's' searched it as")
    run_app([*base, "hydra.sweeper.n_trials=2", "agent.gamma=choice(0.9,0.99)", f"hydra.sweep.dir={tmp_path / 'd'}"],
            cwd=str(tmp_path))
    # force continues with another budget; a parameter searched with other choices stays refused
    # (Optuna cannot mix two distributions of one parameter in a study)
    out = run_app([*base, "hydra.sweeper.n_trials=3", "agent.gamma=choice(0.8,0.99)", "hydra.sweeper.resume=force",
                   f"hydra.sweep.dir={tmp_path / 'e'}"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and out.stderr.strip().startswith("error: search.agent.gamma: study 's' searched it as")
    run_app([*base, "hydra.sweeper.n_trials=3", "agent.gamma=choice(0.9,0.99)", "budget.steps=400",
             "hydra.sweeper.resume=force", f"hydra.sweep.dir={tmp_path / 'f'}"], cwd=str(tmp_path))
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
    study = optuna.load_study(study_name="s", storage=storage)
    assert len(study.trials) == 3 and study.user_attrs["identity"]["budget.steps"] == 400


def test_a_sweep_s_budget_in_training_runs(tmp_path) -> None:
    """``hydra.sweeper.max_runs``, as ``tuner.max_runs``: at 2 seeds a trial a budget of 5 runs holds
    two trials (4 runs; a third would need 6) though n_trials asks for 10; the report's checklist counts
    the runs against it; a re-run says in one line why it runs nothing; a budget below one trial's
    seeds is one line, exit 2."""
    sweep = tmp_path / "sweep"
    args = ["-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=10", "hydra.sweeper.n_seeds=2",
            "hydra.sweeper.max_runs=5", "hydra.sweeper.pruner=none", "hydra.sweeper.sampler=random",
            "hydra.sweeper.study_name=runs", f"hydra.sweep.dir={sweep}", "agent.gamma=choice(0.9, 0.99)", *TINY]
    run_app(args, cwd=str(tmp_path))
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    study = optuna.load_study(study_name="runs", storage=JournalStorage(JournalFileBackend(journal_of(sweep))))
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    assert [len(t.user_attrs["seeds"]) for t in study.trials] == [2, 2]
    report = (sweep / "report" / "report.md").read_text()
    assert "x 2 seed(s) = up to 4 training runs (4 trained of hydra.sweeper.max_runs=5)" in report
    again = run_app(args, cwd=str(tmp_path)).stdout
    assert "note: study 'runs' already holds 4 training runs (hydra.sweeper.max_runs=5): no trial to run; " \
           "raise hydra.sweeper.max_runs" in again
    assert len(optuna.load_study(study_name="runs", storage=JournalStorage(JournalFileBackend(journal_of(sweep)))
                                 ).trials) == 2
    bad = run_app([*args[:-len(TINY) - 1], "hydra.sweeper.max_runs=1", f"hydra.sweep.dir={tmp_path / 'bad'}",
                   "agent.gamma=choice(0.9, 0.99)", *TINY], cwd=str(tmp_path), check=False)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "error: hydra.sweeper.max_runs: must hold one trial's 2 seed run(s) at least, got 1"]


def test_a_sweep_s_budget_in_cpu_seconds(tmp_path) -> None:
    """``hydra.sweeper.max_cpu_s``, as ``tuner.max_cpu_s``: a millisecond of CPU is spent by the first
    trial, so a sweep asking for 5 trials ends after 1 (n_jobs=1); the checklist states the budget, a
    re-run says why it runs nothing, and a budget that is not a positive number is one line, exit 2."""
    sweep = tmp_path / "sweep"
    args = ["-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=5", "hydra.sweeper.n_jobs=1",
            "hydra.sweeper.max_cpu_s=0.001", "hydra.sweeper.sampler=random", "hydra.sweeper.study_name=cpu",
            f"hydra.sweep.dir={sweep}", "agent.gamma=choice(0.9, 0.99)", *TINY]
    run_app(args, cwd=str(tmp_path))
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    study = optuna.load_study(study_name="cpu", storage=JournalStorage(JournalFileBackend(journal_of(sweep))))
    assert [t.state for t in study.trials] == [TrialState.COMPLETE]
    report = (sweep / "report" / "report.md").read_text()
    assert "s CPU in trial processes (of hydra.sweeper.max_cpu_s=0.001)" in report
    again = run_app(args, cwd=str(tmp_path)).stdout
    assert "CPU seconds of trials (hydra.sweeper.max_cpu_s=0.001): no trial to run; raise hydra.sweeper.max_cpu_s" \
        in again
    bad = run_app([*args[:4], "hydra.sweeper.max_cpu_s=-3", *args[5:7], f"hydra.sweep.dir={tmp_path / 'bad'}",
                   *args[8:]], cwd=str(tmp_path), check=False)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "error: hydra.sweeper.max_cpu_s: must be a finite number > 0, got -3.0"]


def test_a_sweep_s_trials_can_train_their_seeds_in_turns(tmp_path) -> None:
    """``hydra.sweeper.seed_order=interleaved``, as ``tuner.seed_order``: each trial's 2 seeds train in
    turns and the pruner hears their mean after each of the 3 evaluation rounds (steps 0, 1, 2; one
    after another they would be 0-2 and 10000-10002); the study records the order in its identity."""
    sweep = tmp_path / "sweep"
    run_app(["-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=1", "hydra.sweeper.n_seeds=2",
             "hydra.sweeper.seed_order=interleaved", "hydra.sweeper.study_name=turns", f"hydra.sweep.dir={sweep}",
             "agent.gamma=choice(0.9, 0.99)", "eval.every=100", "eval.episodes=2", *TINY], cwd=str(tmp_path))
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    study = optuna.load_study(study_name="turns", storage=JournalStorage(JournalFileBackend(journal_of(sweep))))
    (trial,) = study.trials
    assert trial.state == TrialState.COMPLETE and sorted(trial.intermediate_values) == [0, 1, 2]
    assert [s["seed"] for s in trial.user_attrs["seeds"]] == [0, 1]
    assert study.user_attrs["identity"]["tuner.seed_order"] == "interleaved"
