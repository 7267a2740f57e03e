"""PyTorch implementation of the backend seam."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from . import require_framework

require_framework("torch")  # one line that says how to install PyTorch, not a bare ModuleNotFoundError
import torch  # noqa: E402

from ..optim import OptimizerSpec
from ..utils import network_input
from .torch_graphs import GRAPH_MODES
from .torch_optim import can_fuse, fast_step, fuse_optimizer
from .base import (Backend, BoundGroup, DeviceError, StepFn, StepResult, check_device_name, distinct,
                   split_losses, sum_losses)

__all__ = ["TorchBackend", "BACKEND"]

_HPARAM_KEYS = {"lr": "lr", "weight_decay": "weight_decay", "momentum": "momentum"}


def _to_numpy(x: Any) -> np.ndarray | None:
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _tensor(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))



def _batch_maker(variables: Sequence[Any]) -> Callable[[np.ndarray], torch.Tensor]:
    """numpy -> tensor on the device of the parameters (zero-copy on the CPU)."""
    device = variables[0].device if variables else torch.device("cpu")
    if device.type == "cpu":
        return _tensor
    return lambda a: _tensor(a).to(device, non_blocking=True)


def flushing_denormals() -> bool:
    """Whether this thread flushes subnormal floats to zero (``torch.set_flush_denormal`` has no
    getter: a product that should be subnormal tells)."""
    return bool((torch.tensor([1e-30]) * 1e-10).item() == 0.0)


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def _fast(params: Sequence[Any]) -> dict[str, bool]:
    """``fused=True`` where the parameters' devices have the kernel, else ``foreach=True``."""
    return {"fused": True} if can_fuse(params) else {"foreach": True}


# torch.optim classes and their arguments for each note_rl.optim spec kind
_OPTIMIZERS: dict[str, Callable[[Any, Any], Any]] = {
    "adam": lambda s, p: torch.optim.Adam(p, lr=s.lr, betas=(s.beta1, s.beta2), eps=s.eps,
                                          weight_decay=s.weight_decay, **_fast(p)),
    "adamw": lambda s, p: torch.optim.AdamW(p, lr=s.lr, betas=(s.beta1, s.beta2), eps=s.eps,
                                            weight_decay=s.weight_decay, **_fast(p)),
    "adamax": lambda s, p: torch.optim.Adamax(p, lr=s.lr, betas=(s.beta1, s.beta2), eps=s.eps,
                                              weight_decay=s.weight_decay),
    "sgd": lambda s, p: torch.optim.SGD(p, lr=s.lr, momentum=s.momentum, weight_decay=s.weight_decay, **_fast(p)),
    "rmsprop": lambda s, p: torch.optim.RMSprop(p, lr=s.lr, alpha=s.rho, eps=s.eps, momentum=s.momentum,
                                                weight_decay=s.weight_decay),
}


def _grad_resetter(optimizers: Sequence[Any], variables: Sequence[Any]) -> Callable[[], None]:
    """``zero_grad(set_to_none=True)`` of every optimizer, done directly on the parameters when
    the optimizers hold exactly ``variables`` (``Optimizer.zero_grad`` costs tens of microseconds
    of Python per call, a noticeable share of a small network's step)."""
    held = {id(p) for opt in optimizers for g in opt.param_groups for p in g["params"]}
    direct = held == {id(v) for v in variables}

    def reset() -> None:
        if direct:
            for v in variables:
                v.grad = None
        else:
            for opt in optimizers:
                opt.zero_grad(set_to_none=True)

    return reset


def _norm_clipper(variables: Sequence[Any], max_norm: float | None) -> Callable[[], None] | None:
    """``clip_grad_norm_(variables, max_norm)`` with the same operations but without its per-call
    grouping of tensors by device and dtype (when they all share one)."""
    if max_norm is None:
        return None
    limit = float(max_norm)
    uniform = len({(v.device, v.dtype) for v in variables}) == 1

    def clip() -> None:
        if not uniform:
            torch.nn.utils.clip_grad_norm_(variables, limit, foreach=True)
            return
        grads = [v.grad for v in variables if v.grad is not None]
        if grads:
            total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
            torch._foreach_mul_(grads, torch.clamp(limit / (total + 1e-6), max=1.0))

    return clip


