"""``python -m hlmem.store > src/hlmem/sql/schema.sql``: the schema all migrations yield."""

from __future__ import annotations

import sys

import anyio

from hlmem.store.db import fresh_schema

sys.stdout.write(anyio.run(fresh_schema))
