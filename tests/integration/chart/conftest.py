"""The chart tier's loud part: a promtool check that could not run is not a passed one.

``tests/integration/chart/test_alerts.py`` needs ``promtool`` (Debian's ``prometheus``
package; ``.ci/run`` installs it). Without it the tests skip with ``PROMTOOL WAS NOT RUN`` and
the run ends with a banner of that name (``tests/conftest.py``, which the pytest-xdist
controller loads; this folder's conftest it never does), which ``.ci/run`` refuses, as it
refuses an image tier that skipped.
"""
