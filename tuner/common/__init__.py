"""The bottom layer: errors, secret redaction, signal handling, the typed messages between a driver
and its trial processes, and process helpers.  Imports nothing else of the tuner."""
