"""Budget: the price book, worst-case reservations, the usage ledger and parked-job resumption.

Before a call leaves, :meth:`Budget.reserve` prices its worst case (estimated prompt tokens plus
``max_tokens``) and, in one write transaction, checks it against every limit that applies (the
UTC day and month, over all namespaces and for the call's namespace) and holds it in
``budget_reservations``. After the call, :meth:`Budget.settle` replaces the hold with the actual
cost and writes the ledger row (``provider_calls``) in the same transaction; a failed call is
released instead, unless the provider answered and so billed it (:meth:`Budget.fail` with
``charged``). The actual cost is the usage the provider reported; where it reported none, the
gateway's estimate, and the row's ``usage_estimated`` says so. A model with no price fails
closed. Spending per period is kept as running sums in ``budget_usage`` (updated in the same
transactions), so a reserve reads four rows by primary key instead of summing a month of
ledger.

A refused call writes a ``refused`` ledger row carrying the worst case it asked for; the runner
parks its job (``BudgetExceeded`` is ``Parkable``). :meth:`Budget.resume_parked` moves such jobs
back to ``todo`` once their namespace has that much budget again (a new day or month, a raised
limit, a reservation released), oldest first, never promising the same headroom twice.

Reservations carry their owner (``host:pid:token``, as job leases do). :meth:`Budget.recover`
releases the holds of owners that are gone (a dead process on this host, or a hold older than
``budget.reservation_ttl_s``) and leaves an ``error`` ledger row for the abandoned call.

:class:`Wire` is what one call did on the wire (requests, 429s, the answer's body, usage that
error answers reported) and what it is charged. This module knows prices and limits, never
HTTP; the gateway calls it. Every write goes through
``Store.run_in_transaction`` (one thread hop per transaction: the gateway's hot path).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from hlmem.clock import Clock, iso, parse_iso, wall
from hlmem.config import Config, PriceConfig
from hlmem.errors import BudgetExceeded, UnknownPrice
from hlmem.gateway.providers import estimate_tokens, reported_usage
from hlmem.jobs import owner_is_dead
from hlmem.store import Store, SyncTx

log = logging.getLogger(__name__)

CallKind = Literal["chat", "embed", "rerank"]
Outcome = Literal["ok", "error", "refused"]
#: the namespace key of the limits over all namespaces in ``budget_usage``
ALL_NAMESPACES = ""
#: ledger error class of a call whose process died between reserve and settle
ABANDONED = "ReservationAbandoned"
_EPSILON = 1e-12  # float sums of many small costs: do not refuse on rounding dust


@dataclass(frozen=True)
class CallInfo:
    """What a provider call is for: the ledger's dimensions."""

    stage: str
    provider: str
    model: str
    kind: CallKind
    namespace: str | None = None
    job_id: int | None = None


@dataclass(frozen=True)
class Tokens:
    prompt: int
    completion: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.completion


@dataclass(frozen=True)
class Attempts:
    """How a call went on the wire, for its ledger row."""

    sent: int = 0  # requests that left (the first one and every retry)
    rate_limited: int = 0  # 429 answers among them
    latency_ms: float | None = None  # of the last request

    @property
    def retries(self) -> int:
        return max(self.sent - 1, 0)


@dataclass
class Wire:
    """What happened on the wire during one call (mutable while the gateway runs it), and so
    what it cost: the usage the provider reported, or an estimate where it reported none."""

    sent: int = 0
    rate_limited: int = 0
    latency_ms: float | None = None
    answered: bool = False  # a 2xx answer arrived
    body: bytes = b""  # the 2xx answer's body
    billed: Tokens = Tokens(0)  # usage reported in the bodies of error answers

    def attempts(self) -> Attempts:
        return Attempts(self.sent, self.rate_limited, self.latency_ms)

    def bill(self, body: bytes) -> None:
        """Count the usage an error answer reports (a provider may bill a failed request)."""
        usage = reported_usage(body)
        if usage is not None:
            self.billed = Tokens(self.billed.prompt + usage[0], self.billed.completion + usage[1])

    def charged(self, worst: Tokens) -> tuple[Tokens, bool] | None:
        """What an answer that did not parse cost, and whether that is an estimate: the usage it
        reports, or the prompt as estimated plus the completion from the size of what arrived
        (at most ``max_tokens``); ``None`` when no answer arrived."""
        if not self.answered:
            return None
        usage = reported_usage(self.body)
        if usage is not None:
            return self.plus(Tokens(*usage)), False
        text = self.body.decode("utf-8", "replace")
        return self.plus(Tokens(worst.prompt, min(estimate_tokens(text), worst.completion))), True

    def plus(self, tokens: Tokens) -> Tokens:
        return Tokens(
            tokens.prompt + self.billed.prompt, tokens.completion + self.billed.completion
        )


