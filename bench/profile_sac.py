"""Where a SAC step goes (torch, one thread, rl-zoo3's Pendulum settings: [256, 256], batch 256):
cProfile of 1,000 env steps, each with one gradient update, after a 300-step warm-up.

    python bench/profile_sac.py
"""
import cProfile, pstats, time, torch
torch.set_num_threads(1)
from note_rl.agents.torch import SAC
agent = SAC(hidden_size=[256, 256], env="Pendulum-v1", seed=0)
agent.set(pool_size=1_000_000, batch=256, learning_starts=100, seed=0)
opts = [torch.optim.Adam(p, lr=1e-3, foreach=True) for p in agent.param]
agent.fit(opts, None, steps=300, p=0)
t = time.perf_counter()
pr = cProfile.Profile(); pr.enable()
agent.fit(opts, None, steps=1000, p=0)
pr.disable()
print(f"wall per env step: {(time.perf_counter() - t):.1f} ms (1,000 steps, profiler on)")
pstats.Stats(pr).sort_stats("tottime").print_stats(25)
