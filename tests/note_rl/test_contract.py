"""The Note_rl user contract: the README snippets, the custom-agent example, callbacks, stopping,
seeding, plots."""


import gymnasium as gym
import numpy as np
import pytest

from note_rl import LambdaCallback
from note_rl.policy import EpsGreedyQPolicy
from tests.conftest import agents_module, make_optimizer, train


def test_keras_readme_snippet() -> None:
    import tensorflow as tf
    from note_rl.policy import EpsGreedyQPolicy
    from note_rl.agents.keras import DQN
    model = DQN(4, 128, 2)                      # state_dim, hidden_size, action_dim; env CartPole-v1
    model.set(policy=EpsGreedyQPolicy(0.01), pool_size=10000, batch=64, update_steps=10, trial_count=10, criterion=200)
    optimizer = tf.keras.optimizers.Adam()
    train_loss = tf.keras.metrics.Mean(name='train_loss')
    loss = model.train(train_loss, optimizer, 8, pool_network=False)
    assert model.total_episode == 8 and len(model.reward_list) == 8
    assert isinstance(loss, float) and loss == pytest.approx(float(train_loss.result()))


def test_torch_readme_snippet() -> None:
    import torch
    from note_rl.policy import EpsGreedyQPolicy
    from note_rl.agents.torch import DQN
    model = DQN(4, 128, 2)
    model.set(policy=EpsGreedyQPolicy(0.01), pool_size=10000, batch=64, update_steps=10, PR=True, initial_TD=7, alpha=0.7)
    optimizer = torch.optim.Adam(model.param)
    loss = model.train(optimizer, 8)
    assert model.total_episode == 8 and loss is not None and np.isfinite(loss)
    assert model.buffer.alpha == 0.7 and model.priority_alpha == 0.7


# --- the seed's "Building a Custom Agent by Extending the RL Base Class", imports changed only ---
def test_custom_keras_agent_from_the_seed_docs() -> None:
    import gymnasium as gym
    import tensorflow as tf
    import note_rl.keras as nn

    class Qnet:  # step 1 of the seed (left to the user): a network exposing .param
        def __init__(self, state_dim, hidden_dim, action_dim):
            self.model = tf.keras.Sequential([tf.keras.Input((state_dim,)),
                                              tf.keras.layers.Dense(hidden_dim, activation="relu"),
                                              tf.keras.layers.Dense(action_dim)])
            self.param = self.model.trainable_weights

        def __call__(self, x):
            return self.model(x)

    class DQN(nn.RL):
        def __init__(self, state_dim, hidden_dim, action_dim):
            super().__init__()

            # Main and target Q-networks
            self.q_net = Qnet(state_dim, hidden_dim, action_dim)
            self.target_q_net = Qnet(state_dim, hidden_dim, action_dim)

            # Use main network parameters for optimization
            self.param = self.q_net.param

            # Built-in environment (CartPole-v0)
            self.env = gym.make('CartPole-v0').env  # .env removes time limit warning

        # Forward pass: returns Q-values for given states
        def action(self, s):
            return self.q_net(s)

        # Loss computation (called during training)
        def __call__(self, s, a, next_s, r, d):
            # Gather Q-values for taken actions
            a = tf.expand_dims(a, axis=1)
            current_q = tf.gather(self.q_net(s), a, axis=1, batch_dims=1)

            # Double DQN: use online net to select, target net to evaluate
            next_q_online = self.q_net(next_s)
            best_action = tf.argmax(next_q_online, axis=1, output_type=tf.int32)
            best_action = tf.expand_dims(best_action, axis=1)
            next_q_target = tf.gather(self.target_q_net(next_s), best_action, axis=1, batch_dims=1)

            # TD target
            target = r + 0.99 * next_q_target * (1.0 - d)

            # Huber loss for stability (optional, or use MSE)
            td_error = current_q - tf.stop_gradient(target)
            loss = tf.reduce_mean(tf.square(td_error))

            return loss

        # Soft target network update (polyak averaging) - optional but recommended
        def update_param(self):
            tau = 0.005  # Soft update rate
            for target_param, param in zip(self.target_q_net.param, self.q_net.param):
                target_param.assign(tau * param + (1.0 - tau) * target_param)

    from note_rl.policy import EpsGreedyQPolicy

    # Instantiate and configure
    model = DQN(state_dim=4, hidden_dim=128, action_dim=2)

    model.set(
        policy=EpsGreedyQPolicy(eps=0.05),   # Exploration policy
        pool_size=100000,                       # Replay buffer size
        batch=64,                               # Mini-batch size
        update_steps=10                         # Update target every 10 steps
    )

    # Optimizer and loss tracker
    optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
    train_loss = tf.keras.metrics.Mean(name='train_loss')

    # Train
    model.train(
        train_loss=train_loss,
        optimizer=optimizer,
        episodes=15,
        pool_network=False  # Set True + processes=N for parallel environments
    )
    # Early stopping when average reward over last 50 episodes >= 195
    model.set(trial_count=50, criterion=195.0)
    assert model.total_episode == 15 and model.batch_counter > 0
    assert model.policy.eps == 0.05 and model.batch == 64  # set() kept the earlier values


