"""``hlmem loadtest``: small runs against the real simulated provider and real SQLite files.

Each run takes seconds. A report must be internally consistent: events offered = events stored;
model calls = windows extracted by the model (windows of blocked sources and small talk cost
nothing); the reported cost = the ledger's sum = what the simulated provider's ``/stats``
counted; no failed or parked job without injected errors; with injected errors nothing lost.
The database file of a run is read back here on its own (plain SQL), not through the report.
The HTML report is parsed and its plots checked.
"""

from __future__ import annotations

import json
import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from helpers import fast_config, rows, scalar

from hlmem import cli
from hlmem.claims import worth_extracting
from hlmem.errors import ConfigError, InputError
from hlmem.loadtest import (
    ConversationGenerator,
    GenTurn,
    LoadReport,
    LoadSpec,
    Sample,
    render_html,
    run_loadtest,
    stage_flows,
    verdict,
)
from hlmem.messages import OriginClass, Role, WindowPiece, WindowText
from hlmem.rules import extract
from hlmem.sim import SimProvider

pytestmark = pytest.mark.anyio

#: a Wednesday morning, for the rules extractor's relative dates
AT = datetime(2026, 8, 12, 9, 0, tzinfo=UTC)
SMALL: dict[str, Any] = {
    "sessions": 8,
    "events_per_session": 15,
    "rate": 60.0,
    "latency_ms": 30.0,
    "sample_interval_s": 0.2,
    "drain_timeout_s": 60.0,
}
SMALL_PRICE = (LoadSpec().price_in, LoadSpec().price_out)
TIME_PLOTS = ("plot-throughput", "plot-queue", "plot-latency", "plot-cost", "plot-rss")


def base_config() -> Any:
    return fast_config(pipeline={"extractor": {"retry_base_s": 0.05, "retry_max_s": 0.5}})


def drafts_of(turn: GenTurn) -> list[Any]:
    piece = WindowPiece(
        event_id=turn.event_id,
        chunk_no=0,
        chunk_count=1,
        start_char=0,
        end_char=len(turn.content),
        role=Role.USER,  # as a user's turn: what the model would see if nothing blocked it
        text=turn.content,
        occurred_at=AT,
    )
    window = WindowText(window_id="w", namespace="n", session_id="s", pieces=(piece,))
    return extract(window)


def ledger(db: Path) -> tuple[int, int, int, float]:
    """(answered extractor calls, prompt tokens, completion tokens, cost) of the whole ledger."""
    calls = scalar(
        db, "SELECT count(*) FROM provider_calls WHERE stage = 'extractor' AND outcome = 'ok'"
    )
    prompt, completion, cost = rows(
        db,
        "SELECT coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), "
        "coalesce(sum(cost), 0) FROM provider_calls",
    )[0]
    return int(calls), int(prompt), int(completion), float(cost)


def stuck_jobs(db: Path) -> int:
    return int(scalar(db, "SELECT count(*) FROM jobs WHERE status IN ('failed', 'parked')"))


# --- the generator -------------------------------------------------------------------------------


def test_the_generator_is_deterministic_and_each_session_stands_alone() -> None:
    gen = ConversationGenerator(11, events_per_session=30)
    again = ConversationGenerator(11, events_per_session=30)
    assert [gen.session(i) for i in range(5)] == [again.session(i) for i in range(5)]
    # session 3 does not depend on the sessions generated before it
    assert ConversationGenerator(11, events_per_session=30).session(3) == gen.session(3)
    other = ConversationGenerator(12, events_per_session=30)
    assert [t.content for t in other.session(0)] != [t.content for t in gen.session(0)]
    turns = [t for s in gen.sessions(20) for t in s]
    assert all(len(s) == 30 for s in gen.sessions(20))
    assert len({t.event_id for t in turns}) == len(turns)
    # every session is its own user: one namespace each
    assert all(len({t.namespace for t in s}) == 1 for s in gen.sessions(20))
    assert len({t.namespace for t in turns}) == 20


def test_the_generator_mixes_chinese_english_and_every_kind_of_turn() -> None:
    turns = [t for s in ConversationGenerator(3, events_per_session=40).sessions(60) for t in s]
    kinds = {t.kind for t in turns}
    assert kinds == {
        "preference",
        "identity",
        "correction",
        "plan",
        "remember",
        "small_talk",
        "question",
        "reply",
        "tool",
        "web",
    }
    assert {t.language for t in turns} == {"zh", "en"}
    assert any("我" in t.content for t in turns) and any("I " in t.content for t in turns)
    assert {t.origin_class for t in turns if t.kind == "tool"} == {OriginClass.TOOL}
    assert {t.origin_class for t in turns if t.kind == "web"} == {OriginClass.EXTERNAL_WEB}
    assert all(t.role is Role.ASSISTANT for t in turns if t.kind == "reply")
    # varied entities and numbers: many distinct memorable statements
    memorable = [t.content for t in turns if t.memorable]
    assert len(set(memorable)) > 0.3 * len(memorable)