def prompt_usage(prompt_tokens: int | None, worst: Tokens) -> tuple[Tokens, bool]:
    """An embed or rerank answer's usage (estimated when it reported none)."""
    if prompt_tokens is None:
        return Tokens(worst.prompt), True
    return Tokens(prompt_tokens), False


@dataclass(frozen=True)
class Reservation:
    id: int
    call: CallInfo
    worst: Tokens
    amount: float
    currency: str


@dataclass(frozen=True)
class _Limit:
    scope: str  # "daily", "monthly", "namespace 'x' daily", ...
    period: str  # budget_usage.period
    namespace: str  # budget_usage.namespace
    limit: float


def _usage_keys(limits: list[_Limit]) -> dict[str, str]:
    return {
        "periods": json.dumps(sorted({lim.period for lim in limits})),
        "namespaces": json.dumps(sorted({lim.namespace for lim in limits})),
    }


def _periods(at: datetime) -> tuple[str, str]:
    text = iso(at)
    return f"D{text[:10]}", f"M{text[:7]}"


class Budget:
    """Prices and limits from the config, held and settled in ``store``."""

    def __init__(self, cfg: Config, store: Store, clock: Clock, owner: str) -> None:
        self.cfg = cfg.budget
        self.prices = cfg.prices
        self.store = store
        self.clock = clock
        self.owner = owner

    # --- prices -------------------------------------------------------------------------------

    def price(self, provider: str, model: str) -> PriceConfig:
        """The price of ``provider/model`` (or of ``provider/*``).

        :raises UnknownPrice: neither is in the price book.
        """
        found = self.prices.get(f"{provider}/{model}") or self.prices.get(f"{provider}/*")
        if found is None:
            raise UnknownPrice(provider, model)
        return found

    def cost(self, price: PriceConfig, tokens: Tokens) -> float:
        if price.free:
            return 0.0
        return (
            tokens.prompt * (price.input_per_1k or 0.0)
            + tokens.completion * (price.output_per_1k or 0.0)
        ) / 1000

    # --- limits -------------------------------------------------------------------------------

    def limits(self, namespace: str | None, at: datetime) -> list[_Limit]:
        """Every limit a call in ``namespace`` at ``at`` counts against (infinite ones too)."""
        day, month = _periods(at)
        out = [
            _Limit("daily", day, ALL_NAMESPACES, self.cfg.daily_limit),
            _Limit("monthly", month, ALL_NAMESPACES, self.cfg.monthly_limit),
        ]
        if namespace is not None:
            own = self.cfg.namespaces.get(namespace)
            daily = own.daily_limit if own else self.cfg.namespace_daily_limit
            monthly = own.monthly_limit if own else self.cfg.namespace_monthly_limit
            out += [
                _Limit(f"namespace {namespace!r} daily", day, namespace, daily),
                _Limit(f"namespace {namespace!r} monthly", month, namespace, monthly),
            ]
        return out

    @staticmethod
    def _used(tx: SyncTx, limits: list[_Limit]) -> dict[tuple[str, str], float]:
        rows = tx.fetchall("budget_usage_rows", _usage_keys(limits))
        return {(r["period"], r["namespace"]): float(r["amount"]) for r in rows}

    @staticmethod
    def _add_usage(tx: SyncTx, limits: list[_Limit], delta: float) -> None:
        if delta:
            tx.executemany(
                "add_budget_usage", [(lim.period, lim.namespace, delta) for lim in limits]
            )

    # --- reserve, settle, release -------------------------------------------------------------

    async def reserve(self, call: CallInfo, worst: Tokens) -> Reservation:
        """Price the worst case and hold it, or refuse the call (with a ``refused`` ledger row).

        :raises UnknownPrice: the model has no price and is not free.
        :raises BudgetExceeded: the worst case does not fit a daily or monthly limit.
        """
        now = self.clock.now()
        try:
            price = self.price(call.provider, call.model)
        except UnknownPrice as exc:
            await self.refuse(call, type(exc).__name__)
            raise
        amount = self.cost(price, worst)
        limits = self.limits(call.namespace, now)

        def hold(tx: SyncTx) -> int | BudgetExceeded:
            used = self._used(tx, limits)
            for lim in limits:
                spent = used.get((lim.period, lim.namespace), 0.0)
                if spent + amount > lim.limit + _EPSILON:
                    self._ledger(
                        tx, call, Tokens(0), "refused", BudgetExceeded.__name__, reserved=amount
                    )
                    return BudgetExceeded(
                        scope=lim.scope,
                        needed=amount,
                        used=spent,
                        limit=lim.limit,
                        currency=self.cfg.currency,
                    )
            row = tx.fetchall(
                "insert_reservation",
                (
                    call.namespace,
                    call.provider,
                    call.model,
                    amount,
                    self.owner,
                    iso(now),
                    call.stage,
                    call.kind,
                    call.job_id,
                ),
            )
            self._add_usage(tx, limits, amount)
            return int(row[0]["id"])

        result = await self.store.run_in_transaction(hold)
        if isinstance(result, BudgetExceeded):
            log.info(
                "call refused: %s",
                result,
                extra={"action": "budget_refused", "stage": call.stage, "job_id": call.job_id},
            )
            raise result
        return Reservation(result, call, worst, amount, self.cfg.currency)

    async def refuse(self, call: CallInfo, error_class: str, *, reserved: float = 0.0) -> None:
        """Record a call that was never sent (unknown price, circuit open)."""

        def write(tx: SyncTx) -> None:
            self._ledger(tx, call, Tokens(0), "refused", error_class, reserved=reserved)

        await self.store.run_in_transaction(write)

    async def settle(
        self, r: Reservation, used: Tokens, attempts: Attempts, *, estimated: bool = False
    ) -> float:
        """Replace the hold with the actual cost and write the ``ok`` ledger row; the cost.

        ``used`` is what the provider reported, or (``estimated``) hlmem's estimate where it
        reported nothing; the ledger row says which."""
        cost = self.cost(self.price(r.call.provider, r.call.model), used)
        await self._finish(r, "settled", used, cost, "ok", None, attempts, estimated)
        return cost

    async def fail(
        self,
        r: Reservation,
        error_class: str,
        attempts: Attempts,
        *,
        charged: Tokens | None = None,
        estimated: bool = False,
    ) -> None:
        """End a failed call: release its hold, or settle it at ``charged`` (the provider
        answered and billed: an answer that does not parse, an error reporting usage), which
        is what it reported, or an estimate (``estimated``)."""
        if charged is not None:
            cost = self.cost(self.price(r.call.provider, r.call.model), charged)
            await self._finish(
                r, "settled", charged, cost, "error", error_class, attempts, estimated
            )
        else:
            outcome: Outcome = "error" if attempts.sent else "refused"
            await self._finish(r, "released", Tokens(0), 0.0, outcome, error_class, attempts)

    async def _finish(
        self,
        r: Reservation,
        status: Literal["settled", "released"],
        tokens: Tokens,
        cost: float,
        outcome: Outcome,
        error_class: str | None,
        attempts: Attempts,
        estimated: bool = False,
    ) -> None:
        now = iso(self.clock.now())

        def write(tx: SyncTx) -> None:
            call_id = self._ledger(
                tx,
                r.call,
                tokens,
                outcome,
                error_class,
                cost=cost,
                reserved=r.amount,
                attempts=attempts,
                estimated=estimated,
            )
            self._end_hold(tx, r.id, status, cost, call_id, now)

        await self.store.run_in_transaction(write)

    def _end_hold(
        self, tx: SyncTx, reservation_id: int, status: str, cost: float, call_id: int, now: str
    ) -> None:
        """Move a hold to settled/released and correct the period sums by the difference.

        A hold that recovery released meanwhile (its owner looked dead, or it outlived the TTL)
        no longer counts in the sums, so a late settle adds its whole cost back."""
        [hold] = tx.fetchall("get_reservation", (reservation_id,))
        counted = float(hold["amount"]) if hold["status"] == "held" else 0.0
        tx.execute("end_reservation", (status, cost, call_id, now, reservation_id))
        limits = self.limits(hold["namespace"], parse_iso(hold["created_at"]))
        self._add_usage(tx, limits, cost - counted)

    def _ledger(
        self,
        tx: SyncTx,
        call: CallInfo,
        tokens: Tokens,
        outcome: Outcome,
        error_class: str | None,
        *,
        cost: float = 0.0,
        reserved: float = 0.0,
        attempts: Attempts = Attempts(),
        estimated: bool = False,
    ) -> int:
        row = tx.fetchall(
            "insert_provider_call",
            (
                call.stage,
                call.provider,
                call.model,
                call.kind,
                call.namespace,
                call.job_id,
                tokens.prompt,
                tokens.completion,
                cost,
                self.cfg.currency,
                attempts.latency_ms,
                outcome,
                error_class,
                attempts.retries,
                attempts.rate_limited,
                reserved,
                iso(self.clock.now()),
                int(estimated),
            ),
        )
        return int(row[0]["id"])

    # --- recovery and resumption --------------------------------------------------------------

    async def recover(self) -> int:
        """Release the holds of owners that are gone; the number released."""
        now = self.clock.now()
        ttl = timedelta(seconds=self.cfg.reservation_ttl_s)
        stamp = iso(now)

        def release(tx: SyncTx) -> int:
            count = 0
            for row in tx.fetchall("held_reservations"):
                owner = row["owner"] or ""
                if owner == self.owner:
                    continue
                if not (owner_is_dead(owner) or parse_iso(row["created_at"]) + ttl < now):
                    continue
                call = CallInfo(
                    stage=row["stage"],
                    provider=row["provider"],
                    model=row["model"],
                    kind=row["call_kind"],
                    namespace=row["namespace"],
                    job_id=row["job_id"],
                )
                reserved = row["amount"]
                call_id = self._ledger(tx, call, Tokens(0), "error", ABANDONED, reserved=reserved)
                self._end_hold(tx, row["id"], "released", 0.0, call_id, stamp)
                count += 1
            return count

        count = await self.store.run_in_transaction(release)
        if count:
            log.info(
                "reservations released", extra={"action": "reservations_recovered", "count": count}
            )
        return count

    async def resume_parked(self) -> int:
        """Move jobs parked by ``BudgetExceeded`` back to ``todo`` when their namespace has the
        budget their refused call asked for; the number resumed.

        Oldest (and highest priority) first; each resumed job's need is taken off the headroom
        it was judged against, so one free cent does not wake a thousand jobs."""
        now = self.clock.now()
        stamp = wall()

        def resume(tx: SyncTx) -> int:
            parked = tx.fetchall("budget_parked_jobs")
            if not parked:
                return 0
            headroom: dict[tuple[str, str], float] = {}
            resumed = 0
            for job in parked:
                needed = job["needed"]
                limits = self.limits(job["namespace"], now)
                missing = [lim for lim in limits if (lim.period, lim.namespace) not in headroom]
                if missing:
                    used = self._used(tx, missing)
                    for lim in missing:
                        key = (lim.period, lim.namespace)
                        headroom[key] = lim.limit - used.get(key, 0.0)
                keys = [(lim.period, lim.namespace) for lim in limits]
                if all(headroom[k] > 0 and headroom[k] + _EPSILON >= needed for k in keys):
                    resumed += tx.execute("resume_parked_job", (stamp, job["id"]))
                    for k in keys:
                        headroom[k] -= needed
            return resumed

        count = await self.store.run_in_transaction(resume)
        if count:
            log.info("parked jobs resumed", extra={"action": "budget_resumed", "count": count})
        return count

    async def usage(self, namespace: str | None = None) -> list[tuple[str, float, float]]:
        """(scope, used, limit) of every limit on ``namespace`` now."""
        limits = self.limits(namespace, self.clock.now())
        rows = await self.store.fetchall("budget_usage_rows", _usage_keys(limits))
        used = {(r["period"], r["namespace"]): float(r["amount"]) for r in rows}
        return [
            (lim.scope, used.get((lim.period, lim.namespace), 0.0), lim.limit) for lim in limits
        ]


def remaining(limits: list[tuple[str, float, float]]) -> float:
    """The smallest headroom among (scope, used, limit) triples (``inf`` when unlimited)."""
    return min((limit - used for _, used, limit in limits), default=math.inf)
