"""A storage password never reaches a log, a file or wandb; connection problems are one line (real
PostgreSQL with password authentication)."""

from __future__ import annotations

import json
import os
import socket

import optuna
import pytest

from tests.tuner.conftest import NO_REEVAL, TINY, run_app
from tests.tuner.postgres import postgres_server, server_binaries
from tuner.common.redact import MASK, _argv_secrets, find_secrets, scrub
from tuner.study.storage import _normalise_url

PASSWORD = "s3cret-Pw-4711"


def test_secrets_are_found_and_masked() -> None:
    cfg = {"tuner": {"storage": f"postgresql://bob:{PASSWORD}@db:5432/optuna"},
           "logger": {"api_key": "abcd1234", "project": "p"}, "agent": {"name": "dqn"}}
    assert find_secrets(cfg) == {PASSWORD, "abcd1234"}
    assert scrub(cfg, find_secrets(cfg))["tuner"]["storage"] == f"postgresql://bob:{MASK}@db:5432/optuna"
    assert _argv_secrets(["-m", f"tuner.storage='postgresql://bob:{PASSWORD}@db/x'", "+wandb.token=t0k3n",
                          "agent.gamma=0.9"]) == {PASSWORD, "t0k3n"}
    assert find_secrets({"storage": "postgresql://bob@db/x", "x": "sqlite:///a.db"}) == set()


def test_query_parameter_passwords_are_found_and_masked_structurally(monkeypatch) -> None:
    """libpq and SQLAlchemy take the password (and other credentials) as URL query parameters too."""
    from tuner.common.redact import env_secrets, redact_text, redact_url
    from tuner.study.storage import describe, describe_url

    url = f"postgresql://bob@db:5432/optuna?sslmode=require&password={PASSWORD}&passfile=/h/.pgpass&application_name=x"
    assert find_secrets({"tuner": {"storage": url}}) == {PASSWORD, "/h/.pgpass"}
    masked = f"postgresql://bob@db:5432/optuna?sslmode=require&password={MASK}&passfile={MASK}&application_name=x"
    assert redact_url(url) == masked and scrub({"storage": url}, set()) == {"storage": masked}
    # libpq's and other drivers' names, any case; the value is masked whole, percent-encoded or not
    for name in ("sslpassword", "SSLPassword", "PASSWORD", "passwd", "pwd", "token", "access_token", "api_key",
                 "client_secret"):
        assert redact_url(f"postgresql://u@h/d?{name}=a%40b&x=1") == f"postgresql://u@h/d?{name}={MASK}&x=1"
        assert find_secrets([f"postgresql://u@h/d?{name}=a%40b"]) == {"a%40b", "a@b"}
    for name in ("sslmode", "max_tokens", "tokenizer", "bypass", "keepalives"):  # not credentials
        assert redact_url(f"postgresql://u@h/d?{name}=v1") == f"postgresql://u@h/d?{name}=v1"
    # a password in user info and in the query; a URL in free text is rewritten without knowing its secrets
    both = "postgresql+psycopg://u:p%40ss@h/d?password=q1"
    assert find_secrets({"s": both}) == {"p%40ss", "p@ss", "q1"}
    line = f"error: tuner.storage: cannot open '{both}': refused, see postgresql://h/d?token=zz (x)"
    assert redact_text(line, set()) == (f"error: tuner.storage: cannot open 'postgresql+psycopg://u:{MASK}@h/d?"
                                        f"password={MASK}': refused, see postgresql://h/d?token={MASK} (x)")
    # the command line, the printed storage (valid URL or not) and OPTUNA_STORAGE
    assert _argv_secrets([f"tuner.storage='{url}'", f"hydra.sweeper.storage={both}"]) == {
        PASSWORD, "/h/.pgpass", "p%40ss", "p@ss", "q1"}
    assert PASSWORD not in describe(url, ".") and f"password={MASK}" in describe(url, ".")
    assert PASSWORD not in describe_url(f"postgresql://bob@db:notaport/x?password={PASSWORD}")
    monkeypatch.setenv("OPTUNA_STORAGE", url)
    monkeypatch.setenv("PGPASSWORD", "pg-env-pw")
    assert env_secrets() == {PASSWORD, "/h/.pgpass", "pg-env-pw"}
    assert PASSWORD not in describe(None, "studies/s")


