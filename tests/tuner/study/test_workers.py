"""Issue 37: GPU placement of trials (tuner.gpus_per_trial) and several study drivers from one command
(tuner.workers with the local, submitit_local and ray launchers)."""

import os

import optuna
import pytest
from optuna.trial import TrialState

from tests.tuner.conftest import NO_REEVAL, TINY, journal_of, run_app
from tuner.common.errors import ConfigError
from tuner.study.gpus import GpuPlacer, Placement, visible_gpus

SPACE = ["search=none", "tuner.sampler=random", "+search.values.agent.gamma='interval(0.9, 0.99)'",
         "tuner.pruner=none"]


def _journal_study(study_dir, name):
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    return optuna.load_study(study_name=name,
                             storage=JournalStorage(JournalFileBackend(journal_of(study_dir))))


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


def test_settings_refuse_what_placement_cannot_do() -> None:
    from tuner.study.settings import tuner_settings

    with pytest.raises(ConfigError, match="tuner.trial_memory_mb"):
        tuner_settings({"gpus_per_trial": 0.5, "trial_memory_mb": 1000})
    with pytest.raises(ConfigError, match="tuner.worker_launcher"):
        tuner_settings({"worker_launcher": "k8s"})
    with pytest.raises(ConfigError, match="tuner.workers"):
        tuner_settings({"workers": 0})
    assert tuner_settings({"gpus_per_trial": 0.25, "workers": 3}).gpus_per_trial == 0.25


def test_slurm_launcher_without_sbatch_is_refused_before_the_study_opens(tmp_path) -> None:
    import sys

    pytest.importorskip("submitit")
    out = run_app(["tuner=optuna", "tuner.study_name=nosb", "tuner.workers=2", "tuner.worker_launcher=submitit_slurm",
                   *TINY], cwd=str(tmp_path), env={"PATH": os.path.dirname(sys.executable)}, check=False)
    assert out.returncode == 2 and "sbatch, which is not on PATH" in out.stderr, out.stderr
    assert not (tmp_path / "studies" / "nosb").exists()


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


# -- 2. workers from one command ----------------------------------------------------------------------
SLOW = ["env.module=tests.tuner.faulty_envs", "env.id=Slow-v0"]
HELDOUT_ONCE = ["tuner.reevaluate.top_k=1", "tuner.reevaluate.seeds=1", "tuner.reevaluate.episodes=2",
                "tuner.seeds.test=0"]


def _start_main(args, cwd):
    import subprocess
    import sys

    from tests.tuner.conftest import REPO

    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.Popen([sys.executable, "-m", "tuner", *args], cwd=cwd, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _kill_a_worker_mid_trial(load, main_pid, timeout=300.0):
    """SIGKILL the driver of a running trial that is not the command's own: a worker, mid-trial."""
    import signal
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            trials = load().trials
        except (KeyError, ValueError, FileNotFoundError):
            trials = []
        for t in trials:
            driver = t.user_attrs.get("driver", "")
            if t.state == TrialState.RUNNING and driver and not driver.endswith(f":{main_pid}"):
                os.kill(int(driver.rpartition(":")[2]), signal.SIGKILL)
                return t.number
        time.sleep(0.2)
    raise AssertionError("no worker trial seen running")


@pytest.mark.parametrize("launcher", ["local", "submitit_local"])
def test_workers_finish_the_study_when_one_is_sigkilled(tmp_path, launcher) -> None:
    if launcher.startswith("submitit"):
        pytest.importorskip("submitit")
    _one_killed_worker(tmp_path, launcher)


def _one_killed_worker(tmp_path, launcher, extra=(), study=None) -> None:
    tiny = [o for o in TINY if not o.startswith("budget.steps")] + ["budget.steps=1200"]
    args = ["tuner=optuna", *HELDOUT_ONCE, "tuner.study_name=wk", "tuner.n_trials=4", "tuner.workers=2",
            f"tuner.worker_launcher={launcher}", *SPACE, *SLOW, *tiny, *extra]
    proc = _start_main(args, str(tmp_path))
    study_dir = tmp_path / "studies" / "wk"
    load = study or (lambda: _journal_study(study_dir, "wk"))
    try:
        killed = _kill_a_worker_mid_trial(load, proc.pid)
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    where = {"local": "local; log", "submitit_local": "submitit local job", "submitit_slurm": "submitit slurm job"}
    assert "worker 1: " in out and where[launcher] in out
    assert "worker 1 died: killed by SIGKILL" in out
    study = load()
    states = [t.state for t in study.trials]
    assert states.count(TrialState.COMPLETE) == 4 and TrialState.RUNNING not in states
    assert study.trials[killed].state == TrialState.FAIL
    assert "stopped" in study.trials[killed].user_attrs["fail_reason"]
    # the held-out stage ran once, in the command itself
    assert out.count("[held-out] 1/1 runs done") == 1
    logs = "".join(p.read_text() for p in (study_dir / "workers").rglob("*") if p.is_file() and
                   p.suffix in (".log", ".out", ".err"))
    assert "held-out" not in logs


def test_workers_share_the_trial_cap(tmp_path) -> None:
    """Three drivers, n_trials=5: exactly five finished trials, run by more than one driver."""
    out = run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=cap", "tuner.n_trials=5", "tuner.workers=3",
                   *SPACE, *TINY], cwd=str(tmp_path))
    study = _journal_study(tmp_path / "studies" / "cap", "cap")
    assert [t.state for t in study.trials].count(TrialState.COMPLETE) == 5 and len(study.trials) == 5
    assert len({t.user_attrs["driver"] for t in study.trials}) >= 2
    assert out.stdout.count("finished") >= 2 and "worker 2: pid" in out.stdout


