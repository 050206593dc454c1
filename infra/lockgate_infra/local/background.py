"""A daemon thread that loops until stopped: the pollers' and the scheduler's shared lifecycle."""

from __future__ import annotations

import threading

from lockgate_infra.local.health import Health


class Background:
    """Subclasses implement ``_run`` (checking ``self._stop``), keep a ``health``, call ``_start_thread``."""

    _stop: threading.Event
    _thread: threading.Thread | None = None
    name: str  # what the status calls it
    health: Health

    def _start_thread(self, name: str) -> None:
        self._thread = threading.Thread(target=self._guarded, name=name, daemon=True)
        self._thread.start()

    def _guarded(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            self.health.end(exc)  # the status says why it stopped; the thread's hook still prints it
            raise

    def _run(self) -> None:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        """Whether its thread is alive (False before start, after stop, or once it ended on an error)."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the current step (a batch, a tick) finishes."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None