def test_custom_torch_agent() -> None:
    import torch
    from note_rl.torch import RL_pytorch

    class Qnet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))

        def forward(self, x):
            return self.net(x)

    class DQN(RL_pytorch):
        def __init__(self):
            super().__init__()
            self.q_net, self.target_q_net = Qnet(), Qnet()
            self.param = list(self.q_net.parameters())
            self.env = gym.make("CartPole-v1")

        def action(self, s):
            return self.q_net(s)

        def __call__(self, s, a, next_s, r, d):
            q = self.q_net(s).gather(1, a.long().unsqueeze(1)).squeeze(1)
            target = r + 0.99 * self.target_q_net(next_s).max(1).values.detach() * (1 - d)
            return ((q - target) ** 2).mean()

        def update_param(self):
            self.target_q_net.load_state_dict(self.q_net.state_dict())

    model = DQN()
    model.set(policy=EpsGreedyQPolicy(0.1), pool_size=1000, batch=32, update_steps=20)
    calls = []
    model.update_param = lambda: calls.append(model.step_counter)
    model.train(torch.optim.Adam(model.param), 5, p=0)
    assert calls and all(step % 20 == 0 for step in calls)


def test_callbacks_and_stop_training(backend) -> None:
    agent = agents_module(backend).DQN(4, 16, 2)
    agent.set(policy=EpsGreedyQPolicy(0.1), pool_size=500, batch=8)
    events = []

    def on_episode_end(episode, logs):
        events.append(("end", episode, sorted(logs)))
        if episode == 2:
            agent.stop_training = True

    batches = []
    cb = LambdaCallback(on_train_begin=lambda logs: events.append(("begin",)),
                        on_episode_begin=lambda episode, logs: events.append(("ep", episode)),
                        on_episode_end=on_episode_end,
                        on_batch_end=lambda batch, logs: batches.append(logs["loss"]),
                        on_train_end=lambda logs: events.append(("train_end",)))
    train(agent, backend, make_optimizer(backend, agent.param), 10, callbacks=[cb], p=0, jit_compile=False)
    assert events[0] == ("begin",) and events[-1] == ("train_end",)
    ends = [e for e in events if e[0] == "end"]
    assert [e[1] for e in ends] == [0, 1, 2]
    assert {"reward", "loss"} <= set(ends[0][2])
    assert len(batches) == agent.batch_counter > 0


def test_criterion_stops_early() -> None:
    import torch

    agent = agents_module("torch").DQN(4, 16, 2)
    agent.set(policy=EpsGreedyQPolicy(0.1), pool_size=500, batch=8, trial_count=3, criterion=1.0)
    agent.train(torch.optim.Adam(agent.param), 50, p=0)
    assert agent.total_episode == 3  # every CartPole return is >= 1


class _RecordResets(gym.Wrapper):
    def __init__(self, env):
        super().__init__(env)
        self.starts = []

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.starts.append(np.array(obs))
        return obs, info


def test_same_seed_same_returns_and_distinct_episodes(backend) -> None:
    runs = []
    for _ in range(2):
        env = _RecordResets(gym.make("CartPole-v1"))
        agent = agents_module(backend).DQN(4, 16, 2, env=env, seed=11)
        agent.set(policy=EpsGreedyQPolicy(0.3), pool_size=500, batch=8, update_steps=10)
        train(agent, backend, make_optimizer(backend, agent.param), 6, p=0, jit_compile=False)
        runs.append((agent.reward_list, env.starts))
    assert runs[0][0] == runs[1][0]
    starts = runs[0][1]
    assert len({tuple(np.round(s, 6)) for s in starts}) == len(starts)  # not one fixed reset seed
    other = agents_module(backend).DQN(4, 16, 2, seed=12)
    other.set(policy=EpsGreedyQPolicy(0.3), pool_size=500, batch=8, update_steps=10)
    train(other, backend, make_optimizer(backend, other.param), 6, p=0, jit_compile=False)
    assert other.reward_list != runs[0][0]


def test_plots_and_animation(tmp_path) -> None:
    import torch

    agent = agents_module("torch").DQN(4, 16, 2)
    agent.set(policy=EpsGreedyQPolicy(0.1), pool_size=500, batch=8)
    agent.train(torch.optim.Adam(agent.param), 4, p=0)
    for fn, name in ((agent.visualize_reward, "r.png"), (agent.visualize_loss, "l.png"),
                     (agent.visualize_reward_loss, "rl.png")):
        path = fn(str(tmp_path / name))
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    gif = agent.animate_agent(30, save_path=str(tmp_path / "agent.gif"))
    from PIL import Image

    with Image.open(gif) as img:
        assert img.format == "GIF" and img.n_frames >= 2


def test_bad_set_values_name_the_key() -> None:
    agent = agents_module("torch").DQN(4, 16, 2)
    with pytest.raises(ValueError, match="batch"):
        agent.set(batch=0)
    with pytest.raises(ValueError, match="lambda_"):
        agent.set(lambda_=2.0)
    # HER, MARL, TRL and IRL are implemented (test_her.py, test_marl.py, test_seed_api.py)
    with pytest.raises(ValueError, match="optimizer"):
        agent.train(None, 3)
