"""What the subset refuses: a folder it cannot read (``Unsupported``) and a write it cannot
place (``Refused``). The writer turns the first into ``UnsupportedContent`` for the folder and
the second into the condition reason it carries."""

from __future__ import annotations


class Unsupported(ValueError):
    """A folder the subset cannot read; ``feature`` names what the user wrote."""

    def __init__(self, file: str, feature: str, detail: str = "") -> None:
        self.file = file
        self.feature = feature
        text = f"{file}: kustomize {feature} is not supported by gitops-reverser"
        super().__init__(f"{text} ({detail})" if detail else text)


class Refused(Exception):
    """The write cannot be placed: ``reason`` is the GitTarget condition's reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
