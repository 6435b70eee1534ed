"""The only code that talks to Redis: key builders, streams, leases and transactions."""