def test_masking_replaces_whole_values_never_pieces_of_other_words(monkeypatch) -> None:
    """A short password is masked where it stands alone, never inside another word."""
    from tuner.common.redact import mask_argv_secrets, redact_text

    monkeypatch.delenv("OPTUNA_STORAGE", raising=False)
    monkeypatch.delenv("PGPASSWORD", raising=False)
    text = "error: tuner.storage: unsupported storage (agent=ppo, ppo_lr=0.1, PPO2, ppo.)"
    assert redact_text(text, {"ppo"}) == \
        f"error: tuner.storage: unsupported storage (agent={MASK}, ppo_lr=0.1, PPO2, {MASK}.)"
    argv = ["tuner.storage=postgresql://bob:ppo@db/x?sslmode=disable"]
    assert mask_argv_secrets("tuner.storage: unsupported storage 'mysql' in postgresql://bob:ppo@db/x", argv) == \
        f"tuner.storage: unsupported storage 'mysql' in postgresql://bob:{MASK}@db/x"
    assert mask_argv_secrets("sslmode=disable, supported: ppo", argv) == f"sslmode=disable, supported: {MASK}"
    # the value of a secret-named key is replaced whole (whatever its type); a longer secret wins
    cfg = {"logger": {"api_key": 12345, "token": "ab", "max_tokens": 7, "note": "ab abc 12345 xab"},
           "pw": ["hunter2", "hunter2-long"]}
    assert scrub(cfg, find_secrets(cfg) | {"hunter2", "hunter2-long"}) == {
        "logger": {"api_key": MASK, "token": MASK, "max_tokens": 7, "note": f"{MASK} abc {MASK} xab"},
        "pw": [MASK, MASK]}
    assert find_secrets(cfg) == {"12345", "ab"}


def test_optuna_storage_is_the_default_storage_and_its_password_is_masked(monkeypatch) -> None:
    from tuner.common.redact import mask_argv_secrets
    from tuner.study.storage import describe, resolve, storage_key

    monkeypatch.delenv("OPTUNA_STORAGE", raising=False)
    assert resolve(None) is None and storage_key(None) == "tuner.study_dir"
    url = f"postgresql://bob:{PASSWORD}@db/x"
    monkeypatch.setenv("OPTUNA_STORAGE", url)
    assert resolve(None) == resolve("") == url and storage_key(None) == "OPTUNA_STORAGE"
    assert resolve("sqlite:///a.db") == "sqlite:///a.db" and storage_key("sqlite:///a.db") == "tuner.storage"
    assert resolve("journal") == "journal"  # the default journal, named explicitly, wins
    assert PASSWORD not in describe(None, "studies/s") and mask_argv_secrets(f"x {PASSWORD} y", []) == f"x {MASK} y"


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
        out = run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=secret", f"tuner.storage='{url}'",
                       "tuner.n_trials=1", "search=none", *TINY, "logger=wandb"], cwd=str(tmp_path))
        assert PASSWORD not in out.stdout + out.stderr
        assert list(tmp_path.glob("studies/secret/trials/0000/wandb/offline-run-*"))  # wandb did run
        assert _files_containing(tmp_path, PASSWORD.encode()) == []
        masked = url.replace(PASSWORD, MASK)
        assert any(MASK.encode() in open(p, "rb").read() for p in tmp_path.glob("outputs/*/*/.hydra/overrides.yaml"))

        # the password from the environment (libpq's PGPASSWORD): nothing secret on the command line
        bare = url.replace(f":{PASSWORD}@", "@")
        run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=secret", f"tuner.storage='{bare}'",
                 "tuner.n_trials=2", "search=none", *TINY], cwd=str(tmp_path), env={"PGPASSWORD": PASSWORD})

        port = url.rsplit(":", 1)[1].split("/")[0]
        with socket.socket() as s:  # a port where nothing listens
            s.bind(("127.0.0.1", 0))
            closed = s.getsockname()[1]
        cases = [(url.replace(PASSWORD, "wrong-pw"), "password authentication failed"),
                 (url.replace("/optuna", "/nodb"), 'database "nodb" does not exist'),
                 (url.replace(f":{port}/", f":{closed}/"), "Connection refused")]
        for bad, why in cases:
            out = run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=secret2", f"tuner.storage='{bad}'",
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


