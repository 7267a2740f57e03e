"""Envs that make a trial fail in each way a real trial can: raise, segfault, hang, NaN."""

from __future__ import annotations

import os
import signal
import time

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv


class _Faulty(CartPoleEnv):
    after = 50  # env steps before the fault

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.count = 0

    def step(self, action):
        self.count += 1
        if self.count >= self.after:
            self.fault()
        return super().step(action)

    def fault(self) -> None:
        raise NotImplementedError


class Crash(_Faulty):
    def fault(self) -> None:
        raise RuntimeError("the env exploded")


class Segfault(_Faulty):
    def fault(self) -> None:
        os.kill(os.getpid(), signal.SIGSEGV)


class Hang(_Faulty):
    def fault(self) -> None:
        time.sleep(3600)


class Hog(_Faulty):
    """Asks for 4 GiB at once (a trial that would run the machine out of memory)."""

    def fault(self) -> None:
        self.hog = np.ones(2**29)


class PidHang(Hang):
    """Writes its process id into ``$NOTE_TEST_PID_DIR`` (every process that builds one: a trial
    and its pool workers), then hangs after a few steps."""

    after = 5

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        folder = os.environ.get("NOTE_TEST_PID_DIR")
        if folder:
            open(os.path.join(folder, str(os.getpid())), "w").close()


class NaNReward(CartPoleEnv):
    def step(self, action):
        obs, _, terminated, truncated, info = super().step(action)
        return obs, float("nan"), terminated, truncated, info


class Slow(CartPoleEnv):
    """CartPole with a short sleep per step: a trial that takes a predictable while."""

    def step(self, action):
        time.sleep(0.004)
        return super().step(action)


for name, cls in (("Crash", Crash), ("Segfault", Segfault), ("Hang", Hang), ("NaNReward", NaNReward),
                  ("Slow", Slow), ("Hog", Hog), ("PidHang", PidHang)):
    if f"{name}-v0" not in gym.registry:
        gym.register(f"{name}-v0", entry_point=f"tests.tuner.faulty_envs:{cls.__name__}", max_episode_steps=500)