def test_memorable_turns_hold_a_fact_and_small_talk_none() -> None:
    turns = [t for s in ConversationGenerator(5, events_per_session=40).sessions(80) for t in s]
    for turn in turns:
        if turn.memorable:
            found = drafts_of(turn)
            assert found, turn.content
            assert all(d.evidence[0].event_id == turn.event_id for d in found)
        elif turn.kind == "small_talk":
            assert not worth_extracting(turn.content), turn.content


def test_web_snippets_would_become_claims_if_provenance_let_them_through() -> None:
    turns = [t for s in ConversationGenerator(9, events_per_session=40).sessions(80) for t in s]
    web = [t for t in turns if t.kind == "web"]
    assert web and {t.language for t in web} == {"zh", "en"}
    # only provenance enforcement keeps these out: their text is an extractable request
    assert all(drafts_of(t) for t in web)
    assert all("ignore" in t.content.lower() or "忽略" in t.content for t in web)


def test_corrections_restate_a_slot_the_session_set_before() -> None:
    for session in ConversationGenerator(21, events_per_session=60).sessions(40):
        said: set[str] = set()
        for turn in session:
            slots = {d.predicate for d in drafts_of(turn)} if turn.role is Role.USER else set()
            if turn.kind == "correction":
                assert slots & said, (turn.content, said)
            if turn.memorable:
                said |= slots


# --- runs ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("loadtest")


@pytest.fixture(scope="module")
async def small_run(workdir: Path) -> tuple[LoadReport, Path]:
    """One run without injected errors, shared by the tests that read it."""
    db = workdir / "small.db"
    report = await run_loadtest(LoadSpec(**SMALL, seed=1), base_config(), db=db)
    return report, db


async def test_a_small_run_is_consistent_with_its_database_and_the_sim_provider(
    small_run: tuple[LoadReport, Path],
) -> None:
    report, db = small_run
    assert report.consistent, [c for c in report.checks if not c.ok]
    planned = SMALL["sessions"] * SMALL["events_per_session"]
    # events offered = events stored
    assert report.events_offered == report.events_acked == planned
    assert report.events_stored == scalar(db, "SELECT count(*) FROM events") == planned
    # model calls = windows extracted by the model (not the ones of blocked sources / small talk)
    calls, prompt, completion, cost = ledger(db)
    model_windows = scalar(db, "SELECT count(*) FROM extractions WHERE extractor LIKE 'model:%'")
    skipped = scalar(db, "SELECT count(*) FROM extractions WHERE extractor LIKE 'skipped:%'")
    closed = scalar(db, "SELECT count(*) FROM windows WHERE status = 'closed'")
    assert calls == model_windows == report.llm_calls == report.windows_model_extracted > 0
    assert model_windows + skipped == closed
    assert scalar(db, "SELECT count(*) FROM windows WHERE status = 'open'") == 0
    # reported cost = the ledger's sum = the sim-provider's /stats
    assert report.sim is not None
    assert (prompt, completion) == (report.sim.prompt_tokens, report.sim.completion_tokens)
    assert report.sim.ok == calls and report.sim.requests == report.requests_sent == calls
    assert report.cost == pytest.approx(cost, rel=1e-12)
    assert report.sim.cost == pytest.approx(cost, rel=1e-9)
    expected = (prompt * SMALL_PRICE[0] + completion * SMALL_PRICE[1]) / 1000
    assert cost == pytest.approx(expected, rel=1e-9)
    # per event and per day, from the same numbers
    assert report.calls_per_event == pytest.approx(calls / planned, abs=1e-4)
    assert report.tokens_per_event == pytest.approx((prompt + completion) / planned, abs=0.01)
    assert report.cost_per_1k_events == pytest.approx(cost / planned * 1000, rel=1e-9)
    assert report.projected_cost_per_day == pytest.approx(
        cost / planned * SMALL["rate"] * 86_400, rel=1e-9
    )
    # no parked or failed job, nothing untrusted remembered, every web snippet blocked
    assert stuck_jobs(db) == 0 and report.jobs_failed == report.jobs_parked == 0
    leaked = scalar(
        db,
        "SELECT count(*) FROM evidence ev JOIN events e ON e.id = ev.event_id "
        "WHERE e.origin_class IN ('external_web', 'tool')",
    )
    assert leaked == 0
    web = scalar(db, "SELECT count(*) FROM events WHERE origin_class = 'external_web'")
    assert report.source_decisions.get("external_web", {}).get("block", 0) == web


