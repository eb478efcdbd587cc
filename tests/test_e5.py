"""multilingual-e5-small in process: ``embedder.threads`` caps the engine's OpenMP threads.

OpenMP keeps its thread count per calling thread, and the embedder stage calls from whichever
worker thread anyio hands it, so :class:`~hlmem.lang.E5Embedder` sets the count before every
call. The setting changes how the engine spreads its work, never the vectors.
"""

from __future__ import annotations

import threading

import numpy as np

from hlmem.config import EmbedderConfig
from hlmem.index import in_process_embedder
from hlmem.lang import E5Embedder

TEXTS = ["我的猫叫小白", "I moved to Berlin last spring", "部署 v1.3 之前先跑迁移脚本"]


def threads_seen_by_a_new_thread(model: E5Embedder) -> int:
    """Embed on a fresh thread, then ask OpenMP, on that thread, how many threads it would use."""
    seen: list[int] = []

    def run() -> None:
        model.embed(TEXTS)
        seen.append(int(model._model._lib.omp_get_max_threads()))

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    return seen[0]


def test_each_call_runs_with_the_configured_threads_on_any_thread() -> None:
    one = E5Embedder(threads=1)
    two = E5Embedder(threads=2)
    assert threads_seen_by_a_new_thread(one) == 1
    assert threads_seen_by_a_new_thread(two) == 2


def test_the_thread_count_never_changes_the_vectors() -> None:
    default, one, two = E5Embedder(), E5Embedder(threads=1), E5Embedder(threads=2)
    np.testing.assert_allclose(one.embed(TEXTS), default.embed(TEXTS), atol=1e-6)
    np.testing.assert_allclose(two.embed(TEXTS), one.embed(TEXTS), atol=1e-6)
    np.testing.assert_allclose(two.embed_query(TEXTS[0]), one.embed_query(TEXTS[0]), atol=1e-6)


def test_the_config_sets_the_threads_and_one_is_the_default() -> None:
    assert EmbedderConfig().threads == 1
    model = in_process_embedder(EmbedderConfig(provider="e5", threads=2))
    assert isinstance(model, E5Embedder) and model.threads == 2
