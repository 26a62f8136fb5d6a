"""pytest plugin: install the overlay described by $OL_OVERLAY.

    OL_OVERLAY=/tmp/overlay.json python -m pytest -p ol.core.pytest_overlay ...

The JSON maps module names to {"path": FILE} or {"source": TEXT, "origin":
PATH}.  The overlay is installed when pytest imports this plugin, before any
conftest or test module, so every `import tinyllm...` in the run sees it.
Without $OL_OVERLAY the plugin does nothing.
"""

from __future__ import annotations

from ol.core.overlay import install_from_env

install_from_env()