async def test_a_small_run_measures_latency_queues_and_memory(
    small_run: tuple[LoadReport, Path],
) -> None:
    report, _ = small_run
    assert report.ack_latency.count == report.events_acked
    lat = report.ack_latency
    assert lat.p50_ms is not None and lat.p95_ms is not None and lat.p99_ms is not None
    assert 0 < lat.p50_ms <= lat.p95_ms <= lat.p99_ms
    assert report.ack_rate_per_s == pytest.approx(SMALL["rate"], rel=0.35)
    assert sum(b.count for b in report.ack_histogram) == report.events_acked
    assert sum(b.acks for b in report.ack_timeline) == report.events_acked
    # end to end: sampled memorable events became visible claims
    assert report.e2e.tracked > 10 and report.e2e.visible == report.e2e.tracked
    assert report.e2e.never_visible == 0
    assert report.e2e.latency.p50_ms is not None and report.e2e.latency.p50_ms > 0
    # sampled over time, through the offered phase and the drain
    phases = [s.phase for s in report.timeline]
    assert phases.count("offer") >= 5 and "offer_end" in phases and phases[-1] == "end"
    assert all(a.t_s <= b.t_s for a, b in zip(report.timeline, report.timeline[1:], strict=False))
    assert report.timeline[-1].acked == report.events_acked
    assert report.timeline[-1].cost == pytest.approx(report.cost, rel=1e-9)
    assert all(s.rss_mib for s in report.timeline)
    assert {f.stage for f in report.stages} >= {"windower", "extractor", "conflict"}
    assert report.kept_up and report.bottleneck is None


async def test_injected_errors_are_retried_and_nothing_is_lost(workdir: Path) -> None:
    db = workdir / "errors.db"
    spec = LoadSpec(**{**SMALL, "sessions": 6}, error_rate=0.25, seed=2)
    report = await run_loadtest(spec, base_config(), db=db)
    assert report.sim is not None and report.sim.errors_injected > 0
    assert report.retries > 0
    assert report.consistent, [c for c in report.checks if not c.ok]
    planned = 6 * SMALL["events_per_session"]
    assert scalar(db, "SELECT count(*) FROM events") == report.events_stored == planned
    # every window extracted exactly once despite the errors, nothing left failed or parked
    closed = scalar(db, "SELECT count(*) FROM windows WHERE status = 'closed'")
    assert scalar(db, "SELECT count(*) FROM extractions") == closed
    assert scalar(db, "SELECT count(DISTINCT window_id) FROM extractions") == closed
    assert stuck_jobs(db) == 0
    calls, prompt, completion, cost = ledger(db)
    model_windows = scalar(db, "SELECT count(*) FROM extractions WHERE extractor LIKE 'model:%'")
    assert calls == model_windows == report.sim.ok
    assert report.sim.requests == report.requests_sent > calls
    assert (prompt, completion) == (report.sim.prompt_tokens, report.sim.completion_tokens)
    assert report.sim.cost == pytest.approx(cost, rel=1e-9)


async def test_a_real_provider_runs_under_the_budget_the_gateway_enforces(
    tmp_path: Path,
) -> None:
    budget = 0.0012
    with SimProvider() as sim:
        config = tmp_path / "provider.toml"
        config.write_text(
            f"""
[providers.remote]
preset = "sim"
base_url = "{sim.base_url}"
requests_per_minute = 100000.0

[prices."remote/*"]
input_per_1k = 0.00015
output_per_1k = 0.0006

[extractor]
kind = "model"
provider = "remote"
model = "sim-chat"

[pipeline]
poll_interval_s = 0.02
drain_poll_s = 0.01

[windower]
sweep_interval_s = 0.02
""",
            encoding="utf-8",
        )
        with pytest.raises(ValueError, match="--budget"):
            LoadSpec(provider=str(config))
        spec = LoadSpec(**{**SMALL, "sessions": 6}, provider=str(config), budget=budget, seed=3)
        db = tmp_path / "budget.db"
        report = await run_loadtest(spec, base_config(), db=db)
        served = sim.stats()
    assert report.sim is None and "budget cap" in report.provider
    calls, prompt, completion, cost = ledger(db)
    # the cap held: what was spent (and what the provider counted) stays within it
    assert 0 < cost <= budget
    assert (calls, prompt, completion) == (
        served.ok,
        served.prompt_tokens,
        served.completion_tokens,
    )
    assert report.cost == pytest.approx(cost, rel=1e-12)
    # the rest waits, parked, with its events intact
    assert report.refused > 0 and report.jobs_parked > 0
    parked = scalar(db, "SELECT count(*) FROM jobs WHERE kind = 'extractor' AND status = 'parked'")
    assert parked == report.jobs_parked
    assert report.events_stored == scalar(db, "SELECT count(*) FROM events") == 6 * 15
    assert report.consistent, [c for c in report.checks if not c.ok]


