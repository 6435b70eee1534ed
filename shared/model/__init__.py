"""Typed records shared by every process: keys, events, notices, requests, outcomes."""
