"""Property-based fuzzing of everything a user types or hands over (Hypothesis).

Overrides are generated from the config schema itself (every key of several agents' configs x a bad
value of the kinds that broke things: wrong type, out of range, non-finite, huge, empty, unicode,
interpolation, override-grammar junk), subcommand arguments from each subcommand's own argument
list, and run dirs from a real run's ``result.json`` with one value replaced.  Each case runs
through the real console entry point (:func:`tuner.cli.app.main`) in one long-lived child interpreter
(``python -m tests.tuner.cli_batch --serve``), and must end in exit status 2 with one line naming the
key or file, no traceback, nothing written (an existing study byte-for-byte unchanged, no run dir
left).  A case that hangs fails the test (the child is killed after ``CASE_TIMEOUT`` seconds).

Example counts: the ``ci`` profile (default) keeps the three tests to about a minute; ``NOTE_FUZZ=long``
runs thousands of cases by hand::

    NOTE_FUZZ=long python -m pytest tests/tuner/cli/test_fuzz.py -p no:cacheprovider -q
"""

from __future__ import annotations

import functools
import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from tests.tuner.conftest import NO_REEVAL, REPO, TINY, compose_cfg
from tuner.cli.subcommands import ALLOWED
from tuner.config.bounds import AT_MOST, CHOICES, NON_NEGATIVE, POSITIVE, UNIT

CASE_TIMEOUT = 120.0
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.register_profile("long", max_examples=3000, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
PROFILE = "long" if os.environ.get("NOTE_FUZZ") == "long" else "ci"
# the long profile runs for tens of minutes: no per-test limit then (pytest-timeout's is 20 minutes)
pytestmark = pytest.mark.timeout(0 if PROFILE == "long" else 1200)

AGENTS = {"dqn": [], "ppo": [], "sac": ["env=pendulum"], "td3": ["env=pendulum"]}
# should a value be accepted after all, the study it would start is one short trial
STUDY = ["tuner=optuna", "tuner.study_name=keep", "tuner.n_trials=1", *NO_REEVAL]
# string keys whose value is free text (a name) or a path: any text is a valid value there
FREE_TEXT = ("agent.name", "optimizer.name", "buffer.name", "logger.project", "logger.entity", "logger.group",
             "logger.dir", "tuner.study_name", "tuner.study_dir", "tuner.storage", "env.kwargs")


class CliServer:
    """The child interpreter that runs cases through ``tuner.cli.app.main``."""

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        read, write = os.pipe()
        env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   WANDB_MODE="offline")
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.tuner.cli_batch", "--serve", str(write)],
                                     cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, pass_fds=(write,), text=True)
        os.close(write)
        self.answers = os.fdopen(read, "r")

    def run(self, case: dict[str, Any]) -> dict[str, Any]:
        if self.proc.poll() is not None:  # killed after a hang: the next case gets a fresh server
            self._start()
        try:
            self.proc.stdin.write(json.dumps(case) + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.answers], [], [], CASE_TIMEOUT)
            if not ready:
                raise AssertionError(f"hung for {CASE_TIMEOUT:.0f} s: note-tune {' '.join(case['args'])}")
            line = self.answers.readline()
            assert line, f"the case server died on: note-tune {' '.join(case['args'])}"
            return json.loads(line)
        except BaseException:  # an answer left pending would be read as the next case's
            self.proc.kill()
            self.proc.wait()
            self.answers.close()
            raise

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def server():
    srv = CliServer()
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A folder with an existing study ``studies/keep`` that no case may change, and a real run."""
    import optuna

    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "studies" / "keep").mkdir(parents=True)
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(folder / "studies" / "journal.log")))
    study = optuna.create_study(study_name="keep", storage=storage, direction="maximize")
    study.enqueue_trial({"x": 0.5})
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=1)
    from tuner.config.schema import validate
    from tuner.run.train import run_training

    cfg = OmegaConf.to_container(validate(compose_cfg([*TINY, "eval.episodes=1"])), resolve=True)
    run_training(cfg, str(folder / "run"))
    return folder


def _leaves(node: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for key, value in node.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out += _leaves(value, path + ".")
        elif path.split(".")[0] not in ("search", "hydra"):
            out.append((path, value))
    return out


@functools.lru_cache(maxsize=None)
def schema_keys() -> tuple[tuple[str, str, str], ...]:
    """``(agent, key, kind)`` for every leaf of each agent's composed config (studies included):
    kind is ``int``, ``float``, ``bool``, ``choice`` or ``text`` (a class path or an id)."""
    found = {}
    for agent, extra in AGENTS.items():
        cfg = OmegaConf.to_container(compose_cfg([f"agent={agent}", *extra, "tuner=optuna"]), resolve=False)
        for key, value in _leaves(cfg):
            if key in FREE_TEXT or key.startswith(("tuner.enqueue", "env.kwargs", "logger.tags")):
                continue
            numeric = key in POSITIVE or key in NON_NEGATIVE or key in UNIT or key in AT_MOST
            if key in CHOICES:
                kind = "choice"
            elif isinstance(value, bool):
                kind = "bool"
            elif isinstance(value, int) or (value is None and numeric and key not in UNIT):
                kind = "int" if value is not None or key in POSITIVE else "float"
            elif isinstance(value, float) or numeric:
                kind = "float"
            elif isinstance(value, str) and (key.endswith(("_target_", ".id", ".device"))):
                kind = "text"
            else:
                continue
            found.setdefault(key, (agent, key, kind))
    return tuple(found.values())


def _is_value(text: str) -> Any:
    """What ``text`` means on the command line (YAML), or a marker when it does not parse."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return _is_value


