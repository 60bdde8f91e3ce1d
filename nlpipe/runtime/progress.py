"""Progress of long work on stderr: counts, rate, and an ETA when the total is known.

Shown when the stream is a terminal (one line redrawn in place) or when asked (one line every
``interval`` seconds, for logs); silent otherwise. Used by ``nlpipe annotate`` and usable by training
loops::

    with Progress("train pos", total=epochs, unit="epochs") as p:
        for epoch in range(epochs):
            ...
            p.update(1, loss=f"{loss:.3f}")
"""
from __future__ import annotations

import sys
import time
from typing import IO, Any, Callable, Optional


def _count(x: float) -> str:
    return f"{x:,.0f}" if x == int(x) else f"{x:,.1f}"


def _duration(seconds: float) -> str:
    s = int(seconds + 0.5)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Counts of done work with a rate; ``total`` (in ``unit``, or in ``position`` terms) gives an ETA.

    Args:
        label: what is running, printed first (``"annotate"``).
        total: the amount of work, in ``unit`` or (when :meth:`update` is given ``position``) in
            position units such as input bytes; ``None`` when unknown (no percentage, no ETA).
        unit: what :meth:`update`'s ``n`` counts (``"sentences"``, ``"epochs"``).
        work_unit: a second count whose rate is shown (``"tokens"``); the rate is of ``unit`` without it.
        enabled: ``None``: only when ``stream`` is a terminal.
        interval: seconds between lines (default 0.2 on a terminal, 10 otherwise).
    """

    def __init__(self, label: str, total: Optional[float] = None, unit: str = "items",
                 work_unit: Optional[str] = None, enabled: Optional[bool] = None,
                 stream: Optional[IO[str]] = None, interval: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = self.tty if enabled is None else enabled
        self.label, self.total, self.unit, self.work_unit = label, total, unit, work_unit
        self.interval = interval if interval is not None else (0.2 if self.tty else 10.0)
        self.clock = clock
        self.start = clock()
        self.count = 0.0
        self.work = 0.0
        self.position: Optional[float] = None
        self.info: dict = {}
        self._last = self.start
        self._width = 0
        self._closed = False

    def update(self, n: float = 1, work: float = 0, position: Optional[float] = None, **info: Any) -> None:
        """Add ``n`` done items and ``work`` units; ``position``: absolute progress toward ``total``;
        ``info``: values to show as they are (``loss=0.12``)."""
        self.count += n
        self.work += work
        if position is not None:
            self.position = position
        self.info.update(info)
        if self.enabled:
            now = self.clock()
            if now - self._last >= self.interval:
                self._last = now
                self._show(self.line(now))

    def note(self, text: str) -> None:
        """Show ``text`` as the status line now (``loading models``), when enabled."""
        if self.enabled:
            self._show(f"{self.label}: {text}")
            self._last = self.clock()

    def restart(self) -> None:
        """Count time from now on (what happened before, such as loading models, is not work done)."""
        self.start = self._last = self.clock()

    def fraction(self) -> Optional[float]:
        """Done part of ``total`` (0..1), or ``None`` when the total is unknown."""
        if not self.total:
            return None
        done = self.position if self.position is not None else self.count
        return min(max(done / self.total, 0.0), 1.0)

    def line(self, now: Optional[float] = None, final: bool = False) -> str:
        """The status line as shown (without a line ending)."""
        elapsed = max((self.clock() if now is None else now) - self.start, 1e-9)
        parts = [f"{_count(self.count)} {self.unit}"]
        rate_of, rate_unit = (self.work, self.work_unit) if self.work_unit else (self.count, self.unit)
        if self.work_unit:
            parts.append(f"{_count(self.work)} {self.work_unit}")
        rate = rate_of / elapsed
        parts.append(f"{rate:,.0f} {rate_unit}/s" if rate >= 10 else f"{rate:.2f} {rate_unit}/s")
        parts += [f"{k} {v}" for k, v in self.info.items()]
        text = f"{self.label}: " + ", ".join(parts)
        if final:
            return text + f" in {_duration(elapsed)}"
        f = self.fraction()
        if f is not None:
            text += f", {100 * f:.0f}%"
            if f > 0:
                text += f" ETA {_duration(elapsed * (1 - f) / f)}"
        return text

    def _show(self, text: str) -> None:
        try:
            if self.tty:
                pad = max(self._width - len(text), 0)
                self.stream.write("\r" + text + " " * pad)
                self._width = len(text)
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: progress is never worth failing the run
            self.enabled = False

    def clear(self) -> None:
        """Blank the status line on a terminal, so that a message can be printed on a clean line
        (the next update redraws it)."""
        if self.enabled and self.tty and self._width:
            try:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self._width = 0
            self._last = float("-inf")  # redraw at the next update

    def close(self) -> None:
        """Print the final summary line (when enabled)."""
        if self._closed:
            return
        self._closed = True
        if self.enabled:
            self._show(self.line(final=True))
            if self.tty:
                try:
                    self.stream.write("\n")
                    self.stream.flush()
                except (OSError, ValueError):
                    pass

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if kind is None:
            self.close()
        elif self.enabled and self.tty and self._width:
            try:  # leave the cursor on a fresh line for the error message
                self.stream.write("\n")
            except (OSError, ValueError):
                pass
