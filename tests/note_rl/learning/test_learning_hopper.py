"""PPO with observation and reward normalisation improves on Hopper-v5 (torch, seeded, CPU; issue 35's
"PPO with normalisation improves on Hopper").

The settings are conf/hyperparams/ppo_hopper.yaml's (rl-zoo3's tuned PPO for Hopper, with its
``normalize: true``): one env, rollouts of 512 steps, batches of 32, 5 epochs, lr 9.8e-5, gamma 0.999,
GAE lambda 0.99, [256, 256] ReLU networks, log std starting at -2.  The budget is 100k env steps (a tenth
of the preset's million): 70-130 s of training on two cores shared with other work.

Measured with one torch thread, the mean return of 10 greedy evaluation episodes (``evaluate``, its
fixed reset seeds):

=====  =========  ======================  =========================
seed   untrained  100k steps, normalised  100k steps, not normalised
=====  =========  ======================  =========================
0      122        1009                    1019
1      16         375                     999
2      47         410                     988
=====  =========  ======================  =========================

The untrained policy falls within a few dozen steps (returns 16-122); after 100k normalised steps every
seed returns at least 3x the best untrained seed, so the test asks for 250 (2x the best untrained
return) on seed 0 and for its own untrained return to be below 150.  Normalisation is not what helps at
this budget: without it seeds 1 and 2 score higher (about 1000 on all three seeds), so the test asserts
no comparison.  On seed 1 either half alone also reaches about 1000 (observations only 1010, rewards
only 1007); only both together stay at 375.  rl-zoo3 tuned the preset for a million steps (not measured here); at 100k the test shows
that the normalised path learns: statistics gathered in training, read by greedy evaluation.
"""

import numpy as np
import pytest

from note_rl.evaluation import evaluate
from note_rl.optim import Adam

torch = pytest.importorskip("torch")
pytest.importorskip("mujoco")

pytestmark = pytest.mark.slow
STEPS, THRESHOLD = 100_000, 250.0


@pytest.fixture(autouse=True)
def _one_thread():
    """One intra-op thread: the numbers above were measured so, and small-batch updates slow down
    several-fold when two processes' thread pools share two cores."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _ppo(seed: int, normalize: bool):
    """PPO at conf/hyperparams/ppo_hopper.yaml's settings on Hopper-v5."""
    from note_rl.agents.torch import PPO

    agent = PPO(11, [256, 256], 3, n_steps=512, n_envs=1, gamma=0.999, lam=0.99, n_epochs=5, clip=0.2,
                entropy_coef=0.00229519, vf_coef=0.835671, max_grad_norm=0.7, linear_decay=False,
                log_std_init=-2.0, activation="relu", ortho_init=False, env="Hopper-v5", seed=seed)
    agent.set(batch=32, seed=seed, normalize=True if normalize else None)
    return agent


def test_ppo_with_normalisation_improves_on_hopper() -> None:
    agent = _ppo(seed=0, normalize=True)
    before = float(np.mean(evaluate(agent, episodes=10)))
    optimizer = agent.backend.build_optimizer(Adam(lr=9.80828e-5), agent.backend.flatten(agent.param))
    agent.train(optimizer=optimizer, steps=STEPS)
    after = float(np.mean(evaluate(agent, episodes=10)))
    # training gathered the statistics that evaluation reads: every observation, and each reset's
    assert agent.normalizer.obs_rms.count > STEPS
    assert before < 150 and after >= THRESHOLD, (before, after, agent.reward_list[-10:])
