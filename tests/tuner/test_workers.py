"""Issue 37: GPU placement of trials (tuner.gpus_per_trial) and several study drivers from one command
(tuner.workers with the local, submitit_local and ray launchers)."""

import os

import optuna
import pytest
from optuna.trial import TrialState

from tests.tuner.conftest import NO_REEVAL, TINY, run_app
from tuner.common.errors import ConfigError
from tuner.study.gpus import GpuPlacer, Placement, visible_gpus

SPACE = ["search=none", "tuner.sampler=random", "+search.values.agent.gamma='interval(0.9, 0.99)'",
         "tuner.pruner=none"]


def _journal_study(study_dir, name):
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    return optuna.load_study(study_name=name,
                             storage=JournalStorage(JournalFileBackend(os.path.join(study_dir, "journal.log"))))


# -- 1. GPU placement --------------------------------------------------------------------------------
def test_visible_gpus_reads_the_override_then_cuda_visible_devices() -> None:
    assert visible_gpus({"NOTE_TUNE_GPUS": "3,7", "CUDA_VISIBLE_DEVICES": "0"}) == ["3", "7"]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "1, 2"}) == ["1", "2"]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == []
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "-1"}) == []
    assert visible_gpus({"NOTE_TUNE_GPUS": ""}) == []


def test_sequential_trials_go_round_robin() -> None:
    placer = GpuPlacer(["0", "1", "2"], 1)
    assert [placer.place().visible for _ in range(5)] == ["0", "1", "2", "0", "1"]


def test_a_quarter_puts_four_trials_on_each_gpu() -> None:
    placer = GpuPlacer(["0", "1"], 0.25)
    running: list[Placement] = []
    for _ in range(8):
        running.append(placer.place(running))
    assert placer.capacity == 8
    assert sorted(p.visible for p in running) == ["0"] * 4 + ["1"] * 4
    assert {p.fraction for p in running} == {0.25}
    # a trial ends on GPU 1: the next one goes where room is
    running.remove(next(p for p in running if p.visible == "1"))
    assert placer.place(running).visible == "1"


def test_whole_gpus_per_trial_take_the_least_loaded() -> None:
    placer = GpuPlacer(["0", "1", "2", "3"], 2)
    first = placer.place()
    second = placer.place([first])
    assert first.fraction is None and len(first.ids) == 2
    assert not set(first.ids) & set(second.ids)


def test_no_gpu_or_too_few_is_refused() -> None:
    with pytest.raises(ConfigError, match="no GPU is visible"):
        GpuPlacer([], 0.5)
    with pytest.raises(ConfigError, match="only 1 visible"):
        GpuPlacer(["0"], 2)


def test_study_without_a_gpu_is_refused_in_one_line(tmp_path) -> None:
    out = run_app(["tuner=optuna", *NO_REEVAL, "tuner.gpus_per_trial=0.25", "tuner.n_trials=1", *TINY],
                  cwd=str(tmp_path), env={"NOTE_TUNE_GPUS": ""}, check=False)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "tuner.gpus_per_trial" in lines[0] and "no GPU is visible" in lines[0]


@pytest.mark.parametrize("value", ["0", "1.5", "-1"])
def test_bad_gpus_per_trial_is_refused(tmp_path, value) -> None:
    out = run_app(["tuner=optuna", f"tuner.gpus_per_trial={value}", *TINY], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and "tuner.gpus_per_trial" in out.stderr


def test_trials_see_their_gpu_in_their_own_environment(tmp_path) -> None:
    """A fake list of two GPUs: three trials go to 3, 7, 3, each trial process's CUDA_VISIBLE_DEVICES
    says so (its log's first line), and with no real GPU torch trains on the CPU."""
    run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=gpus", "tuner.n_trials=3", "tuner.gpus_per_trial=0.5",
             *SPACE, *TINY], cwd=str(tmp_path), env={"NOTE_TUNE_GPUS": "3,7"})
    study_dir = tmp_path / "studies" / "gpus"
    study = _journal_study(study_dir, "gpus")
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3
    assert [t.user_attrs["gpus"] for t in study.trials] == ["3", "7", "3"]
    for t in study.trials:
        log = (study_dir / "trials" / f"{t.number:04d}" / "trial.log").read_text()
        assert f"trial {t.number}: CUDA_VISIBLE_DEVICES={t.user_attrs['gpus']}, memory fraction 0.5" in log
