"""The tools' loopback servers and stacks: ``with`` starts one and always stops it."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Serving:
    """Something that runs between ``start()`` and ``stop()``; as a context manager, exactly then."""

    def start(self) -> Self:
        """Start serving; returns itself."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop serving and release what it held."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
