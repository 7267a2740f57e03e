"""The ``strategy`` node is a ``_target_`` object: every ``strategy=<name>`` builds its class, a config
without ``_target_`` (saved before it existed) still builds by its name, the checks read the class's
facts and give the lines the name switches gave, and a file read back may name only the project's classes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest
from omegaconf import OmegaConf

from note_rl.backends import backend_info, backend_names
from tests.tuner.conftest import compose_cfg
from tuner.common.errors import ConfigError
from tuner.config.schema import validate
from tuner.config.strategies import STRATEGIES, TARGETS, PoolNetwork, strategy_class, strategy_of
from tuner.config.untrusted import UntrustedFileError, check_code_refs
from tuner.run.build import train_kwargs

CLASSES = {"single": "Single", "pool_network": "PoolNetwork", "ddp": "DDP", "mirrored": "Mirrored",
           "multi_worker": "MultiWorker", "parameter_server": "ParameterServer"}
TF = ("mirrored", "multi_worker", "parameter_server")


@dataclass
class MyPool(PoolNetwork):
    """A user's own pool strategy (its name is the one it inherits)."""


class NotAStrategy:
    kind: ClassVar[str] = "single"


def _validated(name: str, *overrides: str):
    backend = ["backend=tf"] if name in TF else []
    return validate(compose_cfg(["agent=dqn", f"strategy={name}", *backend, *overrides]), check_env=False)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_every_strategy_name_is_its_class(name, monkeypatch) -> None:
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["localhost:1"], "ps": ["localhost:2"]}}')
    assert set(STRATEGIES) == set(CLASSES)
    cfg = _validated(name)
    assert cfg.strategy._target_ == f"tuner.config.strategies.{CLASSES[name]}" and cfg.strategy.name == name
    built = strategy_of(cfg.strategy)
    assert type(built).__name__ == CLASSES[name] and built.kind == built.name == name
    # the same class from the plain dict a trial receives, and from the name alone (a saved config of old)
    plain = OmegaConf.to_container(cfg.strategy, resolve=True)
    assert type(strategy_of(plain)) is type(built) is strategy_class({"name": name})
    # the backend a strategy needs is the one note_rl says implements it
    owners = {n: b for b in backend_names() for n, _ in backend_info(b).strategies}
    assert built.backend == owners.get(name)


def test_a_saved_config_without_target_builds_as_before() -> None:
    """Runs saved before ``_target_`` hold ``name`` alone; ``strategy.name=...`` on a command line (or a
    search over it) keeps choosing the strategy, whatever the option's ``_target_``."""
    cfg = OmegaConf.to_container(validate(compose_cfg(["strategy=pool_network"]), check_env=False), resolve=True)
    before = train_kwargs(cfg)
    del cfg["strategy"]["_target_"]
    assert train_kwargs(cfg) == before and before["pool_network"] is True and before["processes"] == 2
    old = validate(OmegaConf.create(cfg), check_env=False)  # merged into the schema: _target_ stays unset
    assert old.strategy._target_ is None and type(strategy_of(old.strategy)) is PoolNetwork
    renamed = validate(compose_cfg(["strategy=single", "strategy.name=pool_network"]), check_env=False)
    assert train_kwargs(OmegaConf.to_container(renamed, resolve=True))["pool_network"] is True
    assert strategy_of({}).name == "single"  # a Python-API dict without a strategy name


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_train_options_are_what_the_name_switch_passed(name, monkeypatch) -> None:
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["localhost:1"], "ps": ["localhost:2"]}}')
    options = [] if name in TF else ["strategy.processes_pr=3", "strategy.shuffle=true"]  # the schema's defaults
    cfg = OmegaConf.to_container(_validated(name, *options), resolve=True)
    s = cfg["strategy"]
    pool = s["name"] == "pool_network"  # the switch train_kwargs had
    old = dict(pool_network=pool, processes=s["processes"] if pool else None, num_store=s["num_store"],
               parallel_store_and_training=s["parallel_store_and_training"], start_method=s["start_method"],
               jit_compile=cfg["backend"]["jit_compile"], steps=cfg["budget"]["steps"], p=cfg["logger"]["p"],
               **{k: s[k] for k in ("processes_pr", "processes_her", "shuffle", "parallel_training_and_save")})
    assert train_kwargs(cfg) == old
    assert strategy_of(s).replica_count() == (2 if name == "ddp" else 1)