# -- 3. Ray -------------------------------------------------------------------------------------------
@pytest.fixture
def ray_cluster(monkeypatch):
    """A local Ray cluster on 127.0.0.1: a head node and a second node, one CPU each.  Ray turns a
    loopback address into the machine's own IP unless this switch (meant for laptops) keeps it."""
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # the command's process reads it too
    pytest.importorskip("ray")
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                             "node_ip_address": "127.0.0.1"})
    node = cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
    cluster.wait_for_nodes()
    try:
        yield cluster, node
    finally:
        cluster.shutdown()


def test_ray_workers_finish_the_study_when_a_node_dies(tmp_path, ray_cluster) -> None:
    import time

    cluster, node = ray_cluster
    tiny = [o for o in TINY if not o.startswith("budget.steps")] + ["budget.steps=1200"]
    args = ["tuner=optuna", *HELDOUT_ONCE, "tuner.study_name=ray", "tuner.n_trials=5", "tuner.workers=3",
            "tuner.worker_launcher=ray", f"+tuner.worker_resources.address={cluster.address}", *SPACE, *SLOW, *tiny]
    proc = _start_main(args, str(tmp_path))
    study_dir = tmp_path / "studies" / "ray"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:  # both Ray workers have started a trial
            try:
                drivers = {t.user_attrs.get("driver") for t in _journal_study(study_dir, "ray").trials}
            except (KeyError, ValueError, FileNotFoundError):
                drivers = set()
            if len(drivers - {None} - {d for d in drivers if d and d.endswith(f":{proc.pid}")}) >= 2:
                break
            time.sleep(0.3)
        else:
            raise AssertionError("the Ray workers did not start trials")
        cluster.remove_node(node)  # its raylet and actor die; the actor's driver dies with it
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert out.count("Ray actor on node 127.0.0.1") == 2
    assert "died" in out
    study = _journal_study(study_dir, "ray")
    states = [t.state for t in study.trials]
    assert states.count(TrialState.COMPLETE) == 5 and TrialState.RUNNING not in states
    assert out.count("[held-out] 1/1 runs done") == 1


# -- 4. SLURM -----------------------------------------------------------------------------------------
def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SLURM_CONF = """ClusterName=nt
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser={user}
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/munge.sock
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
NodeName={host} CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"""


@pytest.fixture
def slurm_cluster(monkeypatch):
    """A one-node SLURM cluster on this machine: munged, slurmctld and slurmd with their own
    config, state, socket and ports in a temporary folder (Debian packages slurm-wlm and munge;
    slurmd runs as root to start jobs)."""
    import shutil
    import signal
    import socket
    import subprocess
    import tempfile
    import time

    if not all(shutil.which(x) for x in ("munged", "slurmctld", "slurmd", "sbatch", "sinfo")):
        pytest.skip("slurm-wlm and munge are not installed (apt-get install slurm-wlm munge)")
    if os.geteuid() != 0:
        pytest.skip("slurmd must run as root to start jobs")
    pytest.importorskip("submitit")
    d = tempfile.mkdtemp(prefix="slurm-", dir="/tmp")  # short: the munge socket path has a length limit
    for sub in ("state", "spool"):
        os.makedirs(os.path.join(d, sub))
    key = os.path.join(d, "munge.key")
    with open(key, "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(key, 0o400)
    conf = os.path.join(d, "slurm.conf")
    with open(conf, "w") as f:
        f.write(SLURM_CONF.format(host=socket.gethostname(), ctld_port=_free_port(), d_port=_free_port(),
                                  user="root", d=d, cpus=os.cpu_count()))
    monkeypatch.setenv("SLURM_CONF", conf)
    subprocess.run(["munged", "--force", f"--socket={d}/munge.sock", f"--key-file={key}", f"--pid-file={d}/munged.pid",
                    f"--log-file={d}/munged.log", f"--seed-file={d}/munge.seed"], check=True)
    subprocess.run(["slurmctld", "-f", conf], check=True)
    subprocess.run(["slurmd", "-f", conf], check=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True)
            if out.stdout.strip() == "idle":
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"the SLURM node did not come up: {out.stdout} {out.stderr}")
        yield conf
    finally:
        for name in ("slurmd", "slurmctld", "munged"):  # the daemons this fixture started, by their pid files
            try:
                with open(os.path.join(d, f"{name}.pid")) as f:
                    os.kill(int(f.read().strip()), signal.SIGTERM)
            except (OSError, ValueError):
                pass
        time.sleep(1)
        shutil.rmtree(d, ignore_errors=True)


