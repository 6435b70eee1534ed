"""Pure decisions: state and ``now`` in, a decision record out. No I/O, no clock, no env.

Import-linter keeps redis, rq, kubernetes, git, flask and the adapters out of this package.
"""