JUNK = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
               min_size=1, max_size=12)
HUGE = st.integers(min_value=2**63, max_value=2**90)
KINDS = {
    "wrong type": st.sampled_from(["[1,2]", "{a: 1}", "abc", "x1"]),
    "non-finite": st.sampled_from(["nan", "inf", "-inf", "1e400", "-1e400", ".nan", "-.inf"]),
    "huge": st.one_of(HUGE.map(str), HUGE.map(lambda v: f"-{v}")),
    "empty": st.just("''"),
    "unicode": st.sampled_from(["é", "☃", "日本", "\u200b", "𝟙"]),
    "interpolation": st.sampled_from(["${nope}", "${oc.env:HOME}", "${agent}", "${oc.decode:'{a: 1}'}"]),
    "junk": JUNK,
}


@st.composite
def bad_override(draw) -> tuple[str, str, str, list[str]]:
    agent, key, kind = draw(st.sampled_from(schema_keys()))
    value = draw(st.one_of(*KINDS.values()))
    meaning = _is_value(value)
    if key == "tuner.reevaluate.seeds":  # a count or a list of seeds: a list of ints is valid
        assume(not (isinstance(meaning, list) and all(isinstance(v, int) for v in meaning)))
    if kind in ("int", "float"):
        # a number in range, a null where null is allowed: valid, not what this test is about
        assume(meaning is _is_value or isinstance(meaning, (str, list, dict)) or
               (isinstance(meaning, float) and meaning != meaning) or
               (isinstance(meaning, (int, float)) and abs(meaning) > 2**53))
    elif kind == "bool":
        # OmegaConf's own spellings of a bool, and 0 / 1, are valid
        assume(not isinstance(meaning, bool) and str(meaning).strip().lower() not in
               ("true", "false", "yes", "no", "on", "off", "y", "n", "1", "0", "1.0", "0.0"))
    elif kind == "choice":
        assume(meaning not in CHOICES[key] and str(meaning) not in CHOICES[key])
    else:  # a class path, a gymnasium id, a device
        assume(not (isinstance(meaning, str) and meaning in ("auto", "cpu")))
    return agent, key, value, [f"agent={agent}", *AGENTS[agent]]


def _case(home: Path, args: list[str], watch: Path | None = None) -> dict[str, Any]:
    return {"args": args, "cwd": str(home), "watch": str(watch or home / "studies"),
            "run_dir": str(home / "made"), "env": {"HYDRA_FULL_ERROR": "0", "OPTUNA_STORAGE": None}}


def _refused(result: dict[str, Any], names: str, args: list[str]) -> None:
    lines = result["err"].strip().splitlines()
    shown = f"note-tune {' '.join(args)} -> {result['code']}: {result['err'][-600:]}"
    assert result["code"] == 2, shown
    assert len(lines) == 1 and lines[0].startswith("error: "), shown
    assert names in lines[0], (names, shown)
    assert "Traceback" not in result["out"] + result["err"], shown
    assert result["unchanged"], f"changed what it watched: {shown}"
    assert not result["run_dir_left"], f"left its run dir: {shown}"


@settings(settings.get_profile(PROFILE))
@given(case=bad_override())
def test_fuzzed_overrides_are_one_line_naming_the_key(server, home, case) -> None:
    agent, key, value, base = case
    args = [*STUDY, *base, "budget.steps=256", f"hydra.run.dir={home / 'made'}", f"{key}={value}"]
    try:
        _refused(server.run(_case(home, args)), key.split(".")[-1], args)
    finally:  # a case accepted after all must not make the next ones look as if they left it
        shutil.rmtree(home / "made", ignore_errors=True)


INT_ARGS = ("episodes", "seed", "max_steps", "fps", "port", "top_k", "n_jobs", "tie_seeds", "timeout", "keep_start")


