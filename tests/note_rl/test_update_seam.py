"""The multi-loss update seam (``note_rl.update``): several losses and optimizers, delayed groups,
Polyak targets and per-group clipping, the same in both backends and as worked out by hand."""

import numpy as np
import pytest

from note_rl.core.updater import Updater
from note_rl.update import LossTerm, ParamGroup, UpdateSpec, bind_optimizers
from tests.note_rl import ac_agents

pytest.importorskip("torch")
pytest.importorskip("tensorflow")

LR = 0.1


def _weights(agent):
    b = agent.backend
    return {name: b.get_weights(b.module_variables(getattr(agent, name)))
            for name in ("actor", "critic", "actor_target", "critic_target")}


def _optimizers(backend, agent, spec):
    a, c = agent.actor_vars(), agent.critic_vars()
    opts = [ac_agents.sgd(backend, a, LR), ac_agents.sgd(backend, c, LR)]
    return {"actor": opts[0], "critic": opts[1]} if spec == "dict" else opts


def _run(backend, spec, n_updates=4, seed=0):
    agent = ac_agents.make(backend, spec)
    updater = Updater(agent, _optimizers(backend, agent, spec), jit=False)
    rng = np.random.default_rng(seed)
    history = []
    for k in range(1, n_updates + 1):
        result = updater(k, ac_agents.batch(rng), None)
        history.append((result.loss, result.losses, _weights(agent)))
    return history


@pytest.mark.parametrize("spec", ["algorithm", "list", "dict"])
def test_multi_loss_updates_match_across_backends(spec) -> None:
    torch_run, keras_run = _run("torch", spec), _run("tf", spec)
    for (lt, losses_t, wt), (lk, losses_k, wk) in zip(torch_run, keras_run):
        assert lt == pytest.approx(lk, rel=1e-5, abs=1e-6)
        assert losses_t.keys() == losses_k.keys()
        for key in losses_t:
            assert losses_t[key] == pytest.approx(losses_k[key], rel=1e-5, abs=1e-6)
        for name in wt:
            for a, b in zip(wt[name], wk[name]):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_loss_labels_follow_the_groups() -> None:
    # algorithm spec: the critic every update, the actor (delayed) every second one
    labels = [set(losses) for _, losses, _ in _run("torch", "algorithm")]
    assert labels == [{"critic_loss"}, {"critic_loss", "actor_loss"}] * 2
    assert set(_run("torch", "list", 1)[0][1]) == {"0", "1"}  # Note_rl list: groups by position
    assert set(_run("torch", "dict", 1)[0][1]) == {"actor", "critic"}


def _torch_copy(weights):

    from note_rl.agents.torch import MLP

    return MLP(weights)


def test_delayed_actor_and_polyak_targets_by_hand() -> None:
    """Update 1 steps only the critic; update 2 steps the critic, then the actor on the *updated*
    critic, then moves both targets by tau; worked out here with plain torch autograd."""
    import torch

    agent = ac_agents.make("torch", "algorithm")
    start = _weights(agent)
    updater = Updater(agent, _optimizers("torch", agent, "algorithm"), jit=False)
    rng = np.random.default_rng(3)
    b1, b2 = ac_agents.batch(rng), ac_agents.batch(rng)

    def critic_step(critic_w, actor_target_w, critic_target_w, b):
        critic, at, ct = _torch_copy(critic_w), _torch_copy(actor_target_w), _torch_copy(critic_target_w)
        s, a, s2, r, d = (torch.as_tensor(x) for x in b)
        with torch.no_grad():
            y = r + agent.gamma * (1 - d) * ct(torch.cat([s2, agent.bound * torch.tanh(at(s2))], 1))[:, 0]
        loss = ((critic(torch.cat([s, a], 1))[:, 0] - y) ** 2).mean()
        grads = torch.autograd.grad(loss, list(critic.parameters()))
        return [w - LR * g.numpy() for w, g in zip(critic_w, grads)]

    def actor_step(actor_w, critic_w, b):
        actor, critic = _torch_copy(actor_w), _torch_copy(critic_w)
        s = torch.as_tensor(b[0])
        loss = -critic(torch.cat([s, agent.bound * torch.tanh(actor(s))], 1)).mean()
        grads = torch.autograd.grad(loss, list(actor.parameters()))
        return [w - LR * g.numpy() for w, g in zip(actor_w, grads)]

    updater(1, b1, None)
    w1 = _weights(agent)
    for a, b in zip(w1["actor"], start["actor"]):
        np.testing.assert_array_equal(a, b)  # delayed: untouched on update 1
    critic1 = critic_step(start["critic"], start["actor_target"], start["critic_target"], b1)
    for a, b in zip(w1["critic"], critic1):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert all(np.array_equal(a, b) for a, b in zip(w1["critic_target"], start["critic_target"]))

    updater(2, b2, None)
    w2 = _weights(agent)
    critic2 = critic_step(critic1, start["actor_target"], start["critic_target"], b2)
    actor2 = actor_step(start["actor"], critic2, b2)  # sees the critic updated on this very batch
    for name, expected in (("critic", critic2), ("actor", actor2)):
        for a, b in zip(w2[name], expected):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    tau = agent.tau
    for name, source in (("critic_target", critic2), ("actor_target", actor2)):
        for a, t0, s in zip(w2[name], start[name], source):
            np.testing.assert_allclose(a, (1 - tau) * t0 + tau * s, rtol=1e-5, atol=1e-6)


