"""Env modules that fail on import in the ways user code can (for tests/tuner/cli/test_user_code.py)."""
