"""The watcher: mirrors API edits into branch streams and keeps our custom resources' status.

It lists and watches every (GitTarget, resource type, namespace) that a WatchRule selects
(M1), publishes each change as an ObjectEvent for the GitTarget's branch (M2), publishes the
branch and GitTarget config the branch workers read, and reports GitProvider, GitTarget,
WatchRule and ClusterProvider conditions. ``python -m services.watcher [--burst]``.
"""
