"""Checkpoints that load without executing code.

A checkpoint is one ``.npz`` (zip of ``.npy`` arrays, read with ``allow_pickle=False``) whose
``__meta__`` entry is UTF-8 JSON: format tag, backend, counters, histories, ``set()`` values,
optimizer hyperparameters and random-generator states.  Arrays hold the weights of every network
attribute (Keras layers / torch modules) and of ``self.param``, optimizer slots and, in a full
save, the replay buffer.  Files are written to a temporary name in the same directory and renamed,
so a crash never leaves a half-written checkpoint under the real name.
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import Any

import numpy as np

from ..update import optimizer_list
from ..utils import machine_memory_bytes, pid_alive
from .updater import optimizer_variables

__all__ = ["CheckpointError", "check_npz_sizes", "save_agent", "snapshot", "restore_agent", "restore_params", "periodic_save",
           "write_npz", "read_npz", "read_param"]

FORMAT = "note_rl-checkpoint"
VERSION = 1
_SETTINGS = ("pool_size", "batch", "num_updates", "num_steps", "update_batches", "update_steps",
             "trial_count", "criterion", "PPO", "PR", "initial_ratio", "initial_TD", "lambda_",
             "priority_alpha", "beta", "seed", "train_freq", "learning_starts", "HER", "her_k", "MARL", "TRL",
             "n_envs")


class CheckpointError(ValueError):
    """The file is not a readable note_rl checkpoint (corrupt, truncated or foreign)."""


# -- file format -----------------------------------------------------------------------------
def write_npz(path: str, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> str:
    """Atomically write ``arrays`` plus JSON ``meta`` to ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    _remove_stale_temps(folder, os.path.basename(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    payload = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    try:
        with open(tmp, "wb") as f:
            np.savez(f, __meta__=payload, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def _remove_stale_temps(folder: str, name: str) -> None:
    """Delete temporary files of earlier saves of ``name`` whose process is gone (a save killed
    midway leaves its temporary file, which can be as large as the replay buffer)."""
    prefix = f".{name}.tmp-"
    for entry in os.listdir(folder):
        pid = entry[len(prefix):]
        if entry.startswith(prefix) and pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            try:
                os.remove(os.path.join(folder, entry))
            except OSError:
                pass


_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def check_npz_sizes(path: str) -> None:
    """Bound what reading ``path`` allocates before anything is decompressed: every member's array
    (its ``.npy`` header's shape x item size) must fit in the member's stated size, and all members
    together in this machine's memory."""
    try:
        with zipfile.ZipFile(path) as z:
            total = 0
            for info in z.infolist():
                total += info.file_size
                if info.compress_type != zipfile.ZIP_STORED and info.file_size > 100 * max(info.compress_size, 1) + (1 << 20):
                    raise CheckpointError(f"{path}: member {info.filename!r} would expand {info.compress_size} "
                                          f"bytes to {info.file_size}")
                with z.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    header = _NPY_HEADERS.get(version)
                    if header is None:
                        raise CheckpointError(f"{path}: member {info.filename!r} is .npy format {version}")
                    shape, _, dtype = header(f)
                if dtype.hasobject or int(np.prod(shape, dtype=np.int64)) * dtype.itemsize > info.file_size:
                    raise CheckpointError(f"{path}: member {info.filename!r} declares a {shape} {dtype} array "
                                          f"larger than its {info.file_size} bytes")
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise CheckpointError(f"{path}: not a note_rl checkpoint ({exc})") from None
    if total > machine_memory_bytes():
        raise CheckpointError(f"{path}: its arrays add up to {total} bytes, more than this machine's memory")


def read_npz(path: str, expect: str = FORMAT) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read a file written by :func:`write_npz`; any defect raises :class:`CheckpointError`."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"checkpoint not found: {path}")
    check_npz_sizes(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, MemoryError) as exc:
        raise CheckpointError(f"{path}: not a note_rl checkpoint ({exc})") from None
    if "__meta__" not in arrays:
        raise CheckpointError(f"{path}: not a note_rl checkpoint (no metadata entry)")
    try:
        meta = json.loads(arrays.pop("__meta__").tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: corrupt checkpoint metadata ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != expect:
        raise CheckpointError(f"{path}: not a {expect} file")
    if expect == FORMAT:
        _check_meta(meta, arrays, path)
    return meta, arrays


# what a checkpoint's metadata may hold (keys absent from older files are optional)
_META_TYPES: dict[str, Any] = {
    "kind": str, "backend": str, "n_param": int, "modules": dict, "settings": dict, "counters": dict,
    "reward_list": list, "loss_list": list, "policy": list, "noise": list, "optimizers": list,
    "buffer": (dict, type(None)), "extra": (dict, type(None)), "adjust": (dict, type(None)),
    "normalize": (dict, type(None))}
_FULL_KEYS = ("settings", "counters", "reward_list", "loss_list", "policy", "noise", "optimizers", "buffer")
_COUNTERS = ("step_counter", "batch_counter", "total_episode", "total_time", "episode_seed", "best_avg_reward")


def _check_meta(meta: dict[str, Any], arrays: dict[str, np.ndarray], path: str) -> None:
    """The metadata's schema: required keys, their types, only known settings and counters (they
    are set as attributes of the agent), and every array the metadata names present."""
    required = ("kind", "backend", "n_param", "modules") + (_FULL_KEYS if meta.get("kind") == "full" else ())
    for key in required:
        if key not in meta:
            raise CheckpointError(f"{path}: metadata {key!r} is missing")
    for key, types in _META_TYPES.items():
        value = meta.get(key)
        if key in meta and (not isinstance(value, types) or (types is int and isinstance(value, bool))):
            raise CheckpointError(f"{path}: metadata {key!r} is a {type(value).__name__}")
    if meta["kind"] not in ("param", "full"):
        raise CheckpointError(f"{path}: metadata 'kind' is {meta['kind']!r}, not 'param' or 'full'")
    for key, allowed in (("settings", _SETTINGS), ("counters", _COUNTERS)):
        unknown = sorted(set(meta.get(key) or {}) - set(allowed))
        if unknown:
            raise CheckpointError(f"{path}: metadata {key!r} has an unknown entry {unknown[0]!r}")
    counts = {"param": meta["n_param"], **{f"module/{m}": n for m, n in meta["modules"].items()}}
    for prefix, n in counts.items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise CheckpointError(f"{path}: metadata gives {n!r} arrays for {prefix!r}")
        for i in range(n):
            if f"{prefix}/{i}" not in arrays:
                raise CheckpointError(f"{path}: member '{prefix}/{i}' is missing")


# -- saving ----------------------------------------------------------------------------------
def _weights(agent: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    backend = agent.backend
    arrays: dict[str, np.ndarray] = {}
    params = agent.backend.flatten(agent.param) if agent.param is not None else []
    for i, w in enumerate(backend.get_weights(params)):
        arrays[f"param/{i}"] = w
    modules: dict[str, int] = {}
    for name, module in backend.modules(agent).items():
        weights = backend.module_weights(module)
        modules[name] = len(weights)
        for i, w in enumerate(weights):
            arrays[f"module/{name}/{i}"] = w
    return {"n_param": len(params), "modules": modules}, arrays


def _optimizers(agent: Any) -> list[Any]:
    return optimizer_list(agent.optimizer)


def _states(objs: Any) -> list[Any]:
    items = objs if isinstance(objs, (list, tuple)) else [objs]
    return [o.get_state() if hasattr(o, "get_state") else None for o in items if o is not None]


def _env_rng(agent: Any) -> Any:
    env = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
    try:
        return env.unwrapped.np_random.bit_generator.state
    except AttributeError:
        return None


def save_agent(agent: Any, path: str | None, full: bool, save_data: bool = True) -> str:
    """Write a full checkpoint (``full=True``) or the weights only."""
    if not path:
        raise ValueError("save(): no path given and agent.path is not set")
    return write_npz(path, *snapshot(agent, full, save_data))


def snapshot(agent: Any, full: bool, save_data: bool = True) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(meta, arrays)`` of a checkpoint of ``agent`` as it is now."""
    weights_meta, arrays = _weights(agent)
    meta: dict[str, Any] = {"format": FORMAT, "version": VERSION, "kind": "full" if full else "param",
                            "backend": agent.backend_name, "agent_class": type(agent).__name__,
                            **weights_meta}
    norm = getattr(agent, "normalizer", None)
    if norm is not None:  # set(normalize=...): its statistics go with the weights (both kinds)
        meta["normalize"], stats = norm.state()
        arrays.update({f"normalize/{k}": v for k, v in stats.items()})
    if full:
        meta.update(_full_meta(agent, arrays, save_data))
    return meta, arrays


def _restore_normalizer(agent: Any, meta: dict[str, Any], arrays: dict[str, np.ndarray], path: str) -> None:
    """The file's observation / reward statistics replace the agent's (a file without them leaves the
    agent's normaliser as it is)."""
    if meta.get("normalize") is None:
        return
    from ..normalize import Normalizer

    prefix = "normalize/"
    try:
        agent.normalizer = Normalizer.from_state(
            meta["normalize"], {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)})
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"{path}: the normalize statistics do not load ({exc})") from None


def _full_meta(agent: Any, arrays: dict[str, np.ndarray], save_data: bool) -> dict[str, Any]:
    opt_metas = []
    for k, opt in enumerate(_optimizers(agent)):
        m, a = agent.backend.optimizer_state(opt)
        opt_metas.append(m)
        arrays.update({f"opt/{k}/{key}": v for key, v in a.items()})
    buffer_meta = None
    if agent.buffer is not None and save_data:
        buffer_meta, buf = agent.buffer.state_dict()
        arrays.update({f"buffer/{key}": v for key, v in buf.items()})
    counters = {k: getattr(agent, k) for k in _COUNTERS}
    extra = agent.extra_state() if hasattr(agent, "extra_state") else {}
    return {"optimizers": opt_metas, "buffer": buffer_meta, "counters": counters,
            "reward_list": list(agent.reward_list), "loss_list": list(agent.loss_list),
            "settings": {k: getattr(agent, k) for k in _SETTINGS},
            "policy": _states(agent.policy), "noise": _states(agent.noise),
            "env_rng": _env_rng(agent), "extra": extra,
            "adjust": agent.adjust_state() if hasattr(agent, "adjust_state") else None}


def periodic_save(agent: Any, episode: int, mean_reward: float | None, save_data: bool) -> None:
    """The end-of-episode save rule: ``path``, ``save_freq``, ``save_best_only``,
    ``max_save_files`` (rotation) and ``save_param_only``."""
    if not agent.path or episode % max(int(agent.save_freq or 1), 1) != 0:
        return
    if getattr(agent, "rank", 0):  # distributed_training: the replicas hold the same weights
        return
    if agent.save_best_only:
        if mean_reward is None or (agent.best_avg_reward is not None and mean_reward <= agent.best_avg_reward):
            return
        agent.best_avg_reward = mean_reward
    path = agent.path
    if agent.max_save_files and agent.max_save_files > 1:
        root, ext = os.path.splitext(agent.path)
        path = f"{root}-{agent.total_episode}{ext}"
    expired: list[str] = []
    if path != agent.path:
        if path in agent.path_list:
            agent.path_list.remove(path)
        agent.path_list.append(path)
        while len(agent.path_list) > agent.max_save_files:
            expired.append(agent.path_list.pop(0))
    saver = getattr(agent, "_saver", None)
    if saver is not None:  # train(parallel_training_and_save=True): a separate process writes
        saver.submit(path, *snapshot(agent, not agent.save_param_only, save_data), remove=expired)
        return
    if agent.save_param_only:
        agent.save_param(path)
    else:
        agent.save(path, save_data=save_data)
    for old in expired:
        if os.path.exists(old):
            os.remove(old)


# -- restoring -------------------------------------------------------------------------------
def _check_backend(agent: Any, meta: dict[str, Any], path: str) -> None:
    if meta.get("backend") != agent.backend_name:
        raise CheckpointError(f"{path}: saved by the {meta.get('backend')!r} backend, "
                              f"this agent uses {agent.backend_name!r}")


def _assign_weights(agent: Any, meta: dict[str, Any], arrays: dict[str, np.ndarray], path: str) -> None:
    """Assign the file's weights, every array checked against the agent's shape and dtype first (a
    file of another architecture is refused whole: nothing is half loaded, and no framework ever
    reshapes a (4, 64) array into a (64, 4) weight)."""
    backend = agent.backend
    modules = backend.modules(agent)
    plan: list[tuple[Any, list[np.ndarray]]] = []
    for name, n in meta.get("modules", {}).items():
        if name not in modules:
            raise CheckpointError(f"{path}: network {name!r} in the file is missing on this agent")
        given = [arrays[f"module/{name}/{i}"] for i in range(n)]
        _check_like(backend.module_weights(modules[name]), given, f"module/{name}", path)
        plan.append((modules[name], given))
    params = backend.flatten(agent.param) if agent.param is not None else []
    if len(params) != meta["n_param"]:
        raise CheckpointError(f"{path}: holds {meta['n_param']} parameters, agent has {len(params)}")
    given = [arrays[f"param/{i}"] for i in range(meta["n_param"])]
    _check_like(backend.get_weights(params), given, "param", path)
    for module, values in plan:
        backend.set_module_weights(module, values)
    backend.set_weights(params, given)


def _check_like(current: list[np.ndarray], given: list[np.ndarray], prefix: str, path: str) -> None:
    """Each of ``given`` has the shape and dtype of the weight it replaces."""
    if len(current) != len(given):
        raise CheckpointError(f"{path}: holds {len(given)} arrays for {prefix!r}, the agent has {len(current)}")
    for i, (have, new) in enumerate(zip(current, given)):
        have = np.asarray(have)
        if have.shape != new.shape or have.dtype != new.dtype:
            raise CheckpointError(f"{path}: member '{prefix}/{i}' is a {new.shape} {new.dtype} array, "
                                  f"the agent's weight is {have.shape} {have.dtype}")


def read_param(path: str) -> list[np.ndarray]:
    """The weights of ``self.param`` stored in a checkpoint of either kind, as numpy arrays in
    ``self.param``'s flattened order: Note_rl 002/003's module-level
    ``param = nn.restore_param('param.dat')``, for use without building the agent."""
    meta, arrays = read_npz(path)
    return [arrays[f"param/{i}"] for i in range(meta["n_param"])]


def restore_params(agent: Any, path: str) -> None:
    """Load only the weights of a checkpoint (either kind)."""
    meta, arrays = read_npz(path)
    _check_backend(agent, meta, path)
    _assign_weights(agent, meta, arrays, path)
    _restore_normalizer(agent, meta, arrays, path)
    agent._actor = None


def restore_agent(agent: Any, path: str, optimizer: Any = None) -> None:
    """Load a full checkpoint so that training continues where it stopped."""
    meta, arrays = read_npz(path)
    _check_backend(agent, meta, path)
    if meta.get("kind") != "full":
        raise CheckpointError(f"{path}: holds weights only; use restore_param()")
    _assign_weights(agent, meta, arrays, path)
    _restore_normalizer(agent, meta, arrays, path)
    agent._actor = None
    for key, value in meta["settings"].items():
        setattr(agent, key, value)
    for key, value in meta["counters"].items():
        setattr(agent, key, value)
    agent.reward_list = list(meta["reward_list"])
    agent.loss_list = list(meta["loss_list"])
    _restore_exploration(agent, meta)
    for part, restore in (("buffer", lambda: _restore_buffer(agent, meta, arrays)),
                          ("optimizers", lambda: _restore_optimizers(agent, meta, arrays, optimizer))):
        try:
            restore()
        except CheckpointError:
            raise
        except (KeyError, ValueError, TypeError, AttributeError, IndexError) as exc:
            raise CheckpointError(f"{path}: the {part} state does not load ({type(exc).__name__}: {exc})") from None
    if meta.get("extra") and hasattr(agent, "load_extra_state"):
        agent.load_extra_state(meta["extra"])
    if meta.get("adjust") and hasattr(agent, "load_adjust_state"):  # absent in older files
        agent.load_adjust_state(meta["adjust"])


def _restore_exploration(agent: Any, meta: dict[str, Any]) -> None:
    for objs, states in ((agent.policy, meta["policy"]), (agent.noise, meta["noise"])):
        items = [o for o in (objs if isinstance(objs, (list, tuple)) else [objs]) if o is not None]
        for obj, state in zip(items, states):
            if state is not None and hasattr(obj, "set_state"):
                obj.set_state(state)
    if meta.get("env_rng") is not None:
        env = agent.env[0] if isinstance(agent.env, (list, tuple)) else agent.env
        try:
            env.unwrapped.np_random.bit_generator.state = meta["env_rng"]
        except AttributeError:
            pass


def _restore_buffer(agent: Any, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    bmeta = meta.get("buffer")
    if bmeta is None:
        agent.buffer = None
        return
    agent.buffer = agent.make_buffer(int(bmeta["n_segments"]))
    prefix = "buffer/"
    agent.buffer.load_state_dict(bmeta, {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)})


def _restore_optimizers(agent: Any, meta: dict[str, Any], arrays: dict[str, np.ndarray],
                        optimizer: Any) -> None:
    if optimizer is not None:
        agent.optimizer = optimizer
    metas = meta.get("optimizers", [])
    per_opt = [{k.split("/", 2)[2]: v for k, v in arrays.items() if k.startswith(f"opt/{i}/")}
               for i in range(len(metas))]
    opts = _optimizers(agent)
    if not metas:
        return
    if not opts:  # applied when train() receives an optimizer
        agent._pending_optimizer_state = (metas, per_opt)
        return
    if len(opts) != len(metas):
        raise CheckpointError(f"checkpoint has {len(metas)} optimizer states, agent has {len(opts)} optimizers")
    for (opt, variables), m, a in zip(optimizer_variables(agent, agent.optimizer), metas, per_opt):
        agent.backend.load_optimizer_state(opt, variables, m, a)
