"""Note_rl's Keras pool-network example agents: the built-in agents, which build one env per
process themselves in ``train(pool_network=True, processes=N)``; see :mod:`note_rl.examples`."""
