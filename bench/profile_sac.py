"""Where a SAC step goes (torch, one thread, rl-zoo3's Pendulum settings: [256, 256], batch 256).

    python bench/profile_sac.py            # cProfile of 1,000 env steps (one update each), after a warm-up
    python bench/profile_sac.py --floor    # the same, timed without the profiler, against the floor

``--floor`` times, in the same process, the agent's env steps (acting + env + replay + one update)
against the smallest eager PyTorch SAC update written by hand for these networks (fused Adam, one
policy sample shared by the actor and temperature losses as SB3 does, no env, no replay sampling):
what one env step would cost if everything but that update's maths were free.
"""
import argparse
import cProfile
import math
import pstats
import time

import torch

torch.set_num_threads(1)


def agent_steps(n: int, profile: bool) -> float:
    """ms per env step of the agent (after a 300-step warm-up)."""
    from note_rl.agents.torch import SAC

    agent = SAC(hidden_size=[256, 256], env="Pendulum-v1", seed=0)
    agent.set(pool_size=1_000_000, batch=256, learning_starts=100, seed=0)
    opts = [torch.optim.Adam(p, lr=1e-3) for p in agent.param]  # fused by train(), as SB3's users write it
    agent.fit(opts, None, steps=300, p=0)
    pr = cProfile.Profile() if profile else None
    started = time.perf_counter()
    if pr:
        pr.enable()
    agent.fit(opts, None, steps=n, p=0)
    if pr:
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)
    return (time.perf_counter() - started) / n * 1e3


def minimal_update_ms(n: int, batch: int = 256) -> float:
    """ms per update of a hand-written SAC update on Pendulum-shaped random data."""
    def mlp(i: int, o: int) -> torch.nn.Module:
        return torch.nn.Sequential(torch.nn.Linear(i, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                   torch.nn.ReLU(), torch.nn.Linear(256, o))

    actor, q1, q2, t1, t2 = mlp(3, 2), mlp(4, 1), mlp(4, 1), mlp(4, 1), mlp(4, 1)
    log_alpha = torch.zeros(1, requires_grad=True)
    critic_params = [*q1.parameters(), *q2.parameters()]
    target_params = [*t1.parameters(), *t2.parameters()]
    opt_a = torch.optim.Adam(actor.parameters(), 1e-3, fused=True)
    opt_c = torch.optim.Adam(critic_params, 1e-3, fused=True)
    opt_t = torch.optim.Adam([log_alpha], 1e-3, fused=True)
    s, a, s2 = torch.randn(batch, 3), torch.randn(batch, 1), torch.randn(batch, 3)
    r, d = torch.randn(batch), torch.zeros(batch)

    def sample(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = actor(x).chunk(2, 1)
        log_std = log_std.clamp(-20, 2)
        eps = torch.randn_like(mean)
        act = torch.tanh(mean + log_std.exp() * eps)
        gauss = -0.5 * eps * eps - log_std - 0.5 * math.log(2 * math.pi)
        return act, (gauss - torch.log(1 - act * act + 1e-6)).sum(1)

    def update() -> None:
        act, logp = sample(s)
        alpha = log_alpha.detach().exp()
        opt_t.zero_grad()
        (-(log_alpha * (logp.detach() - 1.0)).mean()).backward()
        opt_t.step()
        with torch.no_grad():
            next_a, next_logp = sample(s2)
            x2 = torch.cat([s2, next_a], 1)
            y = r + 0.99 * (1 - d) * (torch.min(t1(x2)[:, 0], t2(x2)[:, 0]) - alpha * next_logp)
        x = torch.cat([s, a], 1)
        critic = 0.5 * (torch.nn.functional.mse_loss(q1(x)[:, 0], y) + torch.nn.functional.mse_loss(q2(x)[:, 0], y))
        opt_c.zero_grad()
        critic.backward()
        opt_c.step()
        xa = torch.cat([s, act], 1)
        actor_loss = (alpha * logp - torch.min(q1(xa)[:, 0], q2(xa)[:, 0])).mean()
        opt_a.zero_grad()
        torch.autograd.backward(actor_loss, inputs=list(actor.parameters()))
        opt_a.step()
        with torch.no_grad():
            torch._foreach_lerp_(target_params, critic_params, 0.005)

    for _ in range(50):
        update()
    started = time.perf_counter()
    for _ in range(n):
        update()
    return (time.perf_counter() - started) / n * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--floor", action="store_true")
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    if not a.floor:
        print(f"wall per env step: {agent_steps(1000, True):.1f} ms (1,000 steps, profiler on)")
        return
    for _ in range(a.rounds):  # alternating, so the machine's drift hits both
        print(f"agent: {agent_steps(1000, False):.2f} ms per env step | hand-written update alone: "
              f"{minimal_update_ms(500):.2f} ms", flush=True)


if __name__ == "__main__":
    main()
