"""The built-in Redis's password, made once in the cluster (the Redis pod's init container)."""
