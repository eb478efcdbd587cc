"""Provider health for the gateway: the circuit breaker, the outage clock, and the jobs that wait
for a provider to come back.

:class:`Breaker` is one provider's state in this process: it opens after ``breaker_failures``
consecutive failures (5xx, timeouts, connection errors) and refuses calls (``CircuitOpen``) for
``breaker_cooldown_s``; then one trial call may pass (half-open), and its success closes it. It
also keeps the outage clock: ``down_since``, the first failure (429s and refusals included) after
the last success. Every time is a float of the gateway's injectable clock, its monotonic seconds
(``clock.monotonic()``: a step of the wall clock neither ends nor stretches a cooldown), so tests
move through cooldowns and outages without waiting.

:class:`OutageWatch` moves the jobs that wait for a provider, by their last ledger row's provider
(a job whose calls never reached the ledger with its id waits for any provider):

* a job refused by the breaker (``CircuitOpen``) is back in ``todo`` with a ``run_after`` at the
  breaker's reopening, and without having used an attempt (the stage runner gives it back);
* once the provider has been down for ``gateway.outage_park_s`` those jobs are parked (reason
  ``ProviderOutage``): ``Memory.drain`` stops waiting for them, ``ops report`` lists them;
* when the breaker may let a probe through (its cooldown is over), one waiting job is made ready
  or one parked job resumed, once per cooldown: its call is the probe;
* when a call succeeds after trouble, every job waiting for that provider runs again at once.

Nothing here sends a request or reads the network; the gateway owns both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from hlmem.clock import wall
from hlmem.errors import CircuitOpen
from hlmem.store import Store, SyncTx

log = logging.getLogger(__name__)

#: ``LIMIT -1``: SQLite's "no limit"
ALL = -1


class Breaker:
    """One provider's circuit breaker and outage clock (times of the injected clock)."""

    def __init__(self, failures: int, cooldown_s: float, *, clock: Callable[[], float]) -> None:
        self.failures = failures
        self.cooldown_s = cooldown_s
        #: the time now, monotonic (for the wait a refusal reports when it is read)
        self.clock = clock
        self.consecutive = 0
        self.open_until = 0.0
        self.trial = False
        #: the first failure since the last success (None: not failing)
        self.down_since: float | None = None
        #: the last call that ended, ended well (False also while nothing is known yet)
        self.up = False
        #: a call succeeded after trouble (or for the first time): the watcher wakes its jobs
        self.recovered = False
        #: a call has succeeded since this process started
        self.seen_up = False
        #: no probe job is let through before this
        self.next_probe = 0.0
        #: sweeps still to do after a recovery
        self.sweeps = 0

    def is_open(self, now: float) -> bool:
        """Refusing calls: open, or half-open with its trial in flight."""
        return self.consecutive >= self.failures and (now < self.open_until or self.trial)

    def check(self, provider: str, now: float) -> None:
        """:raises CircuitOpen: open, or half-open with its trial in flight."""
        if self.is_open(now):
            clock = self.clock
            raise CircuitOpen(
                f"{provider}: circuit open after {self.consecutive} consecutive failures",
                retry_after_s=self.wait_s(now),
                reopens_in=lambda: self.wait_s(clock()),
            )

    def wait_s(self, now: float) -> float:
        """Seconds until a call may pass: 0 when closed, the rest of the cooldown when open, a
        whole cooldown while the half-open trial is in flight (its success ends the wait)."""
        if not self.is_open(now):
            return 0.0
        return max(self.open_until - now, 0.0) or self.cooldown_s

    def enter(self, provider: str, now: float) -> bool:
        """Let an attempt through (True when it is the half-open trial).

        :raises CircuitOpen: open, or half-open with its trial in flight.
        """
        self.check(provider, now)
        if self.consecutive < self.failures:
            return False
        self.trial = True
        return True

    def succeeded(self) -> None:
        if not self.up:
            self.recovered = True
        self.consecutive, self.trial = 0, False
        self.down_since, self.up, self.seen_up = None, True, True

    def failed(self, now: float) -> bool:
        """Count a failure; True when this one opened the breaker."""
        self.troubled(now)
        self.consecutive += 1
        was_trial, self.trial = self.trial, False
        if was_trial or self.consecutive == self.failures:
            self.open_until = now + self.cooldown_s
            return True
        return False

    def troubled(self, now: float) -> None:
        """A call ended badly (a 5xx, timeout, 429 or refusal): the outage clock runs."""
        self.up = False
        if self.down_since is None:
            self.down_since = now
            self.next_probe = max(self.next_probe, now + self.cooldown_s)

    def end_trial(self, trial: bool) -> None:
        if trial:
            self.trial = False

    def down_for(self, now: float) -> float:
        """Seconds since the first failure after the last success (0 when not failing)."""
        return 0.0 if self.down_since is None else max(now - self.down_since, 0.0)

    def may_probe(self, now: float) -> bool:
        """Whether a waiting job may be let through as a probe: the provider is not known to be
        up, the breaker would let a call pass, and no probe went in this cooldown."""
        return not self.up and not self.is_open(now) and now >= self.next_probe

    def probed(self, now: float) -> None:
        self.next_probe = now + self.cooldown_s


