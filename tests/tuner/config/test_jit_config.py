"""``backend.jit_compile`` from the command line: true / false, or on torch a mode name such as
``cudagraph`` (the whole gradient step as one CUDA graph); anything else is one line naming the key."""

import pytest
from omegaconf import OmegaConf

from tests.tuner.conftest import compose_cfg, run_app
from tuner.common.errors import ConfigError
from tuner.config.schema import validate
from tuner.run.build import train_kwargs


@pytest.mark.parametrize("value,expected", [("true", True), ("false", False), ("cudagraph", "cudagraph"),
                                            ("compile+cudagraph", "compile+cudagraph"),
                                            ("reduce-overhead", "reduce-overhead")])
def test_torch_takes_booleans_and_mode_names(value, expected) -> None:
    cfg = validate(compose_cfg(["agent=dqn", "backend=torch", f"backend.jit_compile={value}"]))
    assert train_kwargs(OmegaConf.to_container(cfg, resolve=True))["jit_compile"] == expected


@pytest.mark.parametrize("overrides,message", [
    (["backend=torch", "backend.jit_compile=cudagraphs"],
     "backend.jit_compile: use true, false or one of default, reduce-overhead, max-autotune, "
     "max-autotune-no-cudagraphs, cudagraph, compile+cudagraph"),
    (["backend=torch", "backend.jit_compile=3"], "backend.jit_compile: use true, false or one of"),
    (["backend=tf", "backend.jit_compile=cudagraph"],
     "backend.jit_compile: use true, false (the tf backend has no named modes)"),
])
def test_anything_else_is_refused_in_one_line(overrides, message) -> None:
    with pytest.raises(ConfigError) as err:
        validate(compose_cfg(["agent=dqn", *overrides]))
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_the_command_line_refusal_is_exit_2(tmp_path) -> None:
    out = run_app(["agent=dqn", "backend.jit_compile=cudagraphs", "logger=none"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2
    assert "backend.jit_compile: use true, false or one of" in out.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
