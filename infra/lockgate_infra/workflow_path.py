"""Your workflows packages (``workflows/NAME/``) importable by the tools, as the functions import them.

Deployed, each package is linked into the code folder of the functions that load workflows, which
Lambda puts on the path. The tools run from a checkout instead: a command that imports a workflow
(``lockgate check``, ``lockgate eval``, ``lockgate local --model NAME.model:factory``) finds it in
the checkout's ``workflows/``, ahead of any installed copy of the same package.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def first_on_path(folder: Path) -> Iterator[None]:
    """``folder`` first on ``sys.path`` for the duration (unless it is missing or already there)."""
    entry = str(folder.resolve())
    added = folder.is_dir() and entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)
