"""Counts XLA compilations and persistent-cache hits for the bench scripts (jax.monitoring events)."""

from __future__ import annotations

import jax

from nas.engine.compiler_memory import BACKEND_COMPILE_EVENT


class CompileStats:
    """XLA compilations (count, seconds) and persistent-cache hits, from jax's monitoring events."""

    def __init__(self):
        self.count, self.seconds, self.cache_hits = 0, 0.0, 0
        jax.monitoring.register_event_duration_secs_listener(self._duration)
        jax.monitoring.register_event_listener(self._event)

    def _duration(self, event, secs, **_):
        if event == BACKEND_COMPILE_EVENT:
            self.count += 1
            self.seconds += secs

    def _event(self, event, **_):
        if event == "/jax/compilation_cache/cache_hits":
            self.cache_hits += 1

    def snapshot(self):
        return self.count, self.seconds, self.cache_hits