class OutageWatch:
    """The job-table side of provider health: park, wake and resume the jobs waiting for one."""

    def __init__(self, store: Store, *, outage_park_s: float) -> None:
        self.store = store
        self.outage_park_s = outage_park_s

    async def watch(self, name: str, breaker: Breaker, now: float) -> None:
        """One look at provider ``name``: resume its jobs when it is back, park them when it
        has been down for ``outage_park_s``, or let one through as a probe when it may take one."""
        if breaker.recovered or (breaker.up and breaker.sweeps):
            # Again at the next look: a refusal read while the breaker was open may be written
            # back just after this sweep.
            breaker.sweeps = 1 if breaker.recovered else breaker.sweeps - 1
            breaker.recovered = False
            await self.release(name, limit=ALL)
            return
        if breaker.down_for(now) >= self.outage_park_s:
            # At every look while it lasts: a job refused just before the outage crossed the
            # limit may be written back to todo after the previous sweep. During such an outage
            # every new call is parked at once, so todo holds few jobs to look at.
            await self.park_waiting(name, breaker.down_for(now))
        if breaker.may_probe(now):
            # Once per cooldown, found or not: a look costs a write transaction.
            breaker.probed(now)
            await self.release(name, limit=1)

    async def release(self, provider: str, *, limit: int) -> int:
        """Make up to ``limit`` jobs waiting for ``provider`` ready now: deferred ones first,
        then parked ones; how many."""
        params = {"now": wall(), "provider": provider, "limit": limit}

        def run(tx: SyncTx) -> int:
            woken = tx.execute("wake_deferred_jobs", params)
            if limit != ALL and woken >= limit:
                return woken
            left = ALL if limit == ALL else limit - woken
            return woken + tx.execute("resume_outage_jobs", {**params, "limit": left})

        count = await self.store.run_in_transaction(run)
        if count:
            log.info(
                "jobs released for %s",
                provider,
                extra={"action": "outage_released", "provider": provider, "count": count},
            )
        return count

    async def park_waiting(self, provider: str, down_s: float) -> int:
        """Park the jobs deferred for ``provider`` (it has been down for ``down_s``)."""
        error = (
            f"ProviderOutage: {provider}: failing for {down_s:.0f} s "
            f"(gateway.outage_park_s = {self.outage_park_s:g})"
        )
        params = {"now": wall(), "provider": provider, "error": error}
        count = await self.store.run_in_transaction(
            lambda tx: tx.execute("park_deferred_jobs", params)
        )
        if count:
            log.warning(
                "jobs parked: %s is down",
                provider,
                extra={"action": "outage_parked", "provider": provider, "count": count},
            )
        return count

    async def parked_providers(self) -> dict[str, int]:
        """Jobs parked for an outage, by provider ("" for jobs of no known provider)."""
        found = await self.store.fetchall("outage_parked_by_provider")
        return {str(r["provider"]): int(r["n"]) for r in found}

    async def catch_up(self, breakers: Iterable[tuple[str, Breaker]]) -> int:
        """Resume the jobs parked (by any process) for providers that are up here."""
        parked = await self.parked_providers()
        resumed = 0
        for name, breaker in breakers:
            if breaker.up and (parked.get(name) or parked.get("")):
                resumed += await self.release(name, limit=ALL)
        return resumed
