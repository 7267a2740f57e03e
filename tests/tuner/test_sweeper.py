"""Our Optuna sweeper for Hydra multirun: parallel trials, pruning, resume, optimization_results.yaml."""

import os

import optuna
from omegaconf import OmegaConf
from optuna.trial import TrialState

from tests.tuner.conftest import TINY, run_app


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
