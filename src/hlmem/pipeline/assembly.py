"""The pipeline: builds the stages, owns the root task group, starts and stops them.

``Pipeline.run`` recovers leftover jobs first, starts each ``StageRunner`` with
``await tg.start`` (so "started" means "ready"), then keeps leases renewed and periodically
hands back jobs of workers that died. ``stop`` asks every runner to stop claiming and gives them
``shutdown_grace_s`` to drain their queues; whatever still runs after that is cancelled and its
jobs are handed back. The same pipeline runs inside a caller's event loop (``hlmem.open``) or
alone in ``hlmem worker``, which stops on SIGINT and SIGTERM through :func:`stop_signals` (the
first stops gracefully, a second changes nothing, the third stops at once).
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskStatus

from hlmem.clock import Clock
from hlmem.config import Config, StageConfig
from hlmem.errors import Retryable, StoreError
from hlmem.gateway import Gateway
from hlmem.jobs import JobQueue
from hlmem.lang import langdata, load_lexicon, segment
from hlmem.lang.atoms import analysis as atoms
from hlmem.stages.admission import Admission
from hlmem.stages.base import Stage, StageRunner
from hlmem.stages.conflict import Conflict
from hlmem.stages.dedup import Dedup
from hlmem.stages.embedder import Embedder
from hlmem.stages.extractor import Extractor
from hlmem.stages.maintenance import Maintenance
from hlmem.stages.windower import Windower

if TYPE_CHECKING:  # imported when used: the helper child runs that module as its __main__
    from hlmem.pipeline.offload import Offloader

log = logging.getLogger(__name__)


def build_stages(
    queue: JobQueue,
    cfg: Config,
    clock: Clock,
    gateway: Gateway | None,
    *,
    offloader: Offloader | None,
) -> list[StageRunner]:
    """Every stage of the write path with its runner, in pipeline order; the extractor and the
    embedder hand big batches of CPU work to ``offloader`` when given (None: no helper child).

    :raises ConfigError: a stage needs a model (``extractor.kind = "model"``, a remote
        embedder, the dedup audit) and ``gateway`` is None.
    """
    store = queue.store
    lexicon = load_lexicon(cfg.extractor.lexicon_paths)
    p = cfg.pipeline
    extractor = Extractor(store, clock, cfg, lexicon=lexicon, gateway=gateway, offloader=offloader)
    embedder = Embedder(store, clock, cfg.embedder, gateway=gateway, offloader=offloader)
    # The windower only counts the events coming, and admission's gate rides along, for a
    # child that the extractor or the embedder uses.
    uses_child = extractor.offloader is not None or embedder.offloader is not None
    helper = offloader if uses_child else None
    # A model's calls are one per window: a window of its own job is retried alone.
    windower_cfg = (
        cfg.windower.model_copy(update={"windows_per_job": 1})
        if cfg.extractor.kind == "model"
        else cfg.windower
    )
    # A model's vectors take ~20 ms to seconds a text (e5 in process) or a call each (a
    # provider): one job (at most embedder.batch_size texts) a batch, so that vectors commit
    # as they come, claims' vectors (taken first) wait for one job at most, and a stop waits
    # for one call. The hashed embedder takes jobs by the batch, cheaply.
    embedder_cfg = (
        p.embedder
        if cfg.embedder.provider == "local"
        else p.embedder.model_copy(update={"batch_size": 1})
    )
    stages: list[tuple[Stage[Any], StageConfig]] = [
        (Windower(windower_cfg, clock, offloader=helper), p.windower),
        (extractor, p.extractor),
        (Admission(store, clock, cfg.admission.mode, offloader=helper), p.admission),
        (Dedup(store, clock, cfg.dedup, gateway=gateway, lexicon=lexicon), p.dedup),
        (Conflict(clock, lexicon), p.conflict),
        (embedder, embedder_cfg),
        # Not on the write path: periodic bounded ticks of lifecycle work (the "sleep").
        (Maintenance(store, clock, cfg, lexicon=lexicon), p.maintenance),
    ]
    return [StageRunner(stage, queue, stage_cfg, p, clock) for stage, stage_cfg in stages]


def _load_language_data() -> None:
    # jieba's tables from their cache, or jieba's own way and then cached: whichever process
    # loads them first (this one, a test, the helper child) makes the helper child's start fast.
    langdata.load()
    segment.load()
    atoms.load()


class Pipeline:
    def __init__(self, queue: JobQueue, cfg: Config, clock: Clock, gateway: Gateway | None) -> None:
        """``gateway`` is None when no stage calls a model.

        :raises ConfigError: as :func:`build_stages`.
        """
        self.queue = queue
        self.cfg = cfg
        #: the CPU helper child's handle (``pipeline.offload = "auto"``); it starts on demand
        self.offloader: Offloader | None = None
        if cfg.pipeline.offload == "auto":
            from hlmem.pipeline.offload import Offloader

            self.offloader = Offloader(cfg.pipeline)
        self.runners = build_stages(queue, cfg, clock, gateway, offloader=self.offloader)
        self._stop = anyio.Event()
        self.stopped = anyio.Event()

    def stop(self) -> None:
        self._stop.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            # The language data the stages cut text with, loaded before the first job (not
            # inside it, where it would stall the pipeline's first windows by seconds).
            await anyio.to_thread.run_sync(_load_language_data)
            await self.queue.recover()
            async with anyio.create_task_group() as tg:
                if self.offloader is not None:
                    # Cancelled with the stages below: it closes the child after the request
                    # in flight, if any (that one is shielded).
                    await tg.start(self.offloader.run)
                for runner in self.runners:
                    await tg.start(runner.run)
                tg.start_soon(self._housekeeping)
                log.info("pipeline started", extra={"action": "pipeline_started"})
                task_status.started()
                await self._stop.wait()
                for runner in self.runners:
                    runner.stop()
                with anyio.move_on_after(self.cfg.pipeline.shutdown_grace_s):
                    for runner in self.runners:
                        await runner.finished.wait()
                tg.cancel_scope.cancel()
        finally:
            self.stopped.set()
            log.info("pipeline stopped", extra={"action": "pipeline_stopped"})

    async def _housekeeping(self) -> None:
        """Renew our leases; hand back jobs of dead workers and expired leases."""
        renew_every = self.cfg.pipeline.lease_s / 3
        recover_every = self.cfg.pipeline.recovery_interval_s
        since_recover = 0.0
        while True:
            step = min(renew_every, recover_every)
            await anyio.sleep(step)
            since_recover += step
            try:
                await self.queue.renew()
                if since_recover >= recover_every:
                    since_recover = 0.0
                    await self.queue.recover()
            except (Retryable, StoreError) as exc:  # try again next round
                log.warning("housekeeping failed: %s", exc, extra={"action": "housekeeping_failed"})


#: the signals that stop a worker (``hlmem worker``, ``hlmem sim-provider``)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: the stop signal that no longer waits for the work in flight: the third
FORCE_AFTER = 3


class StopSignals:
    """The stop signals a worker received, from before its pipeline starts until it has stopped.

    The first SIGINT or SIGTERM asks for a graceful stop: :attr:`requested` is set and every
    :meth:`until_requested` scope is cancelled, so the caller leaves its wait and closes its
    memory, whose pipeline finishes the work in flight (at most ``pipeline.shutdown_grace_s``).
    The receiver stays installed meanwhile, so a second signal changes nothing (a supervisor
    repeating its SIGTERM, an impatient Ctrl-C) instead of killing the process half-way. The
    third cancels the whole body of :func:`stop_signals` at once: the stages are cancelled and
    hand their jobs back to the queue, the store is closed, and :attr:`forced` names the signal.
    After that the receiver is gone, and a fourth signal has its default effect.
    """

    def __init__(self, on_signal: Callable[[signal.Signals, int], None] | None = None) -> None:
        self.requested = anyio.Event()
        #: every stop signal received, in order
        self.received: list[signal.Signals] = []
        self._on_signal = on_signal
        self._force = anyio.CancelScope()
        self._graceful: list[anyio.CancelScope] = []

    @property
    def forced(self) -> signal.Signals | None:
        """The signal that forced the stop, if one did."""
        return self.received[FORCE_AFTER - 1] if len(self.received) >= FORCE_AFTER else None

    @contextmanager
    def until_requested(self) -> Iterator[None]:
        """A block that the first stop signal cancels (what a graceful stop interrupts: the
        wait of ``hlmem worker``, its ``--drain``); a signal before it cancels it at once."""
        scope = anyio.CancelScope()
        if self.requested.is_set():
            scope.cancel()
        self._graceful.append(scope)
        try:
            with scope:
                yield
        finally:
            self._graceful.remove(scope)

    async def _watch(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
            task_status.started()
            async for received in signals:
                self.received.append(received)
                count = len(self.received)
                log.info(
                    "stop signal",
                    extra={"action": "signal_received", "signal": received.name, "count": count},
                )
                if self._on_signal is not None:
                    self._on_signal(received, count)
                if count == 1:
                    self.requested.set()
                    for scope in self._graceful:
                        scope.cancel()
                elif count >= FORCE_AFTER:
                    self._force.cancel()
                    return


@asynccontextmanager
async def stop_signals(
    on_signal: Callable[[signal.Signals, int], None] | None = None,
) -> AsyncIterator[StopSignals]:
    """Receive SIGINT and SIGTERM for the whole block (:class:`StopSignals`); ``on_signal(sig,
    count)`` is told of each. Enter it before the pipeline opens and leave it after the pipeline
    has closed: a signal during the graceful stop must find the receiver still there."""
    stop = StopSignals(on_signal)
    async with anyio.create_task_group() as tg:
        await tg.start(stop._watch)
        try:
            with stop._force:
                yield stop
        finally:
            tg.cancel_scope.cancel()
