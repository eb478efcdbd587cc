"""The CPU helper child (``pipeline.offload = "auto"``): the pipeline's pure CPU work, elsewhere.

The inline pipeline shares one GIL between its event loop, aiosqlite's threads and the worker
threads of ``prepare``. The extractor's rules (per window) and full-text bodies (per event) hold
that GIL for about a third of the pipeline's time, and the local embedder for a tenth more. A
child process (``python -m hlmem.pipeline.offload``) with its own interpreter does that work while
the parent's GIL serves everything else; on a machine with two cores or more the pipeline gets
faster and the parent uses less CPU.

What the child computes is pure: :func:`hlmem.lang.event_terms.event_body` of event texts, the
drafts of the rules extractor over the built-in lexicon (and which windows are worth extracting),
:class:`hlmem.lang.embedding.LocalEmbedder` vectors, and admission's
:func:`hlmem.claims.admission_rules.gate` of proposed claims; the same input gives the same output
in any process. So the child is never needed for correctness: a batch it cannot take (none ready
yet, it died, it answered an error) is computed in the parent as without it, with identical results.
A stage sends it only batches big enough to pay for the round trip
(``pipeline.offload_min_windows``, ``offload_min_texts``, ``offload_min_candidates``); one with a
custom lexicon never does (the child knows only the built-in one).

Protocol, over the child's stdin and stdout: :mod:`hlmem.pipeline.childio` frames of plain data.

- child -> parent, once, after loading jieba and the part-of-speech tagger: ``("ready", pid)``.
- parent -> child: ``("extract", windows, texts)``, each window as plain tuples
  (:func:`hlmem.messages.window_tuple`); ``("embed", dim, texts)``; or ``("gate", drafts)``,
  each draft as :func:`draft_tuple`.
- child -> parent: ``("ok", result)`` — ``(bodies, drafts per window)``, ``None`` for a window
  not worth extracting (:func:`hlmem.claims.admission_rules.window_worth_extracting`), each draft as
  tuples (:func:`draft_tuple`; decoding them costs the parent ~15 % less than unpickling
  ``ClaimDraft`` objects, and they are ~30 % smaller), the vectors as packed float32 bytes, or
  each draft's admission ``(verdict, rule)`` — or ``("error", class_name, message)``.

Lifecycle. :meth:`Offloader.run` is a task of the pipeline's task group. It starts the child in
the background once ``pipeline.offload_start_after_texts`` texts have come in bursts: events the
windower placed in batches of at least ``offload_min_texts`` (:meth:`Offloader.expect`, the
earliest sign of a burst), and the texts of big extractor and embedder batches. A child costs
~1.2 s of CPU to start (imports, and jieba's tables from :mod:`hlmem.lang.langdata`'s cache) and a
short burst is over before it is ready, so it is started for sustained volume only. Every batch
until it is ready runs in the thread. One request is in flight at a time. A child that cannot
start, dies or answers an error is a failure: it is logged, the batch runs in the thread, and
the next big batch starts a new child; after :data:`MAX_FAILURES` the pipeline stays in-thread.
When the pipeline stops, ``run`` is cancelled and closes the child's stdin; the child exits at
the end of its input (as it does when the parent dies) and is reaped, or killed after
:data:`CLOSE_TIMEOUT_S`. It ignores SIGINT and SIGTERM, like the writer child.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio
import numpy as np
from anyio.abc import Process, TaskStatus
from anyio.streams.buffered import BufferedByteReceiveStream

from hlmem.claims import Decision
from hlmem.lang import langdata
from hlmem.lang.embedding import Vectors
from hlmem.messages import ClaimDraft, EvidenceSpan, Extraction, window_from
from hlmem.pipeline import childio

if TYPE_CHECKING:
    from hlmem.config import PipelineConfig

log = logging.getLogger(__name__)

START_TIMEOUT_S = 60.0  # interpreter start-up, imports and jieba, on a busy machine
REPLY_TIMEOUT_S = 60.0  # a batch takes well under a second; a child this late is stuck
CLOSE_TIMEOUT_S = 5.0  # an idle child exits at once on end of input; kill it after this
#: failures (could not start, died, answered an error) after which batches stay in-thread
MAX_FAILURES = 3

_DRAFT_FIELDS = tuple(f for f in ClaimDraft.model_fields if f != "evidence")


# --- plain-data codecs, used on both sides -----------------------------------------------------


def draft_tuple(draft: ClaimDraft) -> tuple[Any, ...]:
    """A draft as plain tuples: its fields in model order, then its evidence spans."""
    evidence = tuple((e.event_id, e.quote, e.start_char, e.end_char) for e in draft.evidence)
    return (*(getattr(draft, f) for f in _DRAFT_FIELDS), evidence)


def draft_from(values: tuple[Any, ...]) -> ClaimDraft:
    """The draft of :func:`draft_tuple`, built without validation (the child built it validated)."""
    fields = dict(zip(_DRAFT_FIELDS, values, strict=False))
    fields["evidence"] = tuple(
        EvidenceSpan.model_construct(event_id=e, quote=q, start_char=s, end_char=end)
        for e, q, s, end in values[-1]
    )
    return ClaimDraft.model_construct(**fields)


# --- the parent's side ------------------------------------------------------------------------


class Offloader:
    """The parent's handle on the CPU helper child; owned by the pipeline.

    ``extract`` and ``embed`` return ``None`` whenever the child cannot take the batch (none is
    ready yet, it failed, it failed too often): the caller then computes the batch itself.
    """

    def __init__(self, cfg: PipelineConfig) -> None:
        self.min_windows = cfg.offload_min_windows
        self.min_texts = cfg.offload_min_texts
        self.min_candidates = cfg.offload_min_candidates
        self.start_after_texts = cfg.offload_start_after_texts
        #: texts of the big batches seen while no child ran
        self.demand = 0
        self.starts = 0
        self.failures = 0
        #: batches the child computed, by operation
        self.served = {"extract": 0, "embed": 0, "gate": 0}
        self._proc: Process | None = None
        self._rx: BufferedByteReceiveStream | None = None
        self._running = False
        self._wanted = anyio.Event()
        self._lock = anyio.Lock()

    @property
    def pid(self) -> int | None:
        """The ready child's pid (``None`` while none is)."""
        return None if self._proc is None else self._proc.pid

    @property
    def given_up(self) -> bool:
        """Too many failures: every batch runs in the thread from now on."""
        return self.failures >= MAX_FAILURES

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start a child whenever a batch asks for one and none runs, until cancelled (or given
        up); then close the child."""
        self._running = True
        task_status.started()
        try:
            while not self.given_up:
                await self._wanted.wait()
                self._wanted = anyio.Event()
                if self._proc is None and not self.given_up:
                    await self._start()
        finally:
            self._running = False
            await self.aclose()

    async def extract(
        self, windows: Sequence[tuple[Any, ...]], texts: Sequence[str]
    ) -> Extraction | None:
        """The full-text body of each of ``texts`` and, for each window
        (:func:`hlmem.messages.window_tuple`), the built-in rules' drafts or ``None`` when it is
        not worth extracting, computed in the child; ``None`` when it cannot take them (compute
        them in the thread)."""
        if not self._ready(len(texts)):
            return None
        reply = await self._request(("extract", list(windows), list(texts)))
        if reply is None:
            return None
        bodies, drafts = reply
        return bodies, [
            None if per_window is None else [draft_from(d) for d in per_window]
            for per_window in drafts
        ]

    async def embed(self, texts: Sequence[str], *, dim: int) -> Vectors | None:
        """The local embedder's ``(len(texts), dim)`` vectors of ``texts``, computed in the child;
        ``None`` when it cannot take them (compute them in the thread)."""
        if not self._ready(len(texts)):
            return None
        reply = await self._request(("embed", dim, list(texts)))
        if reply is None:
            return None
        vectors: Vectors = np.frombuffer(reply, dtype=np.float32).reshape(len(texts), dim)
        return vectors

    async def gate(self, drafts: Sequence[ClaimDraft]) -> list[Decision] | None:
        """:func:`hlmem.claims.admission_rules.gate` of each of ``drafts``, computed in the child;
        ``None`` when it cannot take them (compute them here)."""
        if not self._ready(len(drafts)):
            return None
        reply = await self._request(("gate", [draft_tuple(d) for d in drafts]))
        if reply is None:
            return None
        return [Decision(verdict, rule) for verdict, rule in reply]

    def expect(self, texts: int) -> None:
        """``texts`` new texts are on their way (the windower placed that many events): a
        burst of at least ``min_texts`` counts toward starting a child, as a big batch does.
        Counted at the head of the pipeline, a burst starts the child seconds before its
        windows reach the extractor."""
        if texts >= self.min_texts and self._proc is None:
            self._note(texts)

    def _ready(self, texts: int) -> bool:
        """Whether a child can take a batch of ``texts`` now; when none runs, the batch counts
        toward starting one (:meth:`_note`)."""
        if self._proc is None:
            self._note(texts)
            return False
        return True

    def _note(self, texts: int) -> None:
        """Count ``texts`` of demand; once it reaches ``start_after_texts``, ask ``run`` to
        start a child (in the background: nothing waits for it)."""
        self.demand += texts
        if self._running and not self.given_up and self.demand >= self.start_after_texts:
            self._wanted.set()

    async def _request(self, request: tuple[Any, ...]) -> Any:
        data = childio.frame(request)
        async with self._lock:  # one request in flight: replies come back in order
            proc, rx = self._proc, self._rx
            if proc is None or rx is None:  # lost while this request waited
                return None
            assert proc.stdin is not None
            # Once sent, the reply is awaited even by a cancelled caller: the next request
            # would read it otherwise.
            with anyio.CancelScope(shield=True):
                try:
                    with anyio.fail_after(REPLY_TIMEOUT_S):
                        await proc.stdin.send(data)
                        reply = await childio.receive(rx)
                except Exception as exc:  # gone, stuck, or out of step: none of it is usable
                    late = isinstance(exc, TimeoutError)
                    self._proc = self._rx = None
                    code = await childio.reap(proc, 0.0 if late else childio.EXIT_GRACE_S)
                    self._failed("stuck" if late else "lost", f"{exc!r}, exit code {code}")
                    return None
        if reply[0] != "ok":
            self._failed("answered an error", f"{reply[1]}: {reply[2]}")
            return None
        self.served[request[0]] += 1
        return reply[1]

    async def _start(self) -> None:
        self.starts += 1
        command = [sys.executable, "-m", "hlmem.pipeline.offload"]
        try:
            proc, rx, hello = await childio.spawn(command, timeout_s=START_TIMEOUT_S)
        except (OSError, childio.ChildExited) as exc:
            self._failed("could not start", str(exc))
            return
        self._proc, self._rx = proc, rx
        log.info(
            "offload child started",
            extra={"action": "offload_started", "pid": hello[1], "starts": self.starts},
        )

    def _failed(self, what: str, detail: str) -> None:
        self.failures += 1
        log.warning(
            "offload child %s (%s); computing in the thread",
            what,
            detail,
            extra={"action": "offload_failed", "failures": self.failures},
        )
        if self.given_up:
            log.warning(
                "offload child failed %d times; computing every batch in the thread",
                self.failures,
                extra={"action": "offload_given_up", "failures": self.failures},
            )
            self._wanted.set()  # wakes ``run``, which stops and closes a child still running

    async def aclose(self) -> None:
        """Let the child finish (end of input) and reap it; kill it if it does not exit."""
        with anyio.CancelScope(shield=True):
            async with self._lock:  # after the request in flight, if any
                proc, self._proc, self._rx = self._proc, None, None
                if proc is None:
                    return
                code = await childio.finish(proc, CLOSE_TIMEOUT_S)
        log.info(
            "offload child stopped",
            extra={"action": "offload_stopped", "exit_code": code, "served": self.served},
        )


# --- the child --------------------------------------------------------------------------------


def serve(inp: BinaryIO, out: BinaryIO) -> int:
    """Load the language data, say ready, then answer every request read from ``inp``."""
    # Imported here: the parent imports this module without needing any of them.
    from hlmem.claims import gate, window_worth_extracting
    from hlmem.lang import LocalEmbedder, default_lexicon, event_body, langdata, segment
    from hlmem.lang.atoms import analysis as atoms
    from hlmem.rules import RulesExtractor

    langdata.load()  # jieba's tables from their cache: ~0.3 s instead of ~2.3 s
    segment.load()
    atoms.load()
    rules = RulesExtractor(default_lexicon())
    embedders: dict[int, LocalEmbedder] = {}

    def window_drafts(window: tuple[Any, ...]) -> list[tuple[Any, ...]] | None:
        _, _, _, pieces = window  # as messages.window_tuple gives it
        said = ((role, text) for _, _, _, _, _, role, text, _ in pieces)
        if not window_worth_extracting(said):
            return None
        return [draft_tuple(d) for d in rules.extract(window_from(window))]

    def handle(request: tuple[Any, ...]) -> Any:
        if request[0] == "extract":
            _, windows, texts = request
            return [event_body(t) for t in texts], [window_drafts(w) for w in windows]
        if request[0] == "gate":
            verdicts = (gate(draft_from(d)) for d in request[1])
            return [(v.decision, v.rule) for v in verdicts]
        if request[0] == "embed":
            _, dim, texts = request
            if dim not in embedders:
                embedders[dim] = LocalEmbedder(dim)
            return embedders[dim].embed(texts).tobytes()
        raise ValueError(f"unknown request {request[0]!r}")

    childio.settle()
    try:
        childio.send(out, ("ready", os.getpid()))
        while (request := childio.read(inp)) is not None:
            try:
                reply: tuple[Any, ...] = ("ok", handle(request))
            except Exception as exc:
                log.exception("offload request failed", extra={"action": "offload_error"})
                reply = ("error", type(exc).__name__, str(exc))
            childio.send(out, reply)
    except BrokenPipeError:  # the parent is gone
        pass
    return 0


def main() -> int:
    out = childio.become_child()
    langdata.skip_pkg_resources()  # before serve() imports jieba
    try:
        return serve(sys.stdin.buffer, out)
    finally:
        with contextlib.suppress(BrokenPipeError):
            out.close()


if __name__ == "__main__":
    sys.exit(main())