# the lines the name switches gave (recorded before the classes replaced them)
LINES = [
    (["strategy=ddp", "backend=tf"], "strategy=ddp: data-parallel replicas over torch.distributed needs backend=torch, "
     "not backend=tf (backend=tf's: mirrored, multi_worker, parameter_server)"),
    (["strategy=mirrored", "backend=torch"], "strategy=mirrored: tf.distribute.MirroredStrategy needs backend=tf, "
     "not backend=torch (backend=torch's: ddp)"),
    (["strategy=ddp", "strategy.replicas=3", "agent.batch=64"],
     "strategy.replicas=3: agent.batch=64 does not split evenly over the replicas; make it a multiple of 3"),
    (["strategy=ddp", "strategy.comm=mpi"],
     "strategy.comm=mpi: choose gloo, nccl (GPUs) or null (nccl for agents on a GPU, else gloo)"),
    (["strategy=multi_worker", "backend=tf"], "strategy=multi_worker: TF_CONFIG names no worker job; set it on "
     "every machine, e.g. TF_CONFIG='{\"cluster\": {\"worker\": [\"host1:12345\", \"host2:12345\"]}, "
     "\"task\": {\"type\": \"worker\", \"index\": 0}}'"),
    (["strategy=parameter_server", "backend=tf"], "strategy=parameter_server: TF_CONFIG names no worker and no ps job"),
    (["strategy=parameter_server", "backend=tf", "tuner=optuna"], "strategy=parameter_server: a cluster strategy "
     "trains single runs (every machine runs the same command with its TF_CONFIG), not tuner=optuna"),
    (["strategy=ddp", "checkpoint.every=100"], "checkpoint.every: run checkpoints are taken with strategy=single, "
     "not strategy=ddp (its workers' envs and replicas are not in them)"),
    (["strategy=mirrored", "backend=tf", "checkpoint.every=100"], "checkpoint.every: run checkpoints are taken with "
     "strategy=single, not strategy=mirrored (its workers' envs and replicas are not in them)"),
    (["strategy=pool_network", "checkpoint.every=100"], "checkpoint.every: run checkpoints are taken with "
     "strategy=single, not strategy=pool_network (its workers' envs and replicas are not in them)"),
    (["strategy=pool_network", "agent.normalize=true"], "agent.normalize: runs with in-process collection only "
     "(not with buffer=her or strategy=pool_network)"),
    (["strategy=pool_network", "agent=ddpg", "env=point_reach"], "strategy=pool_network: HER=True cannot be "
     "combined with pool_network=True (single-process collection only)"),
    (["strategy=pool_network", "agent.n_envs=2"], "agent.n_envs=2: n_envs=2 (vectorised envs) cannot be combined "
     "with pool_network=True; use n_envs=1"),
    (["strategy=single", "strategy.name=pool_network", "agent.n_envs=2"], "agent.n_envs=2: n_envs=2 (vectorised "
     "envs) cannot be combined with pool_network=True; use n_envs=1"),
    (["strategy=single", "strategy.name=ddp", "backend=tf"], "strategy=ddp: data-parallel replicas over "
     "torch.distributed needs backend=torch, not backend=tf (backend=tf's: mirrored, multi_worker, parameter_server)"),
]


@pytest.mark.parametrize("overrides, line", LINES, ids=[" ".join(o) for o, _ in LINES])
def test_the_checks_give_the_lines_the_name_switches_gave(overrides, line, monkeypatch) -> None:
    monkeypatch.delenv("TF_CONFIG", raising=False)
    agent = [] if any(o.startswith("agent=") for o in overrides) else ["agent=dqn"]
    with pytest.raises(ConfigError) as err:
        validate(compose_cfg([*agent, *overrides]), check_env=False)
    assert str(err.value).startswith(line)