def test_slurm_workers_finish_the_study_when_one_is_sigkilled(tmp_path, slurm_cluster) -> None:
    _one_killed_worker(tmp_path, "submitit_slurm")


def test_sigterm_on_the_command_stops_its_workers(tmp_path) -> None:
    import re
    import signal
    import time

    tiny = [o for o in TINY if not o.startswith("budget.steps")] + ["budget.steps=1500"]
    args = ["tuner=optuna", *NO_REEVAL, "tuner.study_name=term", "tuner.n_trials=6", "tuner.workers=2", *SPACE,
            *SLOW, *tiny]
    proc = _start_main(args, str(tmp_path))
    study_dir = tmp_path / "studies" / "term"
    try:
        deadline = time.monotonic() + 300
        worker = None
        while time.monotonic() < deadline and worker is None:
            try:
                trials = _journal_study(study_dir, "term").trials
            except (KeyError, ValueError, FileNotFoundError):
                trials = []
            worker = next((int(t.user_attrs["driver"].rpartition(":")[2]) for t in trials
                           if t.state == TrialState.RUNNING and "driver" in t.user_attrs
                           and not t.user_attrs["driver"].endswith(f":{proc.pid}")), None)
            time.sleep(0.2)
        assert worker is not None
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, out
    assert re.search(rf"worker 1: pid {worker} ", out)
    time.sleep(1)
    with pytest.raises(ProcessLookupError):
        os.kill(worker, 0)
    assert TrialState.RUNNING not in [t.state for t in _journal_study(study_dir, "term").trials]


def test_a_worker_that_ignores_sigterm_is_killed_and_reaped(tmp_path, monkeypatch) -> None:
    """A local worker still running after its grace is SIGKILLed and waited for: an unreaped child keeps
    its pid, which the command's zombie check would take for a live driver and leave its trial RUNNING."""
    import sys
    import time

    from note_rl.utils import pid_alive
    from tuner.study.workers import _Local

    monkeypatch.setattr(_Local, "stop_grace_s", 0.5)
    code = "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
    worker = _Local([sys.executable, "-c", code], str(tmp_path), dict(os.environ), str(tmp_path / "w.log"))
    while b"up" not in (tmp_path / "w.log").read_bytes():
        assert worker.status() is None
        time.sleep(0.05)
    worker.stop()
    assert worker.proc.returncode == -9 and not pid_alive(worker.proc.pid)


def test_workers_on_a_postgresql_study(tmp_path) -> None:
    """The storage every machine would reach: the workers get the command's PostgreSQL URL (quoted for
    Hydra: its ':' '@' '/'), one is SIGKILLed, the study still ends with exactly n_trials."""
    from tests.tuner.postgres import postgres_server, server_binaries

    if server_binaries() is None:
        pytest.skip("Debian's postgresql package is not installed")
    from tuner.study.storage import make_storage

    with postgres_server() as url:
        _one_killed_worker(tmp_path, "local", [f"tuner.storage='{url}'"],
                           study=lambda: optuna.load_study(study_name="wk", storage=make_storage(url, str(tmp_path))))


@pytest.mark.parametrize("value", ["postgresql://u:p@w@h:5/db?x=1", "/tmp/a b/c", "it's", "a\\b", "end\\", "q\\'x"])
def test_worker_overrides_carry_values_as_they_are(value) -> None:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from tuner.study.workers import _quote

    assert OverridesParser.create().parse_overrides([f"k={_quote(value)}"])[0].value() == value


def test_worker_command_line_replaces_the_commands_own_settings() -> None:
    from types import SimpleNamespace

    from tuner.study.workers import worker_argv

    s = SimpleNamespace(study_name="s", study_dir="/x/studies/s", storage=None)
    argv = worker_argv(["tuner=optuna", "tuner.workers=3", "tuner.study_name=other", "agent=dqn",
                        "tuner.worker_launcher=local"], s, 2)
    assert argv[1:3] == ["-m", "tuner"]
    assert argv[3:] == ["tuner=optuna", "agent=dqn", "tuner.study_name='s'", "tuner.study_dir='/x/studies/s'",
                        "tuner.worker=2", "hydra.run.dir='/x/studies/s/workers/2'"]
