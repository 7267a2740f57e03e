"""PyTorch implementation of the backend seam."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch

from .base import Backend, StepFn, StepResult

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


class TorchBackend(Backend):
    """Eager PyTorch; ``torch.compile`` of the loss when ``jit`` is requested."""

    name = "torch"

    def seed(self, seed: int) -> None:
        torch.manual_seed(seed)

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

    def make_act(self, fn: Callable[..., Any], jit: bool) -> Callable[[np.ndarray], np.ndarray]:
        def act(s: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                out = fn(_tensor(np.asarray(s, dtype=np.float32)))
            return _to_numpy(out)

        return act

    def make_step(self, loss_fn: Callable[..., Any], optimizers: Sequence[Any],
                  groups: Sequence[Sequence[Any]], recorder: Any, jit: bool,
                  clip_norm: float | None = None) -> StepFn:
        compute = torch.compile(loss_fn) if jit else loss_fn
        variables = [v for g in groups for v in g]
        zero_grad = _grad_resetter(optimizers, variables)
        clip = _norm_clipper(variables, clip_norm)

        def step(arrays: Sequence[np.ndarray]) -> StepResult:
            zero_grad()
            loss = compute(*[_tensor(a) for a in arrays])
            loss.backward()
            if clip is not None:
                clip()
            for opt in optimizers:
                opt.step()
            td, ratio = recorder.pop()
            return StepResult(float(loss.detach()), _to_numpy(td), _to_numpy(ratio))

        return step

    def evaluate(self, loss_fn: Callable[..., Any], arrays: Sequence[np.ndarray],
                 recorder: Any) -> StepResult:
        with torch.no_grad():
            loss = loss_fn(*[_tensor(a) for a in arrays])
        td, ratio = recorder.pop()
        return StepResult(float(loss), _to_numpy(td), _to_numpy(ratio))

    def gradient(self, loss_fn: Callable[..., Any], variables: Sequence[Any],
                 arrays: Sequence[np.ndarray]) -> np.ndarray:
        loss = loss_fn(*[_tensor(a) for a in arrays])
        grads = torch.autograd.grad(loss, list(variables), allow_unused=True)
        flat = [torch.zeros_like(v).reshape(-1) if g is None else g.reshape(-1)
                for g, v in zip(grads, variables)]
        return torch.cat(flat).detach().cpu().numpy().astype(np.float64)

    # -- optimizers --------------------------------------------------------------------------
    def prepare_optimizer(self, optimizer: Any, variables: Sequence[Any]) -> None:
        owned = {id(p) for g in optimizer.param_groups for p in g["params"]}
        if not owned & {id(v) for v in variables}:
            raise ValueError(
                f"{type(optimizer).__name__} does not hold any of the agent's parameters; "
                "build it from model.param (or model.param[i] for several optimizers)"
            )

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
        groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()}
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

    def make_variable(self, value: float) -> Any:
        return torch.tensor(float(value), dtype=torch.float32)

    def assign(self, variable: Any, value: float) -> None:
        variable.fill_(float(value))


BACKEND = TorchBackend()
