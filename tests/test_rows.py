"""Rows are read by column name, never by position (issue 21).

Every connection's ``row_factory`` is its SQLite module's ``Row`` (the stdlib's or sqlean's),
which indexes by column name; a positional read (``r[5]``, ``a, b = row``, ``dict(rows)``) breaks
silently when a statement's columns change. :func:`positional_reads` finds them statically in
``src/hlmem``: a value is a row when it comes from a statement (``fetchall``, ``fetchone``,
``execute_fetchall``, a cursor of ``conn.execute(sql)``), through assignments, loops,
comprehensions and ``rows[i]`` within one function. It follows no call (a row handed to another
function is not tracked) and leaves out PRAGMA results (SQLite's fixed shapes) and packed rows
(``fetch_packed``: JSON arrays, unpacked into records where they are read). The hot paths read
NamedTuple records built by ``hlmem.store.records``, which checks the columns against the fields.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

from hlmem.config import StoreConfig
from hlmem.errors import SchemaError
from hlmem.store import QUERIES, Store, connect_sync, records, sqlite_module

SRC = Path(__file__).resolve().parents[1] / "src" / "hlmem"
#: the places that read a row by position on purpose: (path under src/hlmem, function) -> why
ALLOWED = {
    ("store/db.py", "scalar"): "the one value of a one-column read, whatever its name",
    ("store/sync.py", "fetch_packed"): "the one packed value of a packed read",
}
_ROWS_CALLS = {"fetchall", "execute_fetchall"}
Env = dict[str, str]  # name -> "rows" (a list or cursor of rows) or "row"


class Finding(NamedTuple):
    path: str
    line: int
    function: str
    what: str


def _is_sql(node: ast.expr) -> bool:
    """Whether a ``.execute`` argument is SQL (a cursor comes back), not a query name (the
    store's ``Tx``/``SyncTx.execute`` returns a row count)."""
    if isinstance(node, ast.Subscript):  # QUERIES[name]
        return isinstance(node.value, ast.Name) and node.value.id.endswith("QUERIES")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return " " in node.value.strip()
    if isinstance(node, ast.JoinedStr):
        return True
    return isinstance(node, ast.Name) and node.id.lstrip("_").isupper()


def _is_pragma(call: ast.Call) -> bool:
    arg = call.args[0] if call.args else None
    if isinstance(arg, ast.JoinedStr) and arg.values:
        arg = arg.values[0]
    return (
        isinstance(arg, ast.Constant)
        and isinstance(arg.value, str)
        and arg.value.lstrip().upper().startswith("PRAGMA")
    )


def _position(node: ast.expr) -> bool:
    """A subscript that is a position: an int, a negative int, a slice."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int)
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return isinstance(node.operand.value, int)
    return isinstance(node, ast.Slice)


def _names(target: ast.AST) -> list[str]:
    """The names a target (or a function's parameters) binds."""
    return [
        n.id if isinstance(n, ast.Name) else n.arg
        for n in ast.walk(target)
        if isinstance(n, ast.Name | ast.arg)
    ]


class _Reads:
    """One module's positional row reads (module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.function = ""
        self.found: list[Finding] = []

    def flag(self, node: ast.AST, what: str) -> None:
        line = getattr(node, "lineno", 0)
        self.found.append(Finding(self.path, line, self.function, what))

    # --- what a value is ---------------------------------------------------------------------

    def kind(self, node: ast.expr | None, env: Env) -> str | None:
        if node is None:
            return None
        if isinstance(node, ast.Await):
            return self.kind(node.value, env)
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Call):
            return self._call_kind(node, env)
        if isinstance(node, ast.Subscript):
            inner = self.kind(node.value, env)
            return "row" if inner == "rows" and _position(node.slice) else None
        if isinstance(node, ast.IfExp):
            return self.kind(node.body, env) or self.kind(node.orelse, env)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.kind(node.left, env) or self.kind(node.right, env)
        if isinstance(node, ast.ListComp | ast.GeneratorExp) and isinstance(node.elt, ast.Name):
            gen = node.generators[0]
            same = isinstance(gen.target, ast.Name) and gen.target.id == node.elt.id
            return "rows" if same and self.kind(gen.iter, env) == "rows" else None
        return None

    def _call_kind(self, node: ast.Call, env: Env) -> str | None:
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in _ROWS_CALLS:
                on = func.value
                pragma = isinstance(on, ast.Call) and _is_pragma(on)  # conn.execute("PRAGMA…")…
                return None if pragma else "rows"
            if func.attr == "execute" and node.args and _is_sql(node.args[0]):
                return None if _is_pragma(node) else "rows"
            if func.attr == "fetchone" and isinstance(func.value, ast.Call):
                return "row" if self._call_kind(func.value, env) == "rows" else None
        if isinstance(func, ast.Name) and func.id in ("list", "sorted", "reversed") and node.args:
            return "rows" if self.kind(node.args[0], env) == "rows" else None
        return None

    # --- statements, in order ----------------------------------------------------------------

    def module(self, tree: ast.Module) -> None:
        self.block(tree.body, {})

    def block(self, body: list[ast.stmt], env: Env) -> None:
        for statement in body:
            self.statement(statement, env)

    def statement(self, node: ast.stmt, env: Env) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            outer, self.function = self.function, node.name
            inner = {k: v for k, v in env.items() if k not in _names(node.args)}
            if not any(node.name == f and self.path.endswith(p) for p, f in ALLOWED):
                self.block(node.body, inner)
            self.function = outer
        elif isinstance(node, ast.ClassDef):
            self.block(node.body, dict(env))
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            self._assign(node, env)
        elif isinstance(node, ast.For | ast.AsyncFor):
            self.expr(node.iter, env)
            self.bind(node.target, self.kind(node.iter, env), env, node)
            self.block(node.body, env)
            self.block(node.orelse, env)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    self.statement(child, env)
                elif isinstance(child, ast.expr):
                    self.expr(child, env)
                else:
                    for grandchild in ast.iter_child_nodes(child):
                        if isinstance(grandchild, ast.stmt):
                            self.statement(grandchild, env)
                        elif isinstance(grandchild, ast.expr):
                            self.expr(grandchild, env)

    def _assign(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign, env: Env) -> None:
        self.expr(node.value, env)
        kind = self.kind(node.value, env)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Tuple | ast.List) and kind == "row":
                self.flag(node, f"unpacked: {ast.unparse(node)[:80]}")
            for name in _names(target):
                env.pop(name, None)
            if isinstance(target, ast.Name) and kind is not None:
                env[target.id] = kind

    def bind(self, target: ast.expr, kind: str | None, env: Env, at: ast.AST) -> None:
        """A loop's target over a value of ``kind``."""
        for name in _names(target):
            env.pop(name, None)
        if kind != "rows":
            return
        if isinstance(target, ast.Name):
            env[target.id] = "row"
        else:
            self.flag(at, f"unpacked in a loop: {ast.unparse(target)[:80]}")

    # --- expressions ---------------------------------------------------------------------------

    def expr(self, node: ast.expr | None, env: Env) -> None:
        if node is None:
            return
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            local = dict(env)
            for i, gen in enumerate(node.generators):
                scope = env if i == 0 else local
                self.expr(gen.iter, scope)
                self.bind(gen.target, self.kind(gen.iter, scope), local, gen.iter)
                for condition in gen.ifs:
                    self.expr(condition, local)
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for part in parts:
                self.expr(part, local)
            return
        if isinstance(node, ast.Lambda):
            self.expr(node.body, {k: v for k, v in env.items() if k not in _names(node.args)})
            return
        if isinstance(node, ast.Subscript) and _position(node.slice):
            if self.kind(node.value, env) == "row":
                self.flag(node, f"by position: {ast.unparse(node)[:80]}")
        if isinstance(node, ast.Call):
            self._call(node, env)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, env)
            elif isinstance(child, ast.keyword):
                self.expr(child.value, env)

    def _call(self, node: ast.Call, env: Env) -> None:
        """``dict(rows)``; and a ``key`` function over rows (``sorted``, ``min``, ``max``,
        ``rows.sort``), whose argument is a row."""
        func = node.func
        if isinstance(func, ast.Name) and func.id == "dict" and node.args:
            if self.kind(node.args[0], env) == "rows":
                self.flag(node, f"pairs by position: {ast.unparse(node)[:80]}")
        if isinstance(func, ast.Name) and func.id in ("sorted", "min", "max") and node.args:
            over = self.kind(node.args[0], env)
        elif isinstance(func, ast.Attribute) and func.attr == "sort":
            over = self.kind(func.value, env)
        else:
            return
        for k in node.keywords:
            if k.arg == "key" and isinstance(k.value, ast.Lambda) and over == "rows":
                params = _names(k.value.args)
                inner = {n: v for n, v in env.items() if n not in params}
                inner.update(dict.fromkeys(params, "row"))
                self.expr(k.value.body, inner)


def positional_reads(source: str, path: str = "<source>") -> list[Finding]:
    reads = _Reads(path)
    reads.module(ast.parse(source, path))
    return reads.found


def test_no_row_is_read_by_position() -> None:
    files = [f for f in sorted(SRC.rglob("*.py"))]
    found = [
        f
        for file in files
        for f in positional_reads(file.read_text(encoding="utf-8"), str(file.relative_to(SRC)))
    ]
    assert found == []


@pytest.mark.parametrize(
    "code",
    [
        "def f(tx):\n    return {r[0] for r in tx.fetchall('q')}",
        "def f(tx):\n    rows = tx.fetchall('q')\n    return rows[0][1]",
        "async def f(s):\n    rows = await s.fetchall('q')\n    return [r[2] for r in rows if r]",
        "def f(conn):\n    return conn.execute(QUERIES['q']).fetchone()[0]",
        "def f(conn):\n    row = conn.execute('SELECT a, b FROM t').fetchone()\n    return row[1]",
        "def f(tx):\n    a, b = tx.fetchall('q')[0]\n    return a",
        "def f(tx):\n    for a, b in tx.fetchall('q'):\n        pass",
        "def f(tx):\n    return dict(tx.fetchall('q'))",
        "def f(tx):\n    rows = tx.fetchall('q')\n    return rows[-1][0]",
        "def f(tx):\n    rows = [r for r in tx.fetchall('q')]\n    rows.sort(key=lambda r: r[3])",
        "def f(conn):\n    for r in conn.execute(_TABLES):\n        print(r[0])",
    ],
)
def test_a_positional_read_is_found(code: str) -> None:
    assert len(positional_reads(code)) == 1, code


@pytest.mark.parametrize(
    "code",
    [
        "def f(tx):\n    return {r['id'] for r in tx.fetchall('q')}",
        "def f(tx):\n    rows = [(1, 2)]\n    tx.executemany('q', rows)\n    return rows[0][1]",
        "def f(tx):\n    n = tx.execute('insert_job', (1,))\n    return n",
        "def f(tx, rows):\n    return [r[0] for r in rows]",  # not a statement's rows here
        "def f(tx):\n    ids = {r['id'] for r in tx.fetchall('q')}\n    return [r[0] for r in X]",
        "def f(conn):\n    busy, frames, done = conn.execute('PRAGMA wal_checkpoint').fetchone()",
        "def f(c):\n    return [n for _, n, _ in c.execute('PRAGMA database_list').fetchall()]",
        "def f(reader):\n    return [r[0] for r in reader.fetch_packed('q')]",
        "def f(tx):\n    rows = tx.fetchall('q')\n    rows = [(1,)]\n    return rows[0][0]",
    ],
)
def test_a_read_by_name_or_of_another_value_is_not(code: str) -> None:
    assert positional_reads(code) == []


class _Pair(NamedTuple):
    id: str
    content: str


@pytest.mark.parametrize("module", ["auto", "stdlib"])
def test_records_check_the_columns_against_the_fields(tmp_path: Path, module: str) -> None:
    """A statement's rows become records read by field name, on both SQLite modules; rows
    whose columns are not the fields, in their order, are refused instead of read wrong."""
    import anyio

    async def make() -> None:
        await (await Store.open(tmp_path / "m.db", StoreConfig(sqlite_module=module))).close()

    anyio.run(make)
    cfg = StoreConfig(sqlite_module=module, load_vec=False)
    conn, _ = connect_sync(tmp_path / "m.db", cfg, sqlite_module(module))
    try:
        assert isinstance(conn.execute("SELECT 1 AS one").fetchone()["one"], int)
        conn.execute(
            QUERIES["insert_event"],
            ("e1", "ns", "s", "user", "我喜欢喝茶 / I like tea", "h", "t", "t", "user_direct",
             "interactive", "{}"),
        )  # fmt: skip
        rows = conn.execute(QUERIES["event_contents"], ('["e1"]',)).fetchall()
        (pair,) = records(_Pair, rows)
        assert (pair.id, pair.content) == ("e1", "我喜欢喝茶 / I like tea")
        swapped = conn.execute("SELECT content, id FROM events").fetchall()
        with pytest.raises(SchemaError, match="_Pair"):
            records(_Pair, swapped)
        assert records(_Pair, []) == []
    finally:
        conn.close()
