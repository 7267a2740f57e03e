raise RuntimeError("the env module blew up on import")