def test_list_losses_step_each_group_on_its_own_loss() -> None:
    """Note_rl's ``[actor_loss, critic_loss]`` with two optimizers: the critic moves by the critic
    loss's gradient only, although the actor loss also reads the critic."""
    import torch

    agent = ac_agents.make("torch", "list")
    start = _weights(agent)
    b = ac_agents.batch(np.random.default_rng(5))
    Updater(agent, _optimizers("torch", agent, "list"), jit=False)(1, b, None)
    critic, at, ct = (_torch_copy(start[k]) for k in ("critic", "actor_target", "critic_target"))
    s, a, s2, r, d = (torch.as_tensor(x) for x in b)
    with torch.no_grad():
        y = r + agent.gamma * (1 - d) * ct(torch.cat([s2, agent.bound * torch.tanh(at(s2))], 1))[:, 0]
    loss = ((critic(torch.cat([s, a], 1))[:, 0] - y) ** 2).mean()
    grads = torch.autograd.grad(loss, list(critic.parameters()))
    for w, w0, g in zip(_weights(agent)["critic"], start["critic"], grads):
        np.testing.assert_allclose(w, w0 - LR * g.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_one_shared_optimizer_equals_one_per_group(backend) -> None:
    """A single optimizer for every group: each term steps it with its own groups' gradients."""
    separate = _run(backend, "algorithm")[-1][2]
    agent = ac_agents.make(backend, "algorithm")
    shared = ac_agents.sgd(backend, agent.actor_vars() + agent.critic_vars(), LR)
    updater = Updater(agent, shared, jit=False)
    rng = np.random.default_rng(0)
    for k in range(1, 5):
        updater(k, ac_agents.batch(rng), None)
    for name, ws in _weights(agent).items():
        for a, b in zip(ws, separate[name]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["torch", "tf"])
def test_per_group_gradient_clipping(backend) -> None:
    """A group's ``max_grad_norm`` bounds its own step (SGD: ``|delta| = lr * clip``), not the others'."""
    agent = ac_agents.make(backend, "algorithm")
    spec = UpdateSpec([ParamGroup("actor", agent.actor_vars()),
                       ParamGroup("critic", agent.critic_vars(), max_grad_norm=1e-3)],
                      [LossTerm(agent.critic_loss, ["critic"]), LossTerm(agent.actor_loss, ["actor"])])
    agent.update_spec = lambda: spec
    start = _weights(agent)
    Updater(agent, _optimizers(backend, agent, "algorithm"), jit=False)(1, ac_agents.batch(np.random.default_rng(1)), None)
    after = _weights(agent)

    def step_norm(name):
        return float(np.sqrt(sum(((a - b) ** 2).sum() for a, b in zip(after[name], start[name]))))

    assert step_norm("critic") == pytest.approx(LR * 1e-3, rel=1e-3)
    assert step_norm("actor") > 10 * LR * 1e-3


def test_mismatches_are_one_clear_error() -> None:
    agent = ac_agents.make("torch", "list")
    with pytest.raises(ValueError, match="3 optimizers need self.param to be a list of 3 groups"):
        Updater(agent, [ac_agents.sgd("torch", agent.actor_vars(), LR)] * 3, jit=False)
    with pytest.raises(ValueError, match="keys"):
        bind_optimizers([ParamGroup("actor", []), ParamGroup("critic", [])], {"actor": 1, "critc": 2})
    with pytest.raises(ValueError, match="unknown groups"):
        UpdateSpec([ParamGroup("q", [])], [LossTerm(print, ["critic"])])

    class Three(type(agent)):  # returns one loss too many
        def __call__(self, *batch):
            losses = super().__call__(*batch)
            return [*losses, losses[0]]

    three = Three()
    updater = Updater(three, _optimizers("torch", three, "list"), jit=False)
    with pytest.raises(ValueError, match="returned 3 losses for 2 parameter group"):
        updater(1, ac_agents.batch(np.random.default_rng(0)), None)


@pytest.mark.parametrize("backend", ["torch", "tf"])
@pytest.mark.parametrize("spec", ["algorithm", "list"])
def test_multi_loss_agent_trains_with_two_optimizers(backend, spec) -> None:
    """``train(optimizer=[actor_opt, critic_opt])`` on Pendulum: both groups learn, each loss is
    logged, targets follow (the algorithm's Polyak schedule, or ``update_param()``)."""
    import gymnasium as gym

    from note_rl import LambdaCallback
    from note_rl.noise import GaussianWhiteNoiseProcess
    from tests.conftest import make_optimizer, train

    agent = ac_agents.make(backend, spec, env=gym.make("Pendulum-v1", max_episode_steps=40))
    agent.set(noise=GaussianWhiteNoiseProcess(sigma=0.5), pool_size=1000, batch=16, learning_starts=40,
              update_steps=10, seed=0)
    start = _weights(agent)
    logs = []
    optimizers = [make_optimizer(backend, agent.actor_vars(), lr=1e-3),
                  make_optimizer(backend, agent.critic_vars(), lr=1e-3)]
    train(agent, backend, optimizers, 3, callbacks=[LambdaCallback(on_batch_end=lambda b, log: logs.append(log))])
    assert agent.step_counter == 120 and agent.batch_counter == 81  # one update per step after 40
    keys = {"loss/critic_loss", "loss/actor_loss"} if spec == "algorithm" else {"loss/0", "loss/1"}
    assert keys <= set().union(*logs) and all(np.isfinite(log["loss"]) for log in logs)
    after = _weights(agent)
    for name in after:
        assert any(not np.array_equal(a, b) for a, b in zip(after[name], start[name])), name