def _replica_group() -> Any:
    """The active ``distributed_training`` replica group (``None`` outside one)."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return None
    from .torch_ddp import active

    return active()


def _plain(value: Any) -> Any:
    """A JSON/pickle-friendly hyperparameter (tensors become floats)."""
    if isinstance(value, torch.Tensor):
        return float(value)
    return value


def _import(path: str) -> Any:
    import importlib

    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _loss_dict(out: Any) -> dict[str, float] | None:
    """Each loss of a list / dict of losses by group label (``None`` for one loss)."""
    if isinstance(out, dict):
        return {str(k): float(v) for k, v in out.items()}
    if isinstance(out, (list, tuple)):
        return {str(i): float(v) for i, v in enumerate(out)}
    return None


def _step_result(out: tuple[list[tuple[Any, torch.Tensor]], Any, Any]) -> StepResult:
    """A step's tensors read back: the loss (each one by label when there are several), TD, ratio."""
    parts, td, ratio = out
    if len(parts) == 1:
        return StepResult(float(parts[0][1]), _to_numpy(td), _to_numpy(ratio))
    losses = {label: float(loss) for label, loss in parts}
    return StepResult(sum(losses.values()), _to_numpy(td), _to_numpy(ratio), losses)


class TorchBackend(Backend):
    """Eager PyTorch; ``torch.compile`` of the loss when ``jit`` is requested, or the whole step as
    a CUDA graph (``jit="cudagraph"``)."""

    name = "torch"

    # -- the process: threads, device ---------------------------------------------------------
    def set_threads(self, n: int) -> None:
        super().set_threads(n)
        torch.set_num_threads(int(n))

    def framework_threads(self) -> int | None:
        return torch.get_num_threads()

    @contextlib.contextmanager
    def training_numerics(self) -> Iterator[None]:
        """Subnormal floats flushed to zero while training, as TensorFlow's CPU kernels run: once
        Adam's second-moment estimates of near-silent weights decay below 1.2e-38, every step of a
        CPU optimizer computes on subnormals at a fraction of the normal speed (the fused Adam step
        of CartPole DQN's 256x256 net went from 0.05 to 0.58 ms after a few thousand updates).  The
        flag is the training thread's (so numpy and the env there see it too) and is put back as
        it was when ``train()`` returns."""
        before = flushing_denormals()
        torch.set_flush_denormal(True)
        try:
            yield
        finally:
            torch.set_flush_denormal(before)

    def resolve_device(self, device: str | None) -> str:
        device = device or "auto"
        check_device_name(device)
        if device == "auto":
            if torch.cuda.is_available():
                return "cuda"
            return "mps" if _mps_available() else "cpu"
        if device.startswith("cuda"):
            count = torch.cuda.device_count() if torch.cuda.is_available() else 0
            index = int(device.partition(":")[2] or 0)
            if index >= count:
                found = f"{count} CUDA device(s)" if count else "no CUDA device"
                raise DeviceError(f"{device} requested, but torch sees {found} on this machine")
        if device == "mps" and not _mps_available():
            raise DeviceError("mps requested, but torch has no MPS device on this machine")
        return device

    def place_replica(self, device: str | None, rank: int) -> str | None:
        """With CUDA and ``device`` auto / cuda: GPU ``rank % GPUs`` (NCCL needs one device per
        process; rank 0 keeps the current device, GPU 0)."""
        if (device or "auto") not in ("auto", "cuda") or not torch.cuda.is_available():
            return None
        index = rank % torch.cuda.device_count()
        torch.cuda.set_device(index)
        return f"cuda:{index}"

    def seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def cap_device_memory(self, fraction: float) -> bool:
        if not torch.cuda.is_available():
            return False
        for index in range(torch.cuda.device_count()):
            torch.cuda.set_per_process_memory_fraction(float(fraction), index)
        return True

    def rng_state(self) -> np.ndarray | None:
        return torch.get_rng_state().numpy().copy()  # the CPU generator (a CUDA device's is not kept)

    def set_rng_state(self, state: np.ndarray) -> None:
        torch.set_rng_state(torch.from_numpy(np.ascontiguousarray(state, dtype=np.uint8)))

    def is_variable(self, obj: Any) -> bool:
        return isinstance(obj, torch.Tensor)

    def get_weights(self, variables: Sequence[Any]) -> list[np.ndarray]:
        return [v.detach().cpu().numpy().copy() for v in variables]

    def set_weights(self, variables: Sequence[Any], arrays: Sequence[np.ndarray]) -> None:
        with torch.no_grad():
            for v, a in zip(variables, arrays, strict=True):
                v.copy_(torch.as_tensor(np.asarray(a), dtype=v.dtype).reshape(v.shape))

    def modules(self, agent: Any) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name, value in vars(agent).items():
            if isinstance(value, torch.nn.Module):
                found[name] = value
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, torch.nn.Module):
                        found[f"{name}[{i}]"] = item
        return found

    def module_variables(self, module: Any) -> list[Any]:
        return list(module.parameters())

    def module_weights(self, module: Any) -> list[np.ndarray]:
        return [t.detach().cpu().numpy().copy() for t in module.state_dict().values()]

    def set_module_weights(self, module: Any, arrays: Sequence[np.ndarray]) -> None:
        keys = list(module.state_dict().keys())
        if len(keys) != len(arrays):
            raise ValueError(f"module has {len(keys)} tensors, checkpoint {len(arrays)}")
        module.load_state_dict({k: torch.as_tensor(np.asarray(a)) for k, a in zip(keys, arrays)})

    def make_act(self, fn: Callable[..., Any], jit: bool,
                 variables: Sequence[Any] = ()) -> Callable[[np.ndarray], np.ndarray]:
        to_device = _batch_maker(list(variables))

        def act(s: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                out = fn(to_device(network_input(s)))
            return _to_numpy(out)

        return act

    def make_update(self, loss_fn: Callable[..., Any], groups: Sequence[BoundGroup], recorder: Any,
                    jit: bool | str, clip_norm: float | None = None, every_group: bool = True) -> StepFn:
        variables = [v for g in groups for v in g.variables]

        def build_run(compute: Callable[..., Any]) -> Callable[[Sequence[torch.Tensor]], Any]:
            return self._make_run(compute, groups, recorder, clip_norm, every_group)

        def build(compute: Callable[..., Any]) -> StepFn:
            run, to_device = build_run(compute), _batch_maker(variables)
            return lambda arrays: _step_result(run([to_device(a) for a in arrays]))

        if isinstance(jit, str) and jit in GRAPH_MODES:
            from .torch_graphs import graphed

            return graphed(build_run, _step_result, loss_fn, variables, distinct(g.optimizer for g in groups), jit)
        if jit:
            from .torch_compile import CompiledStep

            return CompiledStep(build, loss_fn, mode=jit if isinstance(jit, str) else None)
        return build(loss_fn)

    def _make_run(self, compute: Callable[..., Any], groups: Sequence[BoundGroup], recorder: Any,
                  clip_norm: float | None, every_group: bool) -> Callable[[Sequence[torch.Tensor]], Any]:
        """The step on tensors already on the device: ``(losses by label, td, ratio)``, all tensors,
        nothing read back to the host (so that it can be captured in a CUDA graph)."""
        names = [g.name for g in groups]
        variables = [v for g in groups for v in g.variables]
        optimizers = distinct(g.optimizer for g in groups)
        zero_grad = _grad_resetter(optimizers, variables)
        steppers = [fast_step(opt) for opt in optimizers]
        clips = [c for c in [*(_norm_clipper(g.variables, g.max_grad_norm) for g in groups),
                             _norm_clipper(variables, clip_norm)] if c is not None]
        replicas = _replica_group()  # distributed_training: gradients averaged over the replicas

        def run(tensors: Sequence[torch.Tensor]) -> tuple[list[tuple[Any, torch.Tensor]], Any, Any]:
            zero_grad()
            out = compute(*tensors)
            parts = split_losses(out, names)
            if len(parts) == 1 and every_group:
                parts[0][1].backward()  # (inputs= below costs ~15 us more per step of a small net)
            elif len(parts) == 1:
                # other groups' gradients left alone: a loss that also reads another term's network
                # (an actor loss through the critic) must not step it
                torch.autograd.backward(parts[0][1], inputs=variables)
            else:
                for i, (_, loss, index) in enumerate(parts):
                    torch.autograd.backward(loss, inputs=groups[index[0]].variables,
                                            retain_graph=i < len(parts) - 1)
            if replicas is not None:
                replicas.average_gradients(variables)  # before clipping: the norm of the global gradient
            for clip in clips:
                clip()
            for opt_step in steppers:
                opt_step()
            td, ratio = recorder.pop()
            return [(label, loss.detach()) for label, loss, _ in parts], td, ratio

        return run

    def update_targets(self, targets: Sequence[Any], sources: Sequence[Any], tau: float) -> None:
        targets, sources = list(targets), list(sources)
        with torch.no_grad():
            if tau >= 1.0:
                torch._foreach_copy_(targets, sources)
            else:
                torch._foreach_lerp_(targets, sources, float(tau))

    def evaluate(self, loss_fn: Callable[..., Any], arrays: Sequence[np.ndarray],
                 recorder: Any) -> StepResult:
        with torch.no_grad():
            out = loss_fn(*[_tensor(a) for a in arrays])
        td, ratio = recorder.pop()
        losses = _loss_dict(out)
        return StepResult(float(sum_losses(out)), _to_numpy(td), _to_numpy(ratio), losses)

    def gradient(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                 arrays: Sequence[np.ndarray]) -> np.ndarray:
        loss = sum_losses(loss_fn(*[_tensor(a) for a in arrays]))
        grads = torch.autograd.grad(loss, list(variables), allow_unused=True)
        flat = [torch.zeros_like(v).reshape(-1) if g is None else g.reshape(-1)
                for g, v in zip(grads, variables)]
        return torch.cat(flat).detach().cpu().numpy().astype(np.float64)

    def loss_values(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                    arrays: Sequence[np.ndarray]) -> dict[str, float]:
        to_device = _batch_maker(list(variables))
        with torch.no_grad():
            out = loss_fn(*[to_device(a) for a in arrays])
        return {str(k): float(v) for k, v in out.items()} if isinstance(out, dict) else {"loss": float(out)}

    def _flat_grad(self, loss: torch.Tensor, variables: list[Any], create_graph: bool) -> torch.Tensor:
        grads = torch.autograd.grad(loss, variables, allow_unused=True, create_graph=create_graph)
        return torch.cat([torch.zeros_like(v).reshape(-1) if g is None else g.reshape(-1)
                          for g, v in zip(grads, variables)])

    def loss_gradient(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                      arrays: Sequence[np.ndarray]) -> tuple[float, np.ndarray]:
        variables = list(variables)
        to_device = _batch_maker(variables)
        loss = loss_fn(*[to_device(a) for a in arrays])
        flat = self._flat_grad(loss, variables, False)
        return float(loss.detach()), flat.detach().cpu().numpy().astype(np.float64)

    def hessian_vector_product(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                               arrays: Sequence[np.ndarray], vector: np.ndarray) -> np.ndarray:
        variables = list(variables)
        to_device = _batch_maker(variables)
        flat = self._flat_grad(loss_fn(*[to_device(a) for a in arrays]), variables, True)
        v = to_device(np.asarray(vector, np.float32))
        hv = self._flat_grad((flat * v).sum(), variables, False)
        return hv.detach().cpu().numpy().astype(np.float64)

    # -- optimizers --------------------------------------------------------------------------
    def build_optimizer(self, spec: Any, params: Sequence[Any]) -> Any:
        params = list(params)
        if isinstance(spec, OptimizerSpec):
            if spec.lr is None:
                raise ValueError(f"{type(spec).__name__}: lr is not set")
            return _OPTIMIZERS[spec.kind](spec, params)
        return spec(params)  # a factory of a torch optimizer (e.g. a functools.partial)

    def optimizer_recipe(self, optimizer: Any) -> dict[str, Any]:
        defaults = {k: v for k, v in optimizer.defaults.items() if k != "params"}
        defaults["lr"] = optimizer.param_groups[0]["lr"]
        kwargs = {k: v if isinstance(v, tuple) else _plain(v) for k, v in defaults.items()}
        return {"cls": f"{type(optimizer).__module__}:{type(optimizer).__qualname__}", "kwargs": kwargs}

    def rebuild_optimizer(self, recipe: dict[str, Any], params: Sequence[Any]) -> Any:
        import inspect

        cls = _import(recipe["cls"])
        # defaults may hold entries the constructor does not take (AdamW's decoupled_weight_decay)
        accepted = inspect.signature(cls.__init__).parameters
        return cls(list(params), **{k: v for k, v in recipe["kwargs"].items() if k in accepted})

    def prepare_optimizer(self, optimizer: Any, variables: Sequence[Any]) -> None:
        owned = {id(p) for g in optimizer.param_groups for p in g["params"]}
        if not owned & {id(v) for v in variables}:
            raise ValueError(
                f"{type(optimizer).__name__} does not hold any of the agent's parameters; "
                "build it from model.param (or model.param[i] for several optimizers)"
            )
        fuse_optimizer(optimizer)

    def optimizer_state(self, optimizer: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        sd = optimizer.state_dict()
        arrays: dict[str, np.ndarray] = {}
        state_meta: dict[str, dict[str, Any]] = {}
        for pid, slots in sd["state"].items():
            state_meta[str(pid)] = {}
            for key, value in slots.items():
                if isinstance(value, torch.Tensor):
                    arrays[f"{pid}/{key}"] = value.detach().cpu().numpy().copy()
                    state_meta[str(pid)][key] = {"tensor": True}
                else:
                    state_meta[str(pid)][key] = {"value": value}
        # (a CUDA-graphed step keeps its lr in a tensor: the checkpoint stores the number)
        groups = [{k: (list(v) if isinstance(v, tuple) else _plain(v)) for k, v in g.items()}
                  for g in sd["param_groups"]]
        return {"class": type(optimizer).__name__, "state": state_meta, "param_groups": groups}, arrays

    def load_optimizer_state(self, optimizer: Any, variables: Sequence[Any], meta: dict[str, Any],
                             arrays: dict[str, np.ndarray]) -> None:
        if meta["class"] != type(optimizer).__name__:
            raise ValueError(f"checkpoint optimizer is {meta['class']}, agent has {type(optimizer).__name__}")
        state: dict[int, dict[str, Any]] = {}
        for pid, slots in meta["state"].items():
            state[int(pid)] = {
                key: torch.as_tensor(arrays[f"{pid}/{key}"]) if info.get("tensor") else info["value"]
                for key, info in slots.items()
            }
        groups = [{k: (tuple(v) if k == "betas" else v) for k, v in g.items()} for g in meta["param_groups"]]
        optimizer.load_state_dict({"state": state, "param_groups": groups})

    def get_hparam(self, optimizer: Any, name: str) -> float | None:
        group = optimizer.param_groups[0]
        if name in ("beta1", "beta2"):
            if "betas" not in group:
                return None
            return float(group["betas"][0 if name == "beta1" else 1])
        key = _HPARAM_KEYS.get(name, name)
        return float(group[key]) if key in group else None

    def set_hparam(self, optimizer: Any, name: str, value: float) -> bool:
        changed = False
        for group in optimizer.param_groups:
            if name in ("beta1", "beta2") and "betas" in group:
                b1, b2 = group["betas"]
                group["betas"] = (float(value), b2) if name == "beta1" else (b1, float(value))
                changed = True
            elif _HPARAM_KEYS.get(name, name) in group:
                key = _HPARAM_KEYS.get(name, name)
                if isinstance(group[key], torch.Tensor):
                    group[key].fill_(float(value))
                else:
                    group[key] = float(value)
                changed = True
        return changed

    def optimizer_name(self, optimizer: Any) -> str:
        return type(optimizer).__name__.lower()

    def make_variable(self, value: float, device: str | None = None) -> Any:
        return torch.tensor(float(value), dtype=torch.float32, device=device)

    def assign(self, variable: Any, value: float) -> None:
        variable.fill_(float(value))


BACKEND = TorchBackend()
