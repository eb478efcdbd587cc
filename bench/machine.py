"""What the whole machine did during a measurement: the share of its CPU time that was busy
and the share the hypervisor took for other guests (steal), from ``/proc/stat``.

These VMs lose CPU to their neighbours in bursts: a latency tail measured during a burst is
the machine's, not the code's. Each bench prints these figures beside the latencies they
qualify, so a reader can tell a stolen run from a slow one. Empty where ``/proc/stat`` is not
readable (not Linux).
"""

from __future__ import annotations


def machine_ticks() -> list[int] | None:
    """The machine's CPU time so far by state, from the first line of /proc/stat (user, nice,
    system, idle, iowait, irq, softirq, steal), in clock ticks."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            return [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None


class MachineMeter:
    """``with MachineMeter() as m: ...`` then ``m.figures``: ``machine_busy_pct`` and
    ``machine_steal_pct`` over the block (``{}`` when /proc/stat could not be read)."""

    def __init__(self) -> None:
        self.figures: dict[str, float] = {}

    def __enter__(self) -> MachineMeter:
        self._t0 = machine_ticks()
        return self

    def __exit__(self, *exc: object) -> None:
        t1 = machine_ticks()
        if self._t0 is None or t1 is None:
            return
        d = [b - a for a, b in zip(self._t0, t1, strict=True)]
        total = sum(d)
        if total:
            busy = total - d[3] - d[4] - d[7]  # not idle, not waiting for I/O, not stolen
            self.figures = {
                "machine_busy_pct": round(100 * busy / total, 1),
                "machine_steal_pct": round(100 * d[7] / total, 1),
            }
