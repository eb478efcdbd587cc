"""``bench/embedding.py --embedder e5``: multilingual-e5-small's speed, memory and threads.

Four text sets, read at run time from ``../shared/data`` (``bench/eval_data.py``):

- ``short_zh``: MemDaily messages of 20-60 characters (chat turns);
- ``short_en``: LoCoMo turns of 20-60 characters;
- ``long_zh``: consecutive MemDaily messages joined by newlines (a chat log pasted whole),
  lengths spread evenly over 500-2000 characters (``--quick``: 500-1000);
- ``long_en``: LongMemEval oracle turns of 500-2000 characters (``--quick``: 500-1000).

Each thread setting runs in its own process (OpenMP's wait policy is fixed when its library
loads), one after the other, ``--rounds`` times alternating, so that a busy spell of the machine
falls on every setting. A setting is ``N`` (``E5Embedder(threads=N)``: ``embedder.threads``),
``0`` (the engine's default: every core) or ``Np`` (N threads with ``OMP_WAIT_POLICY=passive``
in the environment, which hlmem cannot set). In each process:

1. **Throughput** per set and batch size (1, 8, 32, 128, 256 for short texts; 1, 8, 32 for long
   ones, whose cost per token does not fall with the batch): whole batches, cycling over the
   set, until the cell's time budget (3 s) is spent, at least one batch: texts/s (wall), the
   process's CPU ms per text (every OpenMP thread included) and tokens per text (the model's
   own count). ``--quick``: 32 short and 2 long texts per set, batches 1, 8, 32 and 1, 0.3 s.
2. **Query latency**: ``embed_query`` of dataset questions (zh and en) one at a time: p50/p95
   wall ms and mean CPU ms.
3. **Memory**: RSS (``VmRSS``, with its anonymous and file-backed parts) before the model loads,
   after it loads, after the first vector, after every measurement, and with a second instance
   (the embedder stage and recall hold one each); peak (``VmHWM``).
4. **Beside an event loop**: the main thread runs pure-Python work units (the kind an event
   loop runs: JSON, hashing, dict building) for a few seconds alone, then again while a worker
   thread embeds short texts in batches of 32 without pause (as the embedder stage does):
   units/s alone and beside, texts/s beside; ``loop_share`` = beside / alone.

In the parent process, the local hashed embedder embeds the same sets in the same batches and
the same questions: the same-run baseline; the report gives e5's texts/s over the local one's.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import eval_data

from hlmem.lang import E5Embedder, LocalEmbedder

HERE = Path(__file__).resolve()
SHORT = (20, 60)
LONG = (500, 2000)
LONG_QUICK = (500, 1000)
SIZES = {"quick": {"short": 32, "long": 2}, "full": {"short": 256, "long": 32}}
BATCHES = {
    "quick": {"short": (1, 8, 32), "long": (1,)},
    "full": {"short": (1, 8, 32, 128, 256), "long": (1, 8, 32)},
}
CELL_BUDGET_S = {"quick": 0.3, "full": 3.0}
QUERIES = {"quick": 20, "full": 100}
LOOP_S = {"quick": 1.0, "full": 5.0}
CONTENTION_BATCH = 32


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def memory() -> dict[str, float]:
    """VmRSS, RssAnon, RssFile and VmHWM of this process, in MiB."""
    out: dict[str, float] = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * len(s) + 0.5) - 1))]


# --- texts ------------------------------------------------------------------------------------


def _between(texts: list[str], bounds: tuple[int, int], n: int) -> list[str]:
    lo, hi = bounds
    return list(dict.fromkeys(t for t in texts if lo <= len(t) <= hi))[:n]


def _joined(messages: list[str], bounds: tuple[int, int], n: int) -> list[str]:
    """Consecutive messages joined by newlines into ``n`` texts whose lengths spread evenly over
    ``bounds`` (a chat log pasted whole: MemDaily's messages are ~22 characters each)."""
    lo, hi = bounds
    targets = [lo + (hi - lo) * i // max(1, n - 1) for i in range(n)]
    out: list[str] = []
    text = ""
    for m in messages:
        text = f"{text}\n{m}" if text else m
        if len(text) >= targets[len(out)]:
            out.append(text[:hi])
            text = ""
            if len(out) == n:
                break
    return out


def text_sets(quick: bool) -> tuple[dict[str, list[str]], list[str]]:
    """The four sets and the questions (zh and en alternating)."""
    mode = "quick" if quick else "full"
    long = LONG_QUICK if quick else LONG
    locomo = eval_data.load_locomo()
    memdaily = eval_data.load_memdaily()
    oracle = eval_data.load_longmemeval(
        eval_data.DATA / "longmemeval" / "longmemeval_oracle.dev.json.gz"
    )
    n_short, n_long = SIZES[mode]["short"], SIZES[mode]["long"]
    sets = {
        "short_zh": _between(
            [t.text for c in memdaily.conversations for t in c.turns], SHORT, n_short
        ),
        "short_en": _between(
            [t.text for c in locomo.conversations for t in c.turns], SHORT, n_short
        ),
        "long_zh": _joined([t.text for c in memdaily.conversations for t in c.turns], long, n_long),
        "long_en": _between([t.text for c in oracle.conversations for t in c.turns], long, n_long),
    }
    zh = [q.text for c in memdaily.conversations for q in c.questions]
    en = [q.text for c in locomo.conversations for q in c.questions]
    n_q = QUERIES[mode]
    queries = [q for pair in zip(zh[: n_q // 2], en[: n_q // 2], strict=True) for q in pair]
    return sets, queries


def batches_of(name: str, mode: str) -> tuple[int, ...]:
    return BATCHES[mode]["short" if name.startswith("short") else "long"]


# --- one embedder -----------------------------------------------------------------------------


def throughput(embed: Any, texts: list[str], batch: int, budget_s: float) -> dict[str, float]:
    """Whole batches cycling over ``texts`` until ``budget_s`` has passed (at least one)."""
    done, start = 0, 0
    w0, c0 = time.perf_counter(), time.process_time()
    while True:
        chunk = [texts[(start + i) % len(texts)] for i in range(batch)]
        embed(chunk)
        done += batch
        start = (start + batch) % len(texts)
        if time.perf_counter() - w0 >= budget_s:
            break
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {
        "texts": done,
        "texts_per_s": round(done / wall, 2),
        "cpu_ms_per_text": round(cpu / done * 1000, 3),
    }


def query_latency(embed_query: Any, queries: list[str]) -> dict[str, float]:
    embed_query(queries[0])
    walls: list[float] = []
    c0 = time.process_time()
    for q in queries:
        w0 = time.perf_counter()
        embed_query(q)
        walls.append((time.perf_counter() - w0) * 1000)
    return {
        "queries": len(queries),
        "p50_ms": round(pct(walls, 0.5), 2),
        "p95_ms": round(pct(walls, 0.95), 2),
        "cpu_ms_mean": round((time.process_time() - c0) / len(queries) * 1000, 2),
    }


def _work_unit(n: int) -> int:
    """A slice of event-loop-like work: build a message, JSON it both ways, hash it."""
    msg = {"id": n, "session": f"s{n % 97}", "content": "记住：周五前交报告 and ship v1.2" * 3}
    raw = json.dumps(msg, ensure_ascii=False)
    back = json.loads(raw)
    return len(hashlib.blake2b(raw.encode()).digest()) + len(back)


def loop_units(seconds: float, stop: threading.Event | None = None) -> float:
    n, w0 = 0, time.perf_counter()
    while time.perf_counter() - w0 < seconds:
        for _ in range(200):
            _work_unit(n)
            n += 1
    if stop is not None:
        stop.set()
    return n / (time.perf_counter() - w0)


def beside_loop(model: E5Embedder, texts: list[str], seconds: float) -> dict[str, float]:
    """Main-thread work alone, then beside a worker thread that embeds without pause."""
    alone = loop_units(seconds)
    stop = threading.Event()
    embedded = [0]

    def embedder() -> None:
        i = 0
        while not stop.is_set():
            model.embed([texts[(i + k) % len(texts)] for k in range(CONTENTION_BATCH)])
            embedded[0] += CONTENTION_BATCH
            i += CONTENTION_BATCH

    worker = threading.Thread(target=embedder)
    w0 = time.perf_counter()
    worker.start()
    beside = loop_units(seconds, stop)
    worker.join()
    wall = time.perf_counter() - w0
    return {
        "loop_units_per_s_alone": round(alone),
        "loop_units_per_s_beside": round(beside),
        "loop_share": round(beside / alone, 3),
        "texts_per_s_beside": round(embedded[0] / wall, 2),
    }


def run_variant(path: Path, threads: int, quick: bool) -> dict[str, Any]:
    """One thread setting, in this process: what the module docstring lists."""
    mode = "quick" if quick else "full"
    data = json.loads(path.read_text(encoding="utf-8"))
    sets: dict[str, list[str]] = data["sets"]
    mem: dict[str, Any] = {"before_load": memory()}
    w0 = time.perf_counter()
    model = E5Embedder(threads=threads)
    mem["load_s"] = round(time.perf_counter() - w0, 3)
    mem["after_load"] = memory()
    model.embed(["warm up"])
    mem["after_first_vector"] = memory()
    tokens = {
        name: round(statistics.fmean(model._model.token_count(t) for t in texts), 1)
        for name, texts in sets.items()
    }
    speed: dict[str, dict[str, Any]] = {}
    for name, texts in sets.items():
        speed[name] = {}
        for batch in batches_of(name, mode):
            log(f"e5 threads={threads}: {name} batch {batch}")
            cell = throughput(model.embed, texts, batch, CELL_BUDGET_S[mode])
            cell["tokens_per_s"] = round(cell["texts_per_s"] * tokens[name], 1)
            speed[name][str(batch)] = cell
    queries = query_latency(model.embed_query, data["queries"])
    mem["after_measuring"] = memory()
    log(f"e5 threads={threads}: beside a busy main thread")
    beside = beside_loop(model, sets["short_en"] + sets["short_zh"], LOOP_S[mode])
    second = E5Embedder(threads=threads)
    second.embed(["warm up"])
    second.embed_query("warm up")
    mem["with_second_instance"] = memory()
    return {
        "threads": threads,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(default)"),
        "tokens_per_text": tokens,
        "speed": speed,
        "query": queries,
        "memory_mib": mem,
        "beside_loop": beside,
    }


def run_local(sets: dict[str, list[str]], queries: list[str], quick: bool) -> dict[str, Any]:
    """The same cells with the local hashed embedder: the baseline."""
    mode = "quick" if quick else "full"
    local = LocalEmbedder()
    local.embed([t for texts in sets.values() for t in texts[:2]])  # its caches
    speed = {
        name: {
            str(b): throughput(local.embed, texts, b, CELL_BUDGET_S[mode] / 2)
            for b in batches_of(name, mode)
        }
        for name, texts in sets.items()
    }
    return {"speed": speed, "query": query_latency(local.embed_query, queries)}


# --- the parent -------------------------------------------------------------------------------


def parse_setting(setting: str) -> tuple[int, dict[str, str]]:
    """``"2"`` -> (2, {}); ``"2p"`` -> (2, {"OMP_WAIT_POLICY": "passive"})."""
    if setting.endswith("p"):
        return int(setting[:-1]), {"OMP_WAIT_POLICY": "passive"}
    return int(setting), {}


def spawn(path: Path, setting: str, quick: bool) -> dict[str, Any]:
    threads, env = parse_setting(setting)
    cmd = [sys.executable, str(HERE.with_name("embedding.py")), "--embedder", "e5"]
    cmd += ["--child", str(path), "--child-threads", str(threads)] + (["--quick"] if quick else [])
    # the child's own OpenMP settings only: OMP_NUM_THREADS of this shell would mislead
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    done = subprocess.run(
        cmd, env=child_env | env, capture_output=True, text=True, check=False, timeout=3600
    )
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"e5 child {setting} failed ({done.returncode})")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per cell the best of the rounds (most texts/s, least CPU, lowest latency); memory and the
    event-loop figures of the round with the median loop share."""
    out = json.loads(json.dumps(runs[0]))
    for name, cells in out["speed"].items():
        for b, cell in cells.items():
            cell["texts_per_s"] = max(r["speed"][name][b]["texts_per_s"] for r in runs)
            cell["cpu_ms_per_text"] = min(r["speed"][name][b]["cpu_ms_per_text"] for r in runs)
            cell["tokens_per_s"] = max(r["speed"][name][b]["tokens_per_s"] for r in runs)
    for key in ("p50_ms", "p95_ms", "cpu_ms_mean"):
        out["query"][key] = min(r["query"][key] for r in runs)
    by_share = sorted(runs, key=lambda r: r["beside_loop"]["loop_share"])
    out["beside_loop"] = by_share[len(by_share) // 2]["beside_loop"]
    out["rounds"] = len(runs)
    return out


def main_e5(quick: bool, settings: list[str], rounds: int) -> dict[str, Any]:
    log("e5: loading the text sets")
    sets, queries = text_sets(quick)
    with tempfile.TemporaryDirectory(prefix="hlmem-e5-bench-") as tmp:
        path = Path(tmp) / "texts.json"
        path.write_text(json.dumps({"sets": sets, "queries": queries}), encoding="utf-8")
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in settings}
        local_runs = []
        for r in range(rounds):
            log(f"round {r + 1}/{rounds}: local baseline")
            local_runs.append(run_local(sets, queries, quick))
            for setting in settings:
                log(f"round {r + 1}/{rounds}: e5 threads {setting}")
                runs[setting].append(spawn(path, setting, quick))
    local = local_runs[0]
    for name, cells in local["speed"].items():
        for b, cell in cells.items():
            cell["texts_per_s"] = max(lr["speed"][name][b]["texts_per_s"] for lr in local_runs)
            cell["cpu_ms_per_text"] = min(
                lr["speed"][name][b]["cpu_ms_per_text"] for lr in local_runs
            )
    e5 = {s: best(rs) for s, rs in runs.items()}
    for result in e5.values():
        for name, cells in result["speed"].items():
            for b, cell in cells.items():
                cell["vs_local"] = round(
                    cell["texts_per_s"] / local["speed"][name][b]["texts_per_s"], 5
                )
    return {
        "meta": {
            "mode": "quick" if quick else "full",
            "settings": settings,
            "rounds": rounds,
            "cell_budget_s": CELL_BUDGET_S["quick" if quick else "full"],
            "loadavg_start": os.getloadavg()[0],
            "cpus": os.cpu_count(),
            "set_sizes": {n: len(t) for n, t in sets.items()},
            "set_mean_chars": {
                n: round(statistics.fmean(len(x) for x in t), 1) for n, t in sets.items()
            },
            "queries": len(queries),
            "query_mean_chars": round(statistics.fmean(len(q) for q in queries), 1),
        },
        "local": local,
        "e5": e5,
    }


def report(res: dict[str, Any]) -> list[str]:
    lines = []
    meta = res["meta"]
    lines.append(
        f"e5 vs local, {meta['mode']}, {meta['rounds']} round(s), best per cell; "
        f"load average {meta['loadavg_start']:.1f}; set sizes {meta['set_sizes']}, "
        f"mean chars {meta['set_mean_chars']}"
    )
    head = f"{'threads':<8} {'set':<9} {'tok':>5} " + "".join(
        f"{'b' + b:>18}" for b in ("1", "8", "32", "128", "256")
    )
    lines.append(head + "   (texts/s | CPU ms per text)")
    for setting, r in res["e5"].items():
        for name, cells in r["speed"].items():
            row = f"{setting:<8} {name:<9} {r['tokens_per_text'][name]:>5} "
            for b in ("1", "8", "32", "128", "256"):
                c = cells.get(b)
                row += f"{c['texts_per_s']:>9.1f} | {c['cpu_ms_per_text']:>5.0f}" if c else " " * 18
            lines.append(row)
    for name, cells in res["local"]["speed"].items():
        row = f"{'local':<8} {name:<9} {'':>5} "
        for b in ("1", "8", "32", "128", "256"):
            c = cells.get(b)
            row += f"{c['texts_per_s']:>9.0f} | {c['cpu_ms_per_text']:>5.2f}" if c else " " * 18
        lines.append(row)
    lines.append(
        f"{'':<8} {'query p50/p95 ms':<20} {'CPU ms':>8} {'RSS MiB load/peak/2 inst':>26} "
        f"{'loop share':>11} {'texts/s beside':>15}"
    )
    for setting, r in res["e5"].items():
        q, m, b = r["query"], r["memory_mib"], r["beside_loop"]
        lines.append(
            f"{setting:<8} {q['p50_ms']:>8.1f} / {q['p95_ms']:<9.1f} {q['cpu_ms_mean']:>8.1f} "
            f"{m['after_load']['VmRSS'] - m['before_load']['VmRSS']:>10.1f} "
            f"{m['after_measuring']['VmHWM']:>7.1f} {m['with_second_instance']['VmRSS']:>7.1f} "
            f"{b['loop_share']:>11.3f} {b['texts_per_s_beside']:>15.1f}"
        )
    q = res["local"]["query"]
    lines.append(f"{'local':<8} {q['p50_ms']:>8.2f} / {q['p95_ms']:<9.2f} {q['cpu_ms_mean']:>8.2f}")
    return lines
