"""``import note_rl`` (and every framework-free module) must not import TensorFlow or PyTorch."""

import subprocess
import sys

CODE = """
import sys
import note_rl, note_rl.policy, note_rl.noise, note_rl.callbacks, note_rl.buffers, note_rl.core
import note_rl.core.loop, note_rl.core.pool, note_rl.core.pool_worker, note_rl.agents
import note_rl.agents.dqn, note_rl.agents.ppo
import note_rl.examples, note_rl.examples.keras, note_rl.examples.keras.pool_network, note_rl.examples._her
import note_rl.examples.pytorch, note_rl.examples.pytorch.pool_network
bad = [m for m in ("torch", "tensorflow", "keras", "jax") if m in sys.modules]
print(",".join(bad))
"""


def test_import_note_rl_imports_no_framework() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