@pytest.mark.skipif(server_binaries() is None, reason="needs Debian's postgresql package")
def test_the_password_can_come_from_optuna_storage_or_a_pgpass_file(tmp_path) -> None:
    """No password on the command line: ``OPTUNA_STORAGE`` holds the whole URL (masked in every output
    like ``tuner.storage``; the study and ``report`` use it), or a ``.pgpass``-style file (``PGPASSFILE``)
    gives libpq the password of a URL without one; the command line wins over ``OPTUNA_STORAGE``."""
    work, private = tmp_path / "work", tmp_path / "private"
    work.mkdir()
    private.mkdir()
    with postgres_server(password=PASSWORD) as url:
        common = ["tuner=optuna", *NO_REEVAL, "tuner.study_name=fromenv", "search=none", *TINY]
        out = run_app([*common, "tuner.n_trials=1"], cwd=str(work), env={"OPTUNA_STORAGE": url})
        report = run_app(["report", "study_name=fromenv", "wandb=none"], cwd=str(work), env={"OPTUNA_STORAGE": url})
        printed = out.stdout + out.stderr + report.stdout + report.stderr
        assert f"//postgres:{MASK}@127.0.0.1:" in out.stdout and "report of study 'fromenv'" in report.stdout
        assert PASSWORD not in printed and not list(work.rglob("journal.log"))
        assert _files_containing(work, PASSWORD.encode()) == []

        port = url.rsplit(":", 1)[1].split("/")[0]
        pgpass = private / "pgpass"
        pgpass.write_text(f"127.0.0.1:{port}:optuna:postgres:{PASSWORD}\n")
        pgpass.chmod(0o600)  # libpq ignores a password file that others can read
        bare = url.replace(f":{PASSWORD}@", "@")
        decoy = f"postgresql://postgres:wrong-pw@127.0.0.1:{port}/nodb"
        out = run_app([*common, f"tuner.storage='{bare}'", "tuner.n_trials=2"], cwd=str(work),
                      env={"PGPASSFILE": str(pgpass), "OPTUNA_STORAGE": decoy})
        assert "wrong-pw" not in out.stdout + out.stderr
        study = optuna.load_study(study_name="fromenv", storage=_normalise_url(url))
        assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE"]
        assert _files_containing(work, PASSWORD.encode()) == []


@pytest.mark.skipif(server_binaries() is None, reason="needs Debian's postgresql package")
def test_a_query_parameter_password_stays_out_of_every_file_and_line(tmp_path) -> None:
    """``postgresql://user@host/db?password=...`` (libpq takes the password as a query parameter): a
    study logging to wandb, its report, ``note-tune report ... wandb=offline`` and a sweeper multirun
    logging to wandb write the password to no file (run dirs, study dir, wandb runs) and no line."""
    from tests.tuner.wandb_read import offline_runs, read_run

    with postgres_server(password=PASSWORD) as url:
        url = url.replace(f":{PASSWORD}@", "@") + f"?application_name=tuner&password={PASSWORD}"
        masked = url.replace(PASSWORD, MASK)
        study = run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=q", f"tuner.storage='{url}'",
                         "tuner.n_trials=1", "search=none", *TINY, "logger=wandb"], cwd=str(tmp_path))
        report = run_app(["report", f"storage={url}", "study_name=q", "out=again", "wandb=offline"],
                         cwd=str(tmp_path))
        sweep = run_app(["-m", "hydra/sweeper=optuna", f"hydra.sweeper.storage='{url}'", "hydra.sweeper.study_name=s",
                         "hydra.sweeper.n_trials=2", "seed=choice(0, 1)", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                         *TINY, "logger=wandb"], cwd=str(tmp_path))
        printed = "".join(p.stdout + p.stderr for p in (study, report, sweep))
        assert PASSWORD not in printed and f"password={MASK}" in study.stdout
        assert "report of study 'q'" in report.stdout and "[study] 2/2 finished" in sweep.stdout
        # the connections worked: trials finished in the database
        for name in ("q", "s"):
            trials = optuna.load_study(study_name=name, storage=_normalise_url(url)).trials
            assert trials and all(t.state.name == "COMPLETE" for t in trials)
        # wandb did run everywhere (trials, the study runs, the report's run), and saw the masked URL
        studied = tmp_path / "studies" / "q"
        assert list(studied.glob("trials/0000/wandb/offline-run-*"))
        assert len(list(tmp_path.glob("sweep/*/wandb/offline-run-*"))) == 2
        (again,) = offline_runs(str(tmp_path / "again"))
        assert f"optuna?application_name=tuner&password={MASK}" in json.dumps(read_run(again)["config"])
        (study_run,) = offline_runs(str(studied))
        assert json.dumps(masked) in json.dumps(read_run(study_run)["config"])
        assert offline_runs(str(tmp_path / "sweep"))  # the sweeper's study run
        assert f"password={MASK}" in (studied / "study.json").read_text()
        assert f"password={MASK}" in (studied / "report" / "report.md").read_text()
        assert (tmp_path / "sweep" / "best_config.yaml").exists() and (studied / "best_config.yaml").exists()
        assert _files_containing(tmp_path, PASSWORD.encode()) == []


