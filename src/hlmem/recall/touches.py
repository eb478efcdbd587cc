"""Recall's activation boosts, written in batches.

Every recall raises the activation of the claims it returned (:mod:`hlmem.claims.activation`). One
transaction per recall cost the writer thread ~0.5 ms of CPU each time, taken from the next
recall on a busy machine. :class:`Touches` collects the claims instead and writes them in one
transaction: ``maintenance.access_flush_s`` after the first one waiting (0: at once), when
``maintenance.access_flush_claims`` claims wait, on :meth:`flush` (``Memory.drain``) and on
:meth:`stop` (closing). A claim returned n times in between gets n boosts and n accesses, as
of the write (activation decays over days: a second changes nothing that matters).

Best effort, like the recall it follows: a write that fails is logged and dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import anyio
from anyio.abc import TaskStatus

from hlmem.claims import boost_sync
from hlmem.clock import Clock
from hlmem.config import MaintenanceConfig
from hlmem.errors import ClosedError, StoreError
from hlmem.store import Store, SyncTx

log = logging.getLogger(__name__)


class Touches:
    """The claims recalls returned that are not written yet, and the task that writes them."""

    def __init__(self, store: Store, cfg: MaintenanceConfig, clock: Clock) -> None:
        self._store = store
        self._cfg = cfg
        self._clock = clock
        self._pending: dict[str, int] = {}  # claim id -> recalls that returned it
        self._waiting = anyio.Event()  # something is pending
        self._full = anyio.Event()  # write now: enough is pending, or stopping
        self._stopped = False

    @property
    def pending(self) -> int:
        """Claims waiting to be written."""
        return len(self._pending)

    def add(self, claim_ids: Iterable[str]) -> None:
        """Count one access of each of ``claim_ids`` (one recall); written later."""
        pending = self._pending
        for claim_id in claim_ids:
            pending[claim_id] = pending.get(claim_id, 0) + 1
        if pending:
            self._waiting.set()
            if len(pending) >= self._cfg.access_flush_claims or self._cfg.access_flush_s <= 0:
                self._full.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Write what waits, ``access_flush_s`` after it began to wait; until :meth:`stop`."""
        task_status.started()
        while not self._stopped:
            await self._waiting.wait()
            with anyio.move_on_after(self._cfg.access_flush_s):
                await self._full.wait()
            self._waiting, self._full = anyio.Event(), anyio.Event()
            await self.flush()

    async def flush(self) -> int:
        """Write every access waiting, in one transaction; the claims changed."""
        pending, self._pending = self._pending, {}
        if not pending:
            return 0
        cfg, now = self._cfg, self._clock.now()

        def touch(tx: SyncTx) -> int:
            return boost_sync(tx, cfg, pending, now=now, boost=cfg.access_boost, count_access=True)

        try:
            return await self._store.run_in_transaction(touch)
        except (StoreError, ClosedError):  # best effort: the recalls already answered
            log.debug("activation update skipped", exc_info=True)
            return 0

    async def stop(self) -> None:
        """Write what waits and end :meth:`run`."""
        self._stopped = True
        self._waiting.set()
        self._full.set()
        await self.flush()
