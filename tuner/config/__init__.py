"""What a config means and whether it is valid: the structured-config schema and its checks (bounds,
env, features, strategy), ``_target_`` import, search spaces and their cost, and the bounded readers of
files that others may have written.  Imports only :mod:`tuner.common`."""
