"""Each backend is an extra (``[torch]``, ``[tf]``): a missing framework is one line that says how to
install it, from the app (exit 2) and from the Python API (ImportError), and the other backend still
works.  The framework is hidden from a real subprocess by an import hook, as if never installed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.tuner.conftest import REPO, TINY

HIDE = """
import os, sys

# None in sys.modules: `import x` raises ModuleNotFoundError and importlib.util.find_spec("x") is None,
# as for a package that was never installed
for name in filter(None, os.environ.get("HIDE_PACKAGES", "").split(",")):
    sys.modules[name] = None
"""


def _run(tmp_path, hidden: str, args: list[str]) -> subprocess.CompletedProcess:
    (tmp_path / "sitecustomize.py").write_text(HIDE)
    env = dict(os.environ, HIDE_PACKAGES=hidden, HYDRA_FULL_ERROR="0",
               PYTHONPATH=os.pathsep.join([str(tmp_path), REPO, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, *args], cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=300, env=env)


def test_app_without_tensorflow_says_how_to_install_it(tmp_path) -> None:
    out = _run(tmp_path, "tensorflow,keras", ["-m", "tuner", "backend=tf", *TINY])
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "error: backend: backend 'tf' needs TensorFlow, which is not installed: pip install "
        "'note-rl-tuner[tf]' (in a checkout: pip install -e '.[tf]'); backend=torch is installed"], out.stderr
    assert not (tmp_path / "outputs").exists() or not list(tmp_path.glob("outputs/*/*/result.json"))
    # the torch backend trains as usual without TensorFlow
    ok = _run(tmp_path, "tensorflow,keras", ["-m", "tuner", *TINY])
    assert ok.returncode == 0 and "evaluation " in ok.stdout, ok.stderr[-2000:]


@pytest.mark.parametrize("hidden,module,label,extra", [("torch", "note_rl.agents.torch", "PyTorch", "torch"),
                                                       ("tensorflow,keras", "note_rl.agents.keras", "TensorFlow", "tf")])
def test_python_api_without_the_framework_is_one_import_error(tmp_path, hidden, module, label, extra) -> None:
    code = (f"import note_rl\ntry:\n    import {module}\nexcept ImportError as exc:\n    print(exc)\n")
    out = _run(tmp_path, hidden, ["-c", code])
    backend = "torch" if extra == "torch" else "tf"
    assert out.returncode == 0 and out.stdout.strip() == (
        f"backend {backend!r} needs {label}, which is not installed: pip install 'note-rl-tuner[{extra}]' "
        f"(in a checkout: pip install -e '.[{extra}]')"), out.stdout + out.stderr