async def test_a_rules_run_costs_nothing_and_needs_no_provider(workdir: Path) -> None:
    db = workdir / "rules.db"
    spec = LoadSpec(sessions=5, events_per_session=12, extractor="rules", sample_interval_s=0.2)
    report = await run_loadtest(spec, base_config(), db=db)
    assert report.consistent, [c for c in report.checks if not c.ok]
    assert report.sim is None and report.extractor == "rules"
    assert report.llm_calls == report.cost == report.projected_cost_per_day == 0
    assert scalar(db, "SELECT count(*) FROM provider_calls") == 0
    assert report.events_stored == 60 and report.offered_rate_per_s is None
    assert report.claims.get("active", 0) > 0
    # 12 events a session: two full windows, and a tail closed by the session's end
    assert report.windows == {"size": 10, "session_end": 5}


async def test_duration_and_concurrency_bound_the_offered_load(workdir: Path) -> None:
    db = workdir / "duration.db"
    spec = LoadSpec(
        sessions=6,
        events_per_session=50,
        rate=40.0,
        concurrency=2,
        duration_s=1.0,
        extractor="rules",
        sample_interval_s=0.2,
    )
    report = await run_loadtest(spec, base_config(), db=db)
    # two sessions talk at once, 20 events/s each, for one second
    assert 30 <= report.events_offered <= 40 < report.events_planned
    assert (
        report.events_stored == report.events_offered == scalar(db, "SELECT count(*) FROM events")
    )
    assert scalar(db, "SELECT count(DISTINCT session_id) FROM events") == 2
    assert report.consistent, [c for c in report.checks if not c.ok]


async def test_a_database_that_exists_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "there.db"
    db.write_bytes(b"")
    with pytest.raises(InputError, match="fresh database"):
        await run_loadtest(LoadSpec(extractor="rules"), base_config(), db=db)


async def test_a_config_without_a_model_stage_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "rules.toml"
    config.write_text('[extractor]\nkind = "rules"\n', encoding="utf-8")
    spec = LoadSpec(provider=str(config), budget=1.0)
    with pytest.raises(ConfigError, match="nothing to cost"):
        await run_loadtest(spec, base_config())


# --- the HTML report -----------------------------------------------------------------------------


VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "source", "wbr"}


