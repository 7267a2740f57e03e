"""A journal whose last record was cut off (crash, full disk) is repaired before a driver writes, so
the study survives; a damaged line in the middle is one line, exit 2, and the file is left alone."""

from __future__ import annotations

import json

import optuna
import pytest
from optuna.storages.journal import JournalFileBackend, JournalStorage

from tests.tuner.conftest import NO_REEVAL, TINY, run_app
from tuner.common.errors import ConfigError
from tuner.study.storage import repair_journal

RECORDS = [{"op_code": 0, "worker_id": "a", "study_name": "s", "directions": [1]},
           {"op_code": 4, "worker_id": "a", "study_id": 0, "datetime_start": "2026-11-23T00:00:00"}]


def _journal(tmp_path, tail: bytes = b"") -> tuple[str, bytes]:
    path = tmp_path / "journal.log"
    data = b"".join(json.dumps(r).encode() + b"\n" for r in RECORDS) + tail
    path.write_bytes(data)
    return str(path), data


def test_torn_last_record_is_removed_after_a_backup(tmp_path) -> None:
    path, original = _journal(tmp_path, b'{"op_code": 5, "worker_id": "a", "tri')
    message = repair_journal(path)
    assert message.startswith(f"journal {path}: removed a torn last record (37 bytes)")
    backups = list(tmp_path.glob("journal.log.torn-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == original
    assert (tmp_path / "journal.log").read_bytes() == original[:-37]
    assert repair_journal(path) is None  # healthy now: nothing to do


def test_a_record_missing_only_its_newline_is_kept(tmp_path) -> None:
    path, original = _journal(tmp_path, b'{"op_code": 6, "worker_id": "a"}')
    assert "completed its last record" in repair_journal(path)
    assert (tmp_path / "journal.log").read_bytes() == original + b"\n"


def test_a_damaged_middle_line_is_one_line_and_changes_nothing(tmp_path) -> None:
    path = tmp_path / "journal.log"
    data = json.dumps(RECORDS[0]).encode() + b"\n" + b"\x00\x00garbage\n" + json.dumps(RECORDS[1]).encode() + b"\n"
    path.write_bytes(data)
    with pytest.raises(ConfigError, match=r"^tuner.storage: .*journal.log line 2 is not an Optuna journal record"):
        repair_journal(str(path))
    assert path.read_bytes() == data and not list(tmp_path.glob("*.torn-*"))


def test_a_study_with_a_torn_journal_resumes_with_nothing_lost(tmp_path) -> None:
    common = ["tuner=optuna", *NO_REEVAL, "tuner.study_name=torn", "search=none", "tuner.pruner=none",
              "+search.values.agent.gamma='choice(0.9, 0.95, 0.99)'", "tuner.sampler=grid", *TINY]
    run_app(common + ["tuner.n_trials=2"], cwd=str(tmp_path))
    journal = tmp_path / "studies" / "journal.log"  # shared with the studies beside studies/torn
    last = journal.read_bytes().splitlines()[-1]
    with open(journal, "ab") as f:  # a write cut off halfway, as a crash or a full disk leaves it
        f.write(last[: len(last) // 2])
    out = run_app(common + ["tuner.n_trials=3"], cwd=str(tmp_path))
    assert "warning: journal " in out.stderr and "removed a torn last record" in out.stderr
    study = optuna.load_study(study_name="torn", storage=JournalStorage(JournalFileBackend(str(journal))))
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3
    assert sorted(t.params["agent.gamma"] for t in study.trials) == [0.9, 0.95, 0.99]
