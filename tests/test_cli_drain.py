"""``ingest --drain`` and ``worker --drain`` say when work did not finish, and exit non-zero.

The real ``hlmem`` program runs as a subprocess with the model extractor against the simulated
provider on 127.0.0.1 (in this process), configured by a TOML file: a tiny budget parks jobs
(exit 3), answers that never parse fail them (exit 4). Assertions are on exit codes, the
summary line, the JSON and the job table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import rows
from test_cli import hlmem

from hlmem.sim import SimProvider, SimSettings


def config_file(
    tmp_path: Path, base_url: str, *, daily_limit: float | None = None, outage_park_s: float = 300
) -> Path:
    budget = f"daily_limit = {daily_limit}\n" if daily_limit is not None else ""
    text = f"""
[gateway]
outage_park_s = {outage_park_s}

[pipeline]
poll_interval_s = 0.02
drain_poll_s = 0.01

[pipeline.extractor]
retry_base_s = 0.01
retry_max_s = 0.02

[windower]
sweep_interval_s = 0.02

[extractor]
kind = "model"
provider = "sim"
model = "sim-chat"
max_tokens = 100

[providers.sim]
preset = "sim"
base_url = "{base_url}"
requests_per_minute = 60000.0
tokens_per_minute = 100000000.0
max_concurrency = 8
retry_base_s = 0.01

[prices."sim/*"]
input_per_1k = 0.5
output_per_1k = 1.0

[budget]
{budget}"""
    path = tmp_path / "hlmem.toml"
    path.write_text(text, encoding="utf-8")
    return path


def events(tmp_path: Path, sessions: int) -> Path:
    lines = []
    for i in range(sessions):
        text = f"记住：第{i}号房间的钥匙在前台" if i % 2 else f"Remember that locker {i} is mine."
        lines.append(json.dumps({"session_id": f"s{i}", "role": "user", "content": text}))
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def extractor_jobs(db: Path) -> dict[str, int]:
    found = rows(db, "SELECT status, count(*) FROM jobs WHERE kind = 'extractor' GROUP BY 1")
    return dict(found)


def test_ingest_drain_that_finishes_exits_0_and_says_nothing_is_left(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with SimProvider() as sim:
        cfg = config_file(tmp_path, sim.base_url)
        proc = hlmem(
            "--db", db, "--config", cfg, "ingest", events(tmp_path, 4), "--drain", cwd=tmp_path
        )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "accepted 4, duplicate 0, rejected 0; failed 0, parked 0 (budget 0, outage 0)"
    )
    assert extractor_jobs(db) == {"done": 4}


def test_ingest_drain_exits_3_when_jobs_are_parked_for_budget(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    sessions = 100
    with SimProvider() as sim:
        # Room for a few calls' worst case (about 0.12 each at these prices), not a hundred.
        cfg = config_file(tmp_path, sim.base_url, daily_limit=1.0)
        args = ("--db", db, "--config", cfg, "ingest", events(tmp_path, sessions), "--drain")
        proc = hlmem(*args, "--json", cwd=tmp_path)
        jobs = extractor_jobs(db)
        stats = sim.stats()
        again = hlmem(*args, cwd=tmp_path)  # the same file: duplicates, and still no budget
    assert proc.returncode == 3, proc.stderr
    summary: dict[str, Any] = json.loads(proc.stdout)
    parked = jobs["parked"]
    assert 0 < jobs.get("done", 0) < 20 and jobs.get("done", 0) + parked == sessions
    assert summary["accepted"] == sessions
    assert summary["unfinished"] == {
        "failed": 0,
        "parked": parked,
        "parked_budget": parked,
        "parked_outage": 0,
    }
    assert f"work did not finish: failed 0, parked {parked} (budget {parked}, outage 0)" in (
        proc.stderr
    )
    assert stats.requests == jobs["done"]  # a call refused for budget is never sent
    # The second run resumes the parked jobs the budget left room for; the rest stay parked.
    still = extractor_jobs(db)["parked"]
    assert again.returncode == 3, again.stderr
    assert again.stdout.strip() == (
        f"accepted 0, duplicate {sessions}, rejected 0; "
        f"failed 0, parked {still} (budget {still}, outage 0)"
    )


def test_ingest_drain_exits_3_when_the_provider_is_down_and_worker_resumes_once_it_is_back(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    with SimProvider(settings=SimSettings(error_rate=1.0, error_status=503)) as sim:
        # Any trouble is an outage at once: the jobs park without a wait.
        cfg = config_file(tmp_path, sim.base_url, outage_park_s=0.001)
        args = ("--db", db, "--config", cfg)
        down = hlmem(*args, "ingest", events(tmp_path, 3), "--drain", cwd=tmp_path)
        assert down.returncode == 3, down.stderr
        assert down.stdout.strip() == (
            "accepted 3, duplicate 0, rejected 0; failed 0, parked 3 (budget 0, outage 3)"
        )
        assert extractor_jobs(db) == {"parked": 3}
        report = hlmem(*args, "ops", "report", cwd=tmp_path)
        assert "parked for a provider outage: 3 jobs (sim)" in report.stdout
        sim.update(error_rate=0.0)  # the provider is back: a new worker's probe finds it so
        back = hlmem(*args, "worker", "--drain", "--settle-s", "0.2", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert back.stdout.strip().endswith("; failed 0, parked 0 (budget 0, outage 0)")
    assert extractor_jobs(db) == {"done": 3}
    assert rows(db, "SELECT count(*) FROM claims") == [(3,)]


def test_worker_drain_exits_4_when_jobs_fail(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with SimProvider(settings=SimSettings(bad_json_rate=1.0)) as sim:
        cfg = config_file(tmp_path, sim.base_url)
        ingest = hlmem("--db", db, "--config", cfg, "ingest", events(tmp_path, 3), cwd=tmp_path)
        assert ingest.returncode == 0, ingest.stderr
        assert ingest.stdout.strip() == "accepted 3, duplicate 0, rejected 0"  # no drain here
        proc = hlmem(
            "--db",
            db,
            "--config",
            cfg,
            "worker",
            "--drain",
            "--flush",
            "--settle-s",
            "0.1",
            cwd=tmp_path,
        )
    assert proc.returncode == 4, proc.stderr
    assert proc.stdout.strip().endswith("; failed 3, parked 0 (budget 0, outage 0)")
    assert "work did not finish: failed 3" in proc.stderr
    assert extractor_jobs(db) == {"failed": 3}
    assert all(
        e.startswith("ExtractionFailed")
        for (e,) in rows(db, "SELECT last_error FROM jobs WHERE status = 'failed'")
    )