def test_a_users_own_strategy_class_is_that_strategy() -> None:
    own = f"{__name__}.MyPool"
    cfg = validate(compose_cfg(["strategy=pool_network", f"strategy._target_={own}"]), check_env=False)
    assert type(strategy_of(cfg.strategy)) is MyPool
    assert train_kwargs(OmegaConf.to_container(cfg, resolve=True))["pool_network"] is True
    with pytest.raises(ConfigError, match=r"^agent.normalize: runs with in-process collection only"):
        validate(compose_cfg(["strategy=pool_network", f"strategy._target_={own}", "agent.normalize=true"]),
                 check_env=False)


@pytest.mark.parametrize("target, line", [
    (f"{__name__}.MyPool", f"strategy._target_: {__name__}.MyPool is a pool_network strategy, not "
     "strategy.name=single (choose strategy=pool_network)"),
    (f"{__name__}.NotAStrategy", f"strategy._target_: {__name__}.NotAStrategy is not a strategy (a subclass of one "
     "of tuner.config.strategies.Single, "),
    ("tuner.config.strategies.Strategy", "strategy._target_: tuner.config.strategies.Strategy is not a strategy"),
    ("no_such_pkg.Strategy", "strategy._target_: cannot import 'no_such_pkg.Strategy'"),
])
def test_a_bad_strategy_target_is_one_line(target, line) -> None:
    with pytest.raises(ConfigError) as err:
        validate(compose_cfg(["strategy=single", f"strategy._target_={target}"]), check_env=False)
    assert str(err.value).startswith(line) and "\n" not in str(err.value)


def test_a_file_read_back_names_only_the_project_strategy_classes() -> None:
    """Saved configs are data: ``strategy._target_`` may be one of the project's classes, not the module's
    functions, a user's subclass (unless trusted) or a project class at another key."""
    assert set(TARGETS) == {f"tuner.config.strategies.{c}" for c in CLASSES.values()}
    for target in TARGETS:
        check_code_refs({"strategy": {"_target_": target, "name": "single"}}, "config.yaml")
    for ref in ("tuner.config.strategies.strategy_of", "tuner.config.strategies.Strategy", f"{__name__}.MyPool",
                "os.system"):
        with pytest.raises(UntrustedFileError, match=r"strategy._target_: .* is not one of note_rl's own classes"):
            check_code_refs({"strategy": {"_target_": ref, "name": "pool_network"}}, "config.yaml")
    check_code_refs({"strategy": {"_target_": f"{__name__}.MyPool"}}, "config.yaml", trusted=[f"{__name__}.MyPool"])
    with pytest.raises(UntrustedFileError, match=r"agent.policy._target_"):
        check_code_refs({"agent": {"policy": {"_target_": "tuner.config.strategies.Single"}}}, "config.yaml")


def test_only_the_tf_strategies_make_a_strategy_object(monkeypatch) -> None:
    """The tf.distribute strategy comes from the class, through the backend (asked as before: the strategy's
    name, ``devices`` / ``logical_cpus`` or None, ``backend.device``); the other strategies make none."""
    import note_rl.backends

    asked = []

    class Backend:
        def make_strategy(self, name, devices=None, logical_cpus=None, device=None):
            asked.append((name, devices, logical_cpus, device))
            return "made"

    monkeypatch.setattr(note_rl.backends, "get_backend", lambda name: Backend())
    for name, cls in STRATEGIES.items():
        node = {"name": name, "devices": ["/cpu:0"] if name == "mirrored" else [], "logical_cpus": 2}
        made = strategy_of(node).make({"name": "tf", "device": "cpu"})
        assert (made == "made") is (name in TF)
    assert asked == [("mirrored", ["/cpu:0"], 2, "cpu"), ("multi_worker", None, 2, "cpu"),
                     ("parameter_server", None, 2, "cpu")]