@st.composite
def bad_subcommand(draw) -> tuple[str, list[str], str]:
    command = draw(st.sampled_from(sorted(ALLOWED)))
    # project= and entity= name a wandb project: any text is valid there
    key = draw(st.sampled_from([k for k in ALLOWED[command] if k not in ("project", "entity")] + ["bogus"]))
    if key in INT_ARGS or key == "seeds":
        # a list of seeds is valid for seeds=: its wrong types are the others
        wrong = st.sampled_from(["{a: 1}", "abc", "x1", "[]"]) if key == "seeds" else KINDS["wrong type"]
        value = draw(st.one_of(KINDS["non-finite"], KINDS["huge"], KINDS["unicode"], wrong,
                               st.integers(max_value=-1).map(str)))
    elif key in ("trust_code", "wandb", "model"):
        value = draw(st.one_of(KINDS["unicode"], KINDS["junk"]))
        assume(value.strip().lower() not in ("true", "false", "offline", "online", "disabled", "none",
                                             "final", "best"))
    elif key in ("storage", "study_dir", "study_name"):
        value = draw(st.sampled_from(["nowhere/at/all", "/dev/null", "sqlite:///nowhere/x.db", "postgresql://",
                                      "sqlite:///:memory:", "studies/journal.log/x", "../../etc"]))
    elif key == "out":  # a file, a folder under a file, a file whose extension is not a video's
        value = draw(st.sampled_from(["/proc/version", "studies/journal.log", "/dev/null/x.gif"]))
    else:
        value = draw(KINDS["junk"])
    return command, [f"{key}={value}"], key


@settings(settings.get_profile(PROFILE))
@given(case=bad_subcommand())
def test_fuzzed_subcommand_arguments_are_one_line(server, home, case) -> None:
    command, extra, key = case
    base = {"eval": [f"model={home / 'run' / 'model.npz'}", "episodes=1", "seeds=0"],
            "play": [f"model={home / 'run' / 'model.npz'}", "max_steps=5", f"out={home / 'made.gif'}"],
            "export": [f"model={home / 'run'}", "format=torchscript", f"out={home / 'made.pt'}"],
            "report": ["study_dir=studies/keep", "wandb=none", f"out={home / 'made'}"],
            "reevaluate": ["study_dir=studies/keep", "top_k=1", "seeds=1"],
            "dashboard": ["study_dir=studies/keep", "port=99999"],
            "summary": [str(home / "run"), f"out={home / 'made'}"]}[command]
    kept = [a for a in base if a.split("=")[0] != key]
    args = [command, *kept, *extra]
    try:
        result = server.run(_case(home, args, watch=home))
    finally:
        shutil.rmtree(home / "made", ignore_errors=True)
    # the dashboard keeps a bad port (so that no case starts serving), refused before the rest
    named = "port" if command == "dashboard" and key != "bogus" else key
    _refused(result, named, args)


def _mutations() -> st.SearchStrategy:
    """A path into a run's result.json config and a JSON value to put there."""
    values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | JUNK |
                          st.sampled_from(["subprocess.run", "os.system", "builtins.eval", "os:system",
                                           "${oc.env:HOME}", "note_rl.agents.torch.os", "gymnasium.make"]),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(JUNK, inner, max_size=3),
                          max_leaves=6)
    return st.tuples(st.integers(min_value=0, max_value=10**6), values)


@settings(settings.get_profile(PROFILE))
@given(mutation=_mutations())
def test_fuzzed_run_dirs_never_run_code_or_trace(server, home, tmp_path_factory, mutation) -> None:
    """``eval`` of a run dir whose result.json has one config value replaced: it evaluates (exit 0),
    or refuses in one line (exit 2); never a traceback, never a changed file, never an import of a
    module the file names."""
    index, value = mutation
    result_path = home / "run" / "result.json"
    original = json.loads(result_path.read_text())
    folder = tmp_path_factory.mktemp("mutated")
    data = json.loads(json.dumps(original))
    leaves = [(k, v) for k, v in _leaves(data["config"]) if not isinstance(v, dict)]
    key, _ = leaves[index % len(leaves)]
    node = data["config"]
    *parents, last = key.split(".")
    for part in parents:
        node = node[part]
    node[last] = value
    (folder / "result.json").write_text(json.dumps(data))
    (folder / "model.npz").write_bytes((home / "run" / "model.npz").read_bytes())
    args = ["eval", f"model={folder / 'model.npz'}", "episodes=1", "seeds=0"]
    result = server.run(_case(home, args, watch=folder))
    shown = f"{key}={value!r} -> {result['code']}: {result['err'][-600:]}"
    assert result["code"] in (0, 2) and "Traceback" not in result["out"] + result["err"], shown
    assert result["unchanged"], shown
    if result["code"] == 2:
        lines = result["err"].strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: model: "), shown
