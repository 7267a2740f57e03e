"""One run: build the agent and optimizer from a config, train it (data-parallel replicas included),
the body of a trial process and the fresh processes trials run in.  Imports the layers below
(:mod:`tuner.logs`, :mod:`tuner.config`, :mod:`tuner.common`)."""
