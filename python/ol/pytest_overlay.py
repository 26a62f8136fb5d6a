"""pytest plugin: install the overlay described by $OL_OVERLAY.

    OL_OVERLAY=/tmp/overlay.json python -m pytest -p ol.pytest_overlay ...

The JSON maps module names to {"path": FILE} or {"source": TEXT, "origin":
PATH}.  The overlay is installed when pytest imports this plugin, before any
conftest or test module, so every `import tinyllm...` in the run sees it.
Without $OL_OVERLAY the plugin does nothing.
"""

from __future__ import annotations

import json
import os

from ol.overlay import Source, install_overlay

ENV = "OL_OVERLAY"


def _install_from_env() -> None:
    path = os.environ.get(ENV)
    if not path:
        return
    with open(path, encoding="utf-8") as f:
        entries = json.load(f)
    install_overlay({name: Source.from_json(name, entry) for name, entry in entries.items()})


_install_from_env()
