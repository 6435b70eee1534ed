"""``GitTarget.status.placement``: the placement in force, for a person (issue 27.6).

Written after the conditions (so ``status`` exists) and only when it changed, as
``status.signingPublicKey`` is; removed while the placement cannot be used (the GitTarget says
why in ``Validated=False InvalidPlacement``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from shared.kube.errors import KubeError
from shared.kube.kinds import GIT_TARGETS
from shared.kube.status import StatusWriter
from shared.model.crds import GitTargetView

log = logging.getLogger(__name__)


def placement_status(target: GitTargetView) -> dict[str, Any] | None:
    """What ``status.placement`` should say (None: nothing, the placement is refused)."""
    placement = target.placement
    if placement.problem:
        return None
    return {
        "mode": placement.mode,
        "renderRoot": target.path,
        "default": placement.default,
        "byType": len(placement.by_type),
        "serializeNamespace": placement.serialize_namespace,
    }


def publish_placement(writer: StatusWriter, targets: Iterable[GitTargetView]) -> None:
    """Write ``status.placement`` of each GitTarget where it changed."""
    for target in targets:
        wanted = placement_status(target)
        if wanted == target.placement_status or (wanted is None and not target.placement_status):
            continue
        try:
            writer.write_field(GIT_TARGETS, target.meta, "placement", wanted)
        except KubeError as err:
            log.warning("status.placement of %s not written: %s", target.meta.name, err)
