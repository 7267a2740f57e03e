"""User code named by the config (``env.module``) is imported for validation in a child process: a
module that segfaults or raises on import is one line, exit 2, and the driver survives."""

from __future__ import annotations

import pytest

from tests.tuner.conftest import TINY, run_app


@pytest.mark.parametrize("module,message", [
    ("tests.tuner.bad_modules.segfault",
     "error: env.module: checking 'tests.tuner.bad_modules.segfault' killed by SIGSEGV (segmentation fault)"),
    ("tests.tuner.bad_modules.raises",
     "error: env.module: cannot import 'tests.tuner.bad_modules.raises' (RuntimeError: the env module blew up on import)"),
    ("tests.tuner.no_such_module", "error: env.module: cannot import 'tests.tuner.no_such_module'"),
])
def test_a_bad_env_module_is_one_line(tmp_path, module, message) -> None:
    for mode in ([], ["tuner=optuna", "tuner.study_name=bad"]):
        out = run_app([*mode, f"env.module={module}", *TINY], cwd=str(tmp_path), check=False)
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(message), out.stderr
    assert not (tmp_path / "studies").exists()


def test_a_good_env_module_still_trains(tmp_path) -> None:
    out = run_app(["env.module=tests.tuner.faulty_envs", *TINY], cwd=str(tmp_path))
    assert "env steps" in out.stdout
