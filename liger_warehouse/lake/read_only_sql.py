"""Which SQL only reads: ``liger-warehouse sql`` checks every statement it is given before it
runs any of them."""

from __future__ import annotations

import re

import duckdb

from liger_warehouse.lake.connect import SESSION_SETTINGS


class NotAQuery(ValueError):
    """SQL that could do more than read: a read-only session refuses it before it runs."""


# Leading whitespace and comments, then a word.
_WORD = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*([A-Za-z_]+)", re.DOTALL)
_EXPLAIN = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*explain(?:\s+analy[sz]e)?(?:\s*\([^)]*\))?", re.I | re.S)


def _words(sql: str, count: int) -> list[str]:
    words, rest = [], sql
    for _ in range(count):
        match = _WORD.match(rest)
        if not match:
            break
        words.append(match.group(1).lower())
        rest = rest[match.end() :]
    return words


def _is_read(statement: duckdb.Statement, con: duckdb.DuckDBPyConnection) -> bool:
    kind, text = statement.type, statement.query
    if kind == duckdb.StatementType.SELECT:
        return True
    if kind == duckdb.StatementType.MULTI:  # PIVOT with its values read from the data
        return _words(text, 1) in (["pivot"], ["unpivot"])
    if kind == duckdb.StatementType.EXPLAIN:  # only of what may run: EXPLAIN ANALYZE runs it
        explain = _EXPLAIN.match(text)
        inner = con.extract_statements(text[explain.end() :]) if explain else []
        return len(inner) == 1 and inner[0].type != duckdb.StatementType.EXPLAIN and _is_read(inner[0], con)
    if kind == duckdb.StatementType.SET:  # SET [SESSION|LOCAL|GLOBAL] name, RESET ... likewise
        words = _words(text, 3)
        name = words[2:3] if words[1:2] in (["session"], ["local"], ["global"]) else words[1:2]
        return name == ["variable"] or (bool(name) and name[0] in SESSION_SETTINGS)
    return False


def read_only_statements(sql: str, con: duckdb.DuckDBPyConnection) -> list[duckdb.Statement]:
    """The statements of ``sql`` if each one only reads: a query (SELECT, FROM, DESCRIBE, SHOW,
    SUMMARIZE, PIVOT), EXPLAIN of one, SET/RESET VARIABLE or of ``SESSION_SETTINGS``. Parsed by
    ``con``, the connection they are for (``duckdb.extract_statements`` would open DuckDB's
    default connection first, tens of milliseconds).

    Raises ``NotAQuery`` naming the first statement that is not, before anything runs, and
    ``duckdb.ParserException`` when ``sql`` does not parse.
    """
    statements = con.extract_statements(sql)
    for statement in statements:
        if not _is_read(statement, con):
            verb = " ".join(_words(statement.query, 2 if statement.type == duckdb.StatementType.SET else 1))
            raise NotAQuery(
                f"{verb.upper() or statement.type.name} is not a query, and this session is read-only: "
                "it runs queries, EXPLAIN, SET VARIABLE and SET memory_limit"
            )
    return statements
