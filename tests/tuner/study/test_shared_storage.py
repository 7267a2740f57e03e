"""Studies beside each other share one journal by default (``studies/journal.log``), so one
optuna-dashboard compares them; a study dir with a journal of its own keeps it; a removed study dir
does not silently continue the study its journal still holds."""

import os
import shutil
import subprocess
import sys

import optuna

from tests.tuner.conftest import NO_REEVAL, TINY, run_app
from tuner.study.identity import storage_text
from tuner.study.storage import default_journal, journal_path, own_journal, shares_journal

STUDY = ["tuner=optuna", *NO_REEVAL, "search=none", "tuner.pruner=none", *TINY]


def _studies(journal) -> dict[str, int]:
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    storage = JournalStorage(JournalFileBackend(str(journal)))
    return {s.study_name: s.n_trials for s in optuna.get_all_study_summaries(storage, include_best_trial=False)}


def test_the_default_journal_is_the_parents_unless_the_dir_has_its_own(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPTUNA_STORAGE", raising=False)
    new, old = tmp_path / "studies" / "new", tmp_path / "studies" / "old"
    old.mkdir(parents=True)
    (old / "journal.log").write_text("")
    assert default_journal(str(new)) == str(tmp_path / "studies" / "journal.log")
    assert default_journal(str(old)) == str(old / "journal.log")
    assert journal_path(None, str(new)) == journal_path("journal", str(new)) == default_journal(str(new))
    assert (shares_journal(None, str(new)), shares_journal(None, str(old))) == (True, False)
    assert not shares_journal(str(tmp_path / "x.log"), str(new))
    # the identity records the journal relative to the study dir: studies moved together stay the same studies
    assert (storage_text(None, str(new)), storage_text(None, str(old))) == ("../journal.log", "journal.log")
    # a sweep keeps a journal of its own; OPTUNA_STORAGE still wins
    assert own_journal(None, str(new)) == os.path.join(str(new), "journal.log")
    monkeypatch.setenv("OPTUNA_STORAGE", "sqlite:///x.db")
    assert own_journal(None, str(new)) == "sqlite:///x.db" and not shares_journal(None, str(new))


def test_two_studies_share_the_journal_and_report_finds_each_by_its_dir(tmp_path) -> None:
    for name in ("first", "second"):
        run_app([*STUDY, f"tuner.study_name={name}", "tuner.n_trials=1"], cwd=str(tmp_path))
    journal = tmp_path / "studies" / "journal.log"
    assert _studies(journal) == {"first": 1, "second": 1}
    assert not (tmp_path / "studies" / "first" / "journal.log").exists()
    out = run_app(["report", "study_dir=studies/second", "wandb=none"], cwd=str(tmp_path))
    assert "report of study 'second'" in out.stdout
    assert (tmp_path / "studies" / "second" / "report" / "report.md").is_file()
    out = run_app(["report", "study_name=first", "wandb=none"], cwd=str(tmp_path))
    assert (tmp_path / "studies" / "first" / "report" / "report.md").is_file(), out.stdout
    bad = run_app(["report", "wandb=none"], cwd=str(tmp_path), check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip() == f"error: study_name: missing (studies in {journal}: first, second)"


def test_a_study_with_its_own_journal_resumes_there(tmp_path) -> None:
    """A study made before studies shared one journal (its dir holds ``journal.log``) tops up in it."""
    own = tmp_path / "studies" / "legacy" / "journal.log"
    run_app([*STUDY, "tuner.study_name=legacy", "tuner.n_trials=1", f"tuner.storage={own}"], cwd=str(tmp_path))
    run_app([*STUDY, "tuner.study_name=legacy", "tuner.n_trials=2"], cwd=str(tmp_path))
    assert _studies(own) == {"legacy": 2}
    assert not (tmp_path / "studies" / "journal.log").exists()


def test_a_removed_study_dir_is_refused_then_deleted_with_optunas_command(tmp_path) -> None:
    run_app([*STUDY, "tuner.study_name=gone", "tuner.n_trials=1"], cwd=str(tmp_path))
    journal = tmp_path / "studies" / "journal.log"
    shutil.rmtree(tmp_path / "studies" / "gone")
    before = journal.read_bytes()
    out = run_app([*STUDY, "tuner.study_name=gone", "tuner.n_trials=1"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2
    line = out.stderr.strip()
    command = f"optuna delete-study --storage {journal} --storage-class JournalFileBackend --study-name gone"
    assert line == (f"error: tuner.study_dir: study 'gone' has 1 trial in {journal} but "
                    f"{tmp_path / 'studies' / 'gone'} holds no record of it (removed?); start it afresh with: "
                    f"{command}, or continue it with tuner.resume=force")
    assert journal.read_bytes() == before  # nothing written to the journal
    # the command the line gives, run as given (Optuna's own CLI, beside this Python)
    optuna_cli = os.path.join(os.path.dirname(sys.executable), "optuna")
    subprocess.run([optuna_cli, *command.split()[1:]], check=True, capture_output=True)
    run_app([*STUDY, "tuner.study_name=gone", "tuner.n_trials=1"], cwd=str(tmp_path))
    assert _studies(journal) == {"gone": 1}
    assert (tmp_path / "studies" / "gone" / "study.json").is_file()
