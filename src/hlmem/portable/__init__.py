"""What leaves a store and comes back: export, import, backup and restore.

The ``hlmem-export`` JSONL format: its records (``records``), writer (``export``), validation and
reading (``reader``) and the importer (``importer``); online backup and restore that honours
later forgets (``backup``).
"""

from __future__ import annotations

from hlmem.portable.backups import BackupResult, backup, restore
from hlmem.portable.export import export_sync
from hlmem.portable.importer import Importer
from hlmem.portable.records import ExportSummary, ImportSummary

__all__ = [
    "BackupResult",
    "ExportSummary",
    "ImportSummary",
    "Importer",
    "backup",
    "export_sync",
    "restore",
]
