from __future__ import annotations

from hlmem.cli import main

raise SystemExit(main())