def test_a_secret_config_key_stays_out_of_run_dirs_and_is_given_back_when_a_run_is_rebuilt(tmp_path) -> None:
    """A secret-named key the user adds (``env.kwargs.api_token``, which the env needs to open) is
    masked in every file - a plain run's result.json, a study's trial config.yaml and result.json, its
    identity record, study.json, best_config.yaml - yet the study's held-out stage retrains with it (the
    command's own config gives it back), and ``eval`` asks for it in one line until the environment
    variable named there gives it."""
    from tests.tuner.lucky_envs import GATE_TOKEN
    from tuner.config.untrusted import secret_env_name

    gated = ["env.module=tests.tuner.lucky_envs", "env.id=Gated-v0", f"+env.kwargs.api_token={GATE_TOKEN}",
             *TINY, "budget.steps=100", "eval.episodes=2"]
    plain = run_app([*gated, "hydra.run.dir=plain"], cwd=str(tmp_path))
    study = run_app(["tuner=optuna", "tuner.study_name=g", "tuner.n_trials=2", "tuner.reevaluate.top_k=1",
                     "tuner.reevaluate.seeds=1", "tuner.reevaluate.episodes=2", "tuner.pruner=none", *gated],
                    cwd=str(tmp_path))
    assert GATE_TOKEN not in plain.stdout + plain.stderr + study.stdout + study.stderr
    study_dir = tmp_path / "studies" / "g"
    summary = json.loads((study_dir / "study.json").read_text())
    assert summary["reevaluation"]["configs"][0]["mean"] == 50.0  # the held-out run opened the gate
    assert _files_containing(tmp_path, GATE_TOKEN.encode()) == []
    result = json.loads(next(tmp_path.glob("plain/**/result.json")).read_text())
    assert result["config"]["env"]["kwargs"]["api_token"] == MASK and result["final_eval_mean_return"] == 50.0
    model = str(next(tmp_path.glob("plain/**/model.npz")))
    need = run_app(["eval", f"model={model}", "trust_code=true", "episodes=1"], cwd=str(tmp_path), check=False)
    key = secret_env_name("env.kwargs.api_token")
    assert key == "NOTE_SECRET_ENV_KWARGS_API_TOKEN" and need.returncode == 2
    assert need.stderr.strip().splitlines() == [
        f"error: model: {os.path.dirname(model)}{os.sep}result.json: env.kwargs.api_token: a secret, not saved "
        f"with the run; give it in the environment variable {key}"]
    given = run_app(["eval", f"model={model}", "trust_code=true", "episodes=1", "seeds=0"], cwd=str(tmp_path),
                    env={key: GATE_TOKEN})
    assert "50.0" in given.stdout
