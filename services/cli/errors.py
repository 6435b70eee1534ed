"""What the command answers when it cannot do what it was asked, with kubectl's exit codes.

kubectl and its plugins exit 0 on success and 1 on an error, and write errors to stderr;
argparse's usage errors are 2. The finer codes below let a script tell the common cases
apart without reading the message (docs/cli.md lists them).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
#: argparse's own code for a wrong command line.
EXIT_USAGE = 2
#: The object (or the install) asked about does not exist.
EXIT_NOT_FOUND = 3
#: The installed CRDs cannot do what was asked (``suspend`` before ``spec.suspend`` exists).
EXIT_UNSUPPORTED = 4
#: ``--wait`` ran out of time before the cluster showed the change.
EXIT_TIMEOUT = 5
#: ``check`` found a problem (each one is printed).
EXIT_CHECK_FAILED = 6


class CliError(Exception):
    """A failure the person reads: one line on stderr, and the exit code."""

    code = EXIT_ERROR


class NotFoundError(CliError):
    """What was named does not exist."""

    code = EXIT_NOT_FOUND


class Unsupported(CliError):
    """The installed CRDs do not have what the command needs; nothing was changed."""

    code = EXIT_UNSUPPORTED


class TimedOut(CliError):
    """A ``--wait`` deadline passed first."""

    code = EXIT_TIMEOUT
