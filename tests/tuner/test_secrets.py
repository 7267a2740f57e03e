"""A storage password never reaches a log, a file or wandb; connection problems are one line (real
PostgreSQL with password authentication)."""

from __future__ import annotations

import os
import socket

import pytest

from tests.tuner.conftest import NO_REEVAL, TINY, run_app
from tests.tuner.postgres import postgres_server, server_binaries
from tuner.redact import MASK, _argv_secrets, find_secrets, scrub

PASSWORD = "s3cret-Pw-4711"


def test_secrets_are_found_and_masked() -> None:
    cfg = {"tuner": {"storage": f"postgresql://bob:{PASSWORD}@db:5432/optuna"},
           "logger": {"api_key": "abcd1234", "project": "p"}, "agent": {"name": "dqn"}}
    assert find_secrets(cfg) == {PASSWORD, "abcd1234"}
    assert scrub(cfg, find_secrets(cfg))["tuner"]["storage"] == f"postgresql://bob:{MASK}@db:5432/optuna"
    assert _argv_secrets(["-m", f"tuner.storage='postgresql://bob:{PASSWORD}@db/x'", "+wandb.token=t0k3n",
                          "agent.gamma=0.9"]) == {PASSWORD, "t0k3n"}
    assert find_secrets({"storage": "postgresql://bob@db/x", "x": "sqlite:///a.db"}) == set()


def _files_containing(root, needle: bytes) -> list[str]:
    hits = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as f:
                    if needle in f.read():
                        hits.append(path)
            except OSError:
                continue
    return hits


@pytest.mark.skipif(server_binaries() is None, reason="needs Debian's postgresql package")
def test_password_stays_out_of_outputs_and_bad_connections_are_one_line(tmp_path) -> None:
    with postgres_server(password=PASSWORD) as url:
        # a study logging to wandb (offline): config, recorded argv, Hydra's files, trial runs
        out = run_app(["tuner=optuna", NO_REEVAL, "tuner.study_name=secret", f"tuner.storage='{url}'",
                       "tuner.n_trials=1", "search=none", *TINY, "logger=wandb"], cwd=str(tmp_path))
        assert PASSWORD not in out.stdout + out.stderr
        assert list(tmp_path.glob("studies/secret/trials/0000/wandb/offline-run-*"))  # wandb did run
        assert _files_containing(tmp_path, PASSWORD.encode()) == []
        masked = url.replace(PASSWORD, MASK)
        assert any(MASK.encode() in open(p, "rb").read() for p in tmp_path.glob("outputs/*/*/.hydra/overrides.yaml"))

        # the password from the environment (libpq's PGPASSWORD): nothing secret on the command line
        bare = url.replace(f":{PASSWORD}@", "@")
        run_app(["tuner=optuna", NO_REEVAL, "tuner.study_name=secret", f"tuner.storage='{bare}'",
                 "tuner.n_trials=2", "search=none", *TINY], cwd=str(tmp_path), env={"PGPASSWORD": PASSWORD})

        port = url.rsplit(":", 1)[1].split("/")[0]
        with socket.socket() as s:  # a port where nothing listens
            s.bind(("127.0.0.1", 0))
            closed = s.getsockname()[1]
        cases = [(url.replace(PASSWORD, "wrong-pw"), "password authentication failed"),
                 (url.replace("/optuna", "/nodb"), 'database "nodb" does not exist'),
                 (url.replace(f":{port}/", f":{closed}/"), "Connection refused")]
        for bad, why in cases:
            out = run_app(["tuner=optuna", NO_REEVAL, "tuner.study_name=secret2", f"tuner.storage='{bad}'",
                           "tuner.n_trials=1", "search=none", *TINY], cwd=str(tmp_path), check=False)
            lines = out.stderr.strip().splitlines()
            assert out.returncode == 2 and len(lines) == 1, out.stderr
            assert lines[0].startswith("error: tuner.storage: cannot open postgresql") and why in lines[0]
            assert f"//postgres:{MASK}@127.0.0.1:" in lines[0]
            assert "wrong-pw" not in out.stdout + out.stderr and PASSWORD not in out.stdout + out.stderr
        assert masked.startswith("postgresql://postgres:***@")


def test_an_error_line_quoting_an_override_masks_its_password(tmp_path) -> None:
    # tuner.storage is not a key of a plain run: Hydra's message quotes the override, password included
    out = run_app(["-m", "seed=0,1", f"tuner.storage='postgresql://bob:{PASSWORD}@db/x'", *TINY], cwd=str(tmp_path),
                  check=False)
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        f"error: tuner.storage: no such config key (to append to your config use +tuner.storage='postgresql://bob:"
        f"{MASK}@db/x')"]
    out = run_app(["report", f"storage=postgresql://bob:{PASSWORD}@127.0.0.1:1/x", "study_name=s"], cwd=str(tmp_path),
                  check=False)
    assert out.returncode == 2 and PASSWORD not in out.stdout + out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(server_binaries() is None, reason="needs Debian's postgresql package")
def test_sweeper_multirun_keeps_the_password_out_of_every_file_and_line(tmp_path) -> None:
    """A Hydra multirun (the Optuna sweeper) on a password-protected PostgreSQL study: the jobs' saved
    configs and logs, best_config.yaml, the report and the printed lines hold no password."""
    with postgres_server(password=PASSWORD) as url:
        out = run_app(["-m", "hydra/sweeper=optuna", f"hydra.sweeper.storage='{url}'", "hydra.sweeper.study_name=s",
                       "hydra.sweeper.n_trials=2", "seed=choice(0, 1)", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                       *TINY], cwd=str(tmp_path))
        assert "[study] 2/2 finished" in out.stdout and PASSWORD not in out.stdout + out.stderr
        # the jobs' saved configs and logs, best_config.yaml and the report exist, and none holds it
        assert len(list(tmp_path.glob("sweep/*/config.yaml"))) == 2 and len(list(tmp_path.glob("sweep/*/trial.log"))) == 2
        assert (tmp_path / "sweep" / "best_config.yaml").exists()
        assert _files_containing(tmp_path, PASSWORD.encode()) == []