class _Checker(HTMLParser):
    """Nesting, the plots, their points, and anything that would need the network."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.plots: dict[str, list[dict[str, str]]] = {}
        self.current: str | None = None
        self.tags: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.add(tag)
        self.links += [a[k] for k in ("src", "href") if k in a]
        if tag == "svg" and "plot" in a.get("class", ""):
            self.current = a["id"]
            self.plots[self.current] = []
        elif self.current and "data-points" in a:
            self.plots[self.current].append(a)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        if tag == "svg":
            self.current = None


def check_html(text: str) -> _Checker:
    checker = _Checker()
    checker.feed(text)
    checker.close()
    assert checker.errors == [] and checker.stack == [], (checker.errors, checker.stack)
    return checker


def points(attrs: dict[str, str]) -> list[tuple[float, float]]:
    out = []
    for pair in attrs["points"].split():
        x, y = pair.split(",")
        out.append((float(x), float(y)))
    return out


async def test_the_html_report_is_valid_self_contained_and_has_its_plots(
    small_run: tuple[LoadReport, Path], tmp_path: Path
) -> None:
    report, _ = small_run
    text = render_html(report)
    assert text.startswith("<!DOCTYPE html>")
    checker = check_html(text)
    ET.fromstring(text.split("\n", 1)[1])  # well-formed: an XML parser reads it too
    assert checker.links == []
    # nothing to fetch: no script, link, image, stylesheet import or CSS url
    assert not {"script", "link", "img", "iframe", "object"} & checker.tags
    assert "url(" not in text and "@import" not in text
    assert set(TIME_PLOTS) | {"plot-latency-hist", "plot-e2e-hist"} <= set(checker.plots)
    for plot_id in TIME_PLOTS:
        lines = [a for a in checker.plots[plot_id] if "points" in a]
        assert lines, plot_id
        for attrs in lines:
            drawn = points(attrs)
            assert len(drawn) == int(attrs["data-points"]) >= 2, plot_id
            assert all(math.isfinite(x) and math.isfinite(y) for x, y in drawn)
    queue = {a["data-series"] for a in checker.plots["plot-queue"]}
    assert "extractor" in queue
    bars = checker.plots["plot-latency-hist"][0]
    assert int(bars["data-points"]) >= 1
    assert text.count("<rect") >= int(bars["data-points"])
    # the figures and the methods are in the page
    for needle in ("Consistency checks", "projected cost per day", "end to end", "bottleneck"):
        assert needle in text
    assert f"{report.events_stored}" in text


# --- the command line ----------------------------------------------------------------------------


def test_the_cli_defaults_are_the_specs() -> None:
    args = cli.build_parser().parse_args(["loadtest"])
    given = {k: v for k, v in vars(args).items() if k in LoadSpec.model_fields}
    assert given == LoadSpec().model_dump(include=set(given))
    assert set(LoadSpec.model_fields) <= set(given)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in [n for n in os.environ if n.startswith("HLMEM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HLMEM_PIPELINE__POLL_INTERVAL_S", "0.02")
    monkeypatch.setenv("HLMEM_PIPELINE__DRAIN_POLL_S", "0.01")
    monkeypatch.setenv("HLMEM_WINDOWER__SWEEP_INTERVAL_S", "0.02")
    yield


def test_the_cli_writes_json_and_an_html_report(
    tmp_path: Path, clean_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    html = tmp_path / "report.html"
    db = tmp_path / "cli.db"
    code = cli.main(
        [
            "--db",
            str(db),
            "loadtest",
            "--sessions",
            "4",
            "--events-per-session",
            "10",
            "--extractor",
            "rules",
            "--json",
            "--report",
            str(html),
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert data["events_stored"] == 40 and all(c["ok"] for c in data["checks"])
    assert LoadReport.model_validate(data).events_offered == 40
    assert scalar(db, "SELECT count(*) FROM events") == 40
    check_html(html.read_text(encoding="utf-8"))


def test_the_cli_refuses_a_real_provider_without_a_budget(
    tmp_path: Path, clean_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "real.toml"
    config.write_text("", encoding="utf-8")
    code = cli.main(["loadtest", "--provider", str(config)])
    assert code == 1
    assert "--budget" in capsys.readouterr().err


def test_the_text_summary_names_the_figures(small_run: tuple[LoadReport, Path]) -> None:
    from hlmem.loadtest import render

    text = render(small_run[0])
    for needle in ("ack", "e2e", "calls", "cost", "429s", "kept up", "events offered = stored"):
        assert needle in text


# --- the verdict ---------------------------------------------------------------------------------


def _sample(t: float, backlog: float, total: float, done: float) -> Sample:
    return Sample(
        t_s=t,
        phase="offer",
        acked=0,
        backlog={"extractor": int(backlog)},
        done={"extractor": int(done)},
        total={"extractor": int(total)},
        failed=0,
        parked=0,
        calls_ok=0,
        calls_error=0,
        prompt_tokens=0,
        completion_tokens=0,
        cost=0.0,
        retries=0,
        rate_limited=0,
        claims=0,
        rss_mib=None,
    )


def test_a_growing_backlog_names_its_stage_and_a_flat_one_keeps_up() -> None:
    # 10 windows/s arrive, 4/s are done: the backlog grows by 6/s
    growing = [_sample(t, 6 * t, 10 * t, 4 * t) for t in range(11)]
    flows = stage_flows(growing, 10.0)
    extractor = next(f for f in flows if f.stage == "extractor")
    assert extractor.slope_per_s == pytest.approx(6.0)
    assert extractor.growth == pytest.approx(0.6) and extractor.falling_behind
    kept, stage, why = verdict(flows, drained=True, drain_s=15.0, offered_s=10.0, parked=0)
    assert (kept, stage) == (False, "extractor") and "extractor" in why
    flat = [_sample(t, 2, 10 * t, 10 * t - 2) for t in range(11)]
    flows = stage_flows(flat, 10.0)
    assert not any(f.falling_behind for f in flows)
    assert verdict(flows, drained=True, drain_s=0.5, offered_s=10.0, parked=0)[:2] == (True, None)
    # flat backlogs but a long drain: not kept up, the stage with most work queued is named
    kept, stage, _ = verdict(flows, drained=True, drain_s=60.0, offered_s=10.0, parked=0)
    assert (kept, stage) == (False, "extractor")
