"""Fast optimizer steps on the PyTorch backend.

Two things make a small network's optimizer step cheap: the fused kernel (the whole Adam update of
every parameter in one kernel, not several per parameter), and not paying ``Optimizer.step``'s
per-call Python (profiling hooks, grouping tensors by device and dtype, state checks): on one CPU
core that wrapper costs ~0.13 ms around a ~0.09 ms fused Adam kernel, about a tenth of a whole DQN
gradient step of a 256x256 network.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
from torch.optim import optimizer as _optim_module

__all__ = ["fuse_optimizer", "fast_step", "can_fuse", "FUSABLE"]

#: optimizers with a fused kernel
FUSABLE = (torch.optim.Adam, torch.optim.AdamW, torch.optim.SGD)


def _fused_devices() -> tuple[str, ...]:
    try:  # private in torch: the device types with fused optimizer kernels
        from torch.optim.optimizer import _get_fused_kernels_supported_devices

        return tuple(_get_fused_kernels_supported_devices())
    except ImportError:
        return ("cpu", "cuda")


def can_fuse(params: Sequence[Any]) -> bool:
    """Whether every parameter sits on a device with fused kernels and is floating point."""
    devices = _fused_devices()
    return all(p.device.type in devices and p.is_floating_point() for p in params)


def fuse_optimizer(optimizer: Any) -> bool:
    """Switch a torch ``Adam``, ``AdamW`` or ``SGD`` that was left at torch's defaults (neither
    ``fused`` nor ``foreach`` given) to its fused kernel before its first step; returns whether it
    did.  The update is the same algorithm (results agree to float rounding); an optimizer whose
    user chose ``fused``/``foreach``, ``differentiable`` or ``capturable``, a subclass, or one that
    has already stepped is left as it is."""
    if type(optimizer) not in FUSABLE or optimizer.state:
        return False
    groups = optimizer.param_groups
    for g in groups:
        if g.get("fused") is not None or g.get("foreach") is not None or g.get("differentiable") \
                or g.get("capturable") or not can_fuse(g["params"]):
            return False
    for g in groups:
        g["fused"] = True
    optimizer.defaults["fused"] = True
    optimizer._step_supports_amp_scaling = True  # as torch's constructor sets it for fused=True
    return True


def _hooked(optimizer: Any) -> bool:
    """Step hooks (the optimizer's, the global ones) or a wrapped ``step`` (an LR scheduler counts
    the optimizer's steps by wrapping it) need ``optimizer.step()`` itself."""
    return bool(optimizer._optimizer_step_pre_hooks or optimizer._optimizer_step_post_hooks
                or _optim_module._global_optimizer_pre_hooks or _optim_module._global_optimizer_post_hooks
                or "step" in vars(optimizer))


def _plain_fused_adam(group: dict[str, Any]) -> bool:
    return bool(group.get("fused")) and not (group["amsgrad"] or group.get("capturable")
                                             or group.get("differentiable") or group["maximize"])


def fast_step(optimizer: Any) -> Callable[[], None]:
    """A function that steps ``optimizer`` like ``optimizer.step()``.  For a fused ``torch.optim.Adam``
    or ``AdamW`` (what the tuner builds and :func:`fuse_optimizer` makes of a user's default one) it
    runs the two kernels ``step()`` runs, on the same state tensors, so the result is identical;
    anything else, and any step where the shortcut does not apply (state not made yet, hooks, an
    LR scheduler's wrapper, a parameter without a gradient), goes through ``optimizer.step()``."""
    if type(optimizer) not in (torch.optim.Adam, torch.optim.AdamW) or not hasattr(torch, "_fused_adam_"):
        return optimizer.step
    state = optimizer.state

    def step() -> None:
        if _hooked(optimizer):
            optimizer.step()
            return
        runs = []
        for group in optimizer.param_groups:
            params = group["params"]
            if not _plain_fused_adam(group):
                optimizer.step()
                return
            grads = [p.grad for p in params]
            slots = [state.get(p) for p in params]
            if any(g is None for g in grads) or any(not s for s in slots):
                optimizer.step()  # makes the state / skips params without gradients as torch does
                return
            runs.append((group, params, grads, slots))
        for group, params, grads, slots in runs:
            steps = [s["step"] for s in slots]
            decoupled = group.get("decoupled_weight_decay", type(optimizer) is torch.optim.AdamW)
            kernel = torch._fused_adamw_ if decoupled else torch._fused_adam_
            beta1, beta2 = group["betas"]
            with torch.no_grad():
                torch._foreach_add_(steps, 1)
                kernel(params, grads, [s["exp_avg"] for s in slots], [s["exp_avg_sq"] for s in slots], [],
                       steps, amsgrad=False, lr=group["lr"], beta1=beta1, beta2=beta2,
                       weight_decay=group["weight_decay"], eps=group["eps"], maximize=False,
                       grad_scale=None, found_inf=None)

    return step
