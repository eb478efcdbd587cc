#!/usr/bin/env python
"""Redaction benchmark: µs per text on real conversation, linear time on hostile input, and
what the detectors find in the phrasings table and in ordinary chat.

Plain script, outside the test run::

    .venv/bin/python bench/redaction.py --quick
    .venv/bin/python bench/redaction.py
    git show HEAD~3:src/hlmem/lang/redaction.py > /tmp/old_redaction.py
    .venv/bin/python bench/redaction.py --module /tmp/old_redaction.py   # another version

1. **Speed.** ``find_secrets`` over the ingest bench's ``ContentPool`` (zh + en, tool output
   included) and, when the evaluation data is there (``--data``, ``bench/eval_data.py``), LoCoMo
   turns, MemDaily messages (Chinese) and LongMemEval oracle turns (long English answers):
   µs per text, best of ``--rounds`` passes. Recall redacts its returned items' texts; the
   full-text bodies and the embedder's inputs of every event go through it too.
2. **Hostile input.** Texts made of one repeated unit ("密码是", "pw:", "pin 1234 ", …, and
   a random base64 run) at 10,000 and 100,000 characters: ms per ``redact`` and the ratio of
   the two, which stays near 10 when the work is linear.
3. **Detection.** Of ``tests/secret_phrasings.py``: the leak phrasings whose every secret is
   redacted, and the non-leak phrasings left untouched; of the real corpora: the texts in which
   anything was found (ordinary chat should have next to none).

Stdout: a table, then one JSON object on the last line. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import random
import string
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import eval_data
from ingest import ContentPool

import hlmem.lang.redaction

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from secret_phrasings import LEAKS, SAFE

UNITS = {
    "zh_cue_copula": "密码是",
    "pw_colon": "pw:",
    "password_space": "password ",
    "pin_number": "pin 1234 ",
    "value_before": "Tr0ub4dor&1 is my password ",
    "login_pair": "login alice/Tr0ub4dor&9 ",
    "verification": "verification code ",
    "zh_far": "密码我",
    "account": "account ",
    "quote": 'password "',
}


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load_module(path: str | None) -> ModuleType:
    """hlmem.lang.redaction, or the redaction module at ``path`` (e.g. an older version of it)."""
    if path is None:
        return hlmem.lang.redaction
    spec = importlib.util.spec_from_file_location("redaction_under_test", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def corpora(data: Path, quick: bool) -> dict[str, list[str]]:
    out = {"content_pool": [c for c, _ in ContentPool(seed=7, size=4000).items]}
    if not data.exists():
        log(f"no evaluation data at {data}: the content pool only")
        return out
    locomo = eval_data.load_locomo(data / "locomo" / "locomo_dev.json")
    out["locomo"] = [t.text for c in locomo.conversations for t in c.turns]
    memdaily = eval_data.load_memdaily(data / "memdaily" / "messages_and_QAs_dev")
    out["memdaily"] = [t.text for c in memdaily.conversations for t in c.turns]
    oracle = data / "longmemeval" / "longmemeval_oracle.dev.json.gz"
    if oracle.exists():
        with gzip.open(oracle, "rt", encoding="utf-8") as f:
            items = json.load(f)
        out["longmemeval_oracle"] = [
            turn["content"] for item in items for s in item["haystack_sessions"] for turn in s
        ]
    if quick:
        out = {name: texts[:3000] for name, texts in out.items()}
    return out


def best_us(fn: Callable[[str], Any], texts: list[str], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for text in texts:
            fn(text)
        best = min(best, time.perf_counter() - started)
    return best / len(texts) * 1e6


def hostile(mod: ModuleType, sizes: Sequence[int]) -> dict[str, dict[str, float]]:
    rng = random.Random(1)
    alphabet = string.ascii_letters + string.digits + "+/"
    units = {**UNITS, "base64": "".join(rng.choice(alphabet) for _ in range(4096))}
    out: dict[str, dict[str, float]] = {}
    for name, unit in units.items():
        row: dict[str, float] = {}
        for n in sizes:
            text = (unit * (n // len(unit) + 1))[:n]
            started = time.perf_counter()
            mod.redact(text)
            row[f"ms_{n}"] = round((time.perf_counter() - started) * 1000, 1)
        row["ratio"] = round(row[f"ms_{sizes[-1]}"] / max(row[f"ms_{sizes[0]}"], 1e-3), 1)
        out[name] = row
    return out


def detection(mod: ModuleType, texts: dict[str, list[str]]) -> dict[str, Any]:
    redacted = sum(all(s not in mod.redact(t) for s in ss) for t, ss in LEAKS)
    untouched = sum(mod.redact(t) == t for t, _ in SAFE)
    found = {name: sum(bool(mod.find_secrets(t)) for t in ts) for name, ts in texts.items()}
    return {
        "leaks_redacted": f"{redacted}/{len(LEAKS)}",
        "safe_untouched": f"{untouched}/{len(SAFE)}",
        "corpus_texts_with_a_hit": found,
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n", 1)[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="3,000 texts a corpus, 2 rounds")
    parser.add_argument("--rounds", type=int, default=5, help="passes over each corpus")
    parser.add_argument("--module", help="time this redaction.py instead of hlmem's")
    parser.add_argument("--data", type=Path, default=eval_data.DATA, help="evaluation data")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    mod = load_module(args.module)
    rounds = 2 if args.quick else args.rounds
    texts = corpora(args.data, args.quick)
    speed = {}
    for name, ts in texts.items():
        log(f"speed: {name} ({len(ts)} texts)")
        chars = sum(map(len, ts)) / len(ts)
        speed[name] = {
            "texts": len(ts),
            "mean_chars": round(chars, 1),
            "us_per_text": round(best_us(mod.find_secrets, ts, rounds), 1),
        }
    log("hostile input")
    worst = hostile(mod, (10_000, 100_000))
    found = detection(mod, texts)
    print(f"{'corpus':20s} {'texts':>7s} {'chars':>7s} {'µs/text':>8s}")
    for name, row in speed.items():
        print(f"{name:20s} {row['texts']:7d} {row['mean_chars']:7.1f} {row['us_per_text']:8.1f}")
    print(f"{'hostile unit':20s} {'10k ms':>8s} {'100k ms':>8s} {'ratio':>6s}")
    for name, row in worst.items():
        print(f"{name:20s} {row['ms_10000']:8.1f} {row['ms_100000']:8.1f} {row['ratio']:6.1f}")
    print(f"leaks redacted {found['leaks_redacted']}, safe untouched {found['safe_untouched']}")
    report = {
        "bench": "redaction",
        "module": args.module or "hlmem.lang.redaction",
        "quick": args.quick,
        "speed": speed,
        "hostile": worst,
        "detection": found,
    }
    print(json.dumps(report, ensure_ascii=False))


if __name__ == "__main__":
    main()
