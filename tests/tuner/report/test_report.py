"""The study report: PNGs and report.md at the end of a study and on demand, and bad input."""

import json
import os

import numpy as np
import optuna
import pytest
from PIL import Image

from tests.tuner.conftest import NO_REEVAL, TINY, journal_of, run_app
from tests.tuner.wandb_read import offline_runs, read_run

SEARCH = ["search=none", "+search.values.agent.gamma='interval(0.9, 0.99)'",
          "+search.values.optimizer.lr='tag(log, interval(1e-4, 1e-2))'"]
ALWAYS = ("optimization_history", "param_importances", "parallel_coordinate", "intermediate_values",
          "best_trial_curves")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A three-trial study made by the tuner (logger=none: no wandb here)."""
    cwd = tmp_path_factory.mktemp("report_study")
    out = run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=rep", "tuner.n_trials=3", "tuner.sampler=random",
                   "tuner.sampler_seed=1", "tuner.report_every=2", *SEARCH, *TINY], cwd=str(cwd))
    return cwd, cwd / "studies" / "rep", out


def _load(study_dir):
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    return optuna.load_study(study_name="rep", storage=JournalStorage(JournalFileBackend(journal_of(study_dir))))


def _valid_png(path) -> None:
    with Image.open(path) as img:
        assert img.format == "PNG" and img.size[0] >= 400 and img.size[1] >= 300
        img.verify()


def test_end_of_study_report_has_plots_and_best_params(study) -> None:
    cwd, study_dir, out = study
    report = study_dir / "report"
    for name in ALWAYS:
        _valid_png(report / f"{name}.png")
    assert not (report / "lr_finder.png").exists()  # not an LR-finder study
    text = (report / "report.md").read_text()
    summary = json.loads((study_dir / "study.json").read_text())
    assert f"best tuning value: {summary['best_value']:.6g} (trial {summary['best_trial']};" in text
    assert f"- answer: trial {summary['best_trial']} (best tuning score)" in text and "## AutoRL checklist" in text
    for key, value in summary["best_params"].items():
        assert f"| `{key}` | {value!r} |" in text
    assert "complete 3, pruned 0, failed 0" in text
    # three trials: importances and parallel coordinates come with a caveat (in the markdown and the image)
    assert text.count("> Caveat: drawn from only 3 complete trials: with fewer than 10, read it as noise.") == 2
    # relative to the directory the study ran in: a command to paste there
    assert f"note-tune --config-dir {os.path.join('studies', 'rep')} --config-name best_config" in text
    assert f"report: {report / 'report.md'} (5 plots)" in out.stdout
    assert "[study] 3/3 finished" in out.stdout  # study progress does not depend on the logger


def test_report_on_demand_with_a_wandb_study_run(study) -> None:
    cwd, study_dir, _ = study
    out = run_app(["report", f"storage={journal_of(study_dir)}", "study_name=rep", "out=again",
                   "wandb=offline", "project=unit"], cwd=str(cwd))
    folder = cwd / "again"
    for name in ALWAYS:
        _valid_png(folder / f"{name}.png")
    assert "`optimizer.lr`" in (folder / "report.md").read_text() and "report of study 'rep'" in out.stdout
    (path,) = offline_runs(str(folder))
    run = read_run(path)
    assert run["run"]["job_type"] == "study" and run["run"]["project"] == "unit" and run["run"]["run_group"] == "rep"
    assert run["summary"]["n_complete"] == 3 and run["history"][0]["trials.nrows"] == 3
    # a second report logs to the same wandb run (its id is kept in the study), not to a new one
    run_app(["report", f"storage={journal_of(study_dir)}", "study_name=rep", "out=twice", "wandb=offline",
             "project=unit"], cwd=str(cwd))
    (second,) = offline_runs(str(cwd / "twice"))
    assert read_run(second)["run"]["run_id"] == run["run"]["run_id"] == _load(study_dir).user_attrs["wandb_study_run"]


@pytest.mark.parametrize("args, message", [
    (["study_name=missing"], "error: study_name: no study 'missing' in {journal} (studies there: rep)"),
    (["storage=nowhere.log", "study_name=rep"], "error: storage: no Optuna journal file {cwd}/nowhere.log"),
    (["storage=sqlite:///nowhere.db", "study_name=rep"], "error: storage: no SQLite file nowhere.db"),
    (["study_name=rep", "colour=blue"], "error: report: unknown argument 'colour=blue'"),
    (["study_name=rep", "wandb=maybe"], "error: wandb: 'maybe' is not one of offline, online, disabled, none"),
])
def test_report_bad_input_is_one_line_and_exit_2(study, args, message) -> None:
    cwd, study_dir, _ = study
    if not any(a.startswith("storage=") for a in args):
        args = [f"storage={journal_of(study_dir)}", *args]
    out = run_app(["report", *args], cwd=str(cwd), check=False)
    expected = message.format(journal=journal_of(study_dir), cwd=cwd)
    assert out.returncode == 2 and out.stderr.strip().splitlines()[-1].startswith(expected), out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_lr_finder_curves_are_drawn_when_trials_saved_them(tmp_path) -> None:
    from tuner.report.report import write_report

    study = optuna.create_study(direction="maximize")
    lrs = np.geomspace(1e-5, 1e-1, 40)
    for number in range(2):
        run_dir = tmp_path / "trials" / str(number)
        run_dir.mkdir(parents=True)
        np.savez(run_dir / "finder.npz", lrs=lrs, step_losses=np.linspace(1, 3, 40) + number,
                 episode_lrs=lrs[::4], normalized=np.linspace(0, 1, 10))
        (run_dir / "result.json").write_text(json.dumps({"returns": [10.0, 20.0, 30.0], "losses": [None, 1.0, 0.5]}))
        trial = study.ask()
        trial.suggest_float("lr", 1e-5, 1e-1, log=True)
        trial.set_user_attr("run_dir", str(run_dir))
        study.tell(trial, 1.0 + number)
    report = write_report(study, str(tmp_path), "in-memory")
    _valid_png(report["images"]["lr_finder"])
    _valid_png(report["images"]["best_trial_curves"])
    assert os.path.basename(report["images"]["lr_finder"]) == "lr_finder.png"
    assert "intermediate_values" in report["skipped"]  # no reports: skipped with its reason
    text = open(report["markdown"]).read()
    assert "not drawn (no intermediate values reported)" in text and "| `lr` |" in text


def test_report_and_dashboard_find_the_journal_here(tmp_path, monkeypatch) -> None:
    """No storage / study_dir / study_name: the journal the studies under ./studies share (what the
    run's printed ``note-tune dashboard`` relies on), or the one study dir with a journal of its own;
    none or several: one line, listing those there are."""
    from tuner.cli.subcommands import ArgError, _journal_file

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ArgError, match=r"or study_dir=<dir>$"):
        _journal_file({})
    (tmp_path / "studies" / "a").mkdir(parents=True)
    (tmp_path / "studies" / "journal.log").write_text("")
    assert _journal_file({}) == _journal_file({"study_name": "a"}) == str(tmp_path / "studies" / "journal.log")
    assert _journal_file({"study_dir": "studies/a"}) == str(tmp_path / "studies" / "journal.log")
    (tmp_path / "studies" / "journal.log").unlink()
    (tmp_path / "studies" / "a" / "journal.log").write_text("")  # a study made before studies shared one
    (tmp_path / "studies" / "not_a_study").mkdir()
    assert _journal_file({}) == _journal_file({"study_name": "a"}) == str(tmp_path / "studies" / "a" / "journal.log")
    (tmp_path / "studies" / "journal.log").write_text("")
    with pytest.raises(ArgError, match=r"\(journals here: storage=studies/journal.log, storage=studies/a/journal.log\)"):
        _journal_file({})


def test_report_without_arguments_reports_the_only_study_here(tmp_path, monkeypatch, capsys) -> None:
    """``note-tune report`` with nothing else (docs/guide/logging.md): the study dir and the study in it are found."""
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    from tuner.cli.subcommands import main

    (tmp_path / "studies" / "s").mkdir(parents=True)
    storage = JournalStorage(JournalFileBackend(str(tmp_path / "studies" / "journal.log")))
    study = optuna.create_study(study_name="s", storage=storage, direction="maximize")
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    monkeypatch.chdir(tmp_path)
    assert main("report", ["wandb=none"]) == 0
    assert "report of study 's':" in capsys.readouterr().out
    assert (tmp_path / "studies" / "s" / "report" / "report.md").is_file()


#: every attribute the report and the protocol read, each with a value of the wrong shape
HOSTILE_TRIAL = {"tuning_seeds": 7, "seeds": "abc", "env_steps": "x", "cpu_time_s": [1], "wall_time_s": "x",
                 "pbt_parent_trial": [0], "run_dir": 5, "fail_reason": {"a": 1}}
HOSTILE_STUDY = {"heldout_seeds": 3, "test": 5, "optimiser": [1], "heldout_winner": "0", "heldout:0000": [2],
                 "pbt_answer": -1}


def test_a_study_whose_stored_attributes_were_hand_edited_still_reports(tmp_path, monkeypatch, capsys) -> None:
    """Stored attributes are data: a journal edited by hand (or written by another program) with a
    value of the wrong shape under every key the report reads loses that value, not the report."""
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    from tuner.cli.subcommands import main

    (tmp_path / "studies" / "s").mkdir(parents=True)
    storage = JournalStorage(JournalFileBackend(str(tmp_path / "studies" / "journal.log")))
    study = optuna.create_study(study_name="s", storage=storage, direction="maximize")
    for key, value in HOSTILE_STUDY.items():
        study.set_user_attr(key, value)
    for number in range(3):
        trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
        for key, value in HOSTILE_TRIAL.items():
            trial.set_user_attr(key, value)
        study.tell(trial, float(number) if number < 2 else None,
                   state=optuna.trial.TrialState.COMPLETE if number < 2 else optuna.trial.TrialState.FAIL)
    monkeypatch.chdir(tmp_path)
    assert main("report", ["wandb=none"]) == 0
    assert "report of study 's':" in capsys.readouterr().out
    text = (tmp_path / "studies" / "s" / "report" / "report.md").read_text()
    assert "- seeds: tuning -; held-out (choosing among the top configs) -; test (scoring only) -" in text
    assert "- answer: trial 1 (best tuning score)" in text
