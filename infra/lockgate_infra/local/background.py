"""A daemon thread that loops until stopped: the pollers' and the scheduler's shared lifecycle."""

from __future__ import annotations

import threading


class Background:
    """Subclasses implement ``_run`` (checking ``self._stop``) and call ``_start_thread``."""

    _stop: threading.Event
    _thread: threading.Thread | None = None

    def _start_thread(self, name: str) -> None:
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        raise NotImplementedError

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the current step (a batch, a tick) finishes."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None
