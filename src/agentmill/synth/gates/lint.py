"""Structural lint: the candidate only names what exists.

Inside a sandbox over the candidate's own state (gym + seed SQL, built by the tool host, never in
host Python): every reference call names an existing tool and its arguments validate against the
tool's schema; every declared entity exists in the seeded state; every verifier query is one
read-only SELECT that parses (sqlglot) and names real tables and columns of its gym.
"""

from __future__ import annotations

import json

import jsonschema
import sqlglot
from sqlglot import exp

from agentmill.errors import SandboxError
from agentmill.synth.gates.base import GateContext, GateResult
from agentmill.tasks.tool_spec import DatabaseStateVerifier, ToolExecutionVerifier, ToolSpec
from agentmill.tools.sandboxed import task_sandbox
from agentmill.tools.state import ToolEnvError, prepare_tool_state, require_spec, tool_schemas
from agentmill.verify.sql_state import run_queries, stage_query_runner
from agentmill.verify.tool_lints import sql_problem

SCHEMA_SQL = (
    "SELECT m.name AS t, p.name AS c FROM sqlite_master m, pragma_table_info(m.name) p "
    "WHERE m.type IN ('table', 'view') ORDER BY m.name, p.cid"
)


def _literal(value) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def sql_name_problems(sql: str, columns: dict[str, set[str]]) -> list[str]:
    """Tables and columns `sql` names that the gym's schema lacks (aliases and CTEs resolved)."""
    tree = sqlglot.parse_one(sql, read="sqlite")
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    aliases = {a.alias for a in tree.find_all(exp.Alias) if a.alias}
    tables = {}
    problems = []
    for t in tree.find_all(exp.Table):
        if t.name in ctes or not t.name:
            continue
        if t.name not in columns:
            problems.append(f"no table '{t.name}'")
            continue
        tables[t.alias_or_name] = t.name
    for col in tree.find_all(exp.Column):
        name = col.name
        if not name or name == "*":
            continue
        if col.table:
            table = tables.get(col.table)
            if table is not None and name not in columns[table]:
                problems.append(f"no column '{table}.{name}'")
        elif name not in aliases and tables and not any(name in columns[t] for t in tables.values()):
            problems.append(f"no column '{name}' in {', '.join(sorted(set(tables.values())))}")
    return problems


class StructuralLint:
    name = "lint"

    async def run(self, ctx: GateContext) -> GateResult:
        task, body = ctx.task, ctx.candidate.body
        spec = require_spec(task)
        gyms = [g.name for g in spec.gyms]
        try:
            async with task_sandbox(task, builder=ctx.builder) as sb:
                try:
                    await prepare_tool_state(task, sb)
                except ToolEnvError as e:  # the seed SQL does not apply to the gym
                    return GateResult(
                        gate=self.name,
                        passed=False,
                        code="seed_error",
                        message=str(e)[-600:],
                        category="state_mismatch",
                        components=["seed_sql"],
                    )
                schemas = {s["name"]: s for s in await tool_schemas(task, sb)}
                spec_path = await stage_query_runner(task, sb)
                listing = await run_queries(sb, spec_path, [{"sql": SCHEMA_SQL, "gym": g} for g in gyms])
                columns = {g: _columns(r) for g, r in zip(gyms, listing)}
                problems = self._calls(body, schemas) or self._verifiers(spec, columns, gyms)
                if problems:
                    return problems
                return await self._entities(body, columns, sb, spec_path) or GateResult.ok(
                    self.name, tools=len(schemas), tables=sum(len(c) for c in columns.values())
                )
        except (SandboxError, OSError) as e:
            return GateResult(gate=self.name, passed=False, code="sandbox_error", message=str(e)[:500], fault="infra")

    def _calls(self, body, schemas: dict[str, dict]) -> GateResult | None:
        for i, call in enumerate(body.calls):
            schema = schemas.get(call.tool)
            if schema is None:
                return GateResult(
                    gate=self.name,
                    passed=False,
                    code="unknown_tool",
                    message=f"reference call {i}: no tool '{call.tool}' (tools: {', '.join(sorted(schemas))})",
                    category="impossible_workflow",
                    components=["calls"],
                )
            try:
                jsonschema.validate(call.arguments, schema.get("parameters") or {"type": "object"})
            except jsonschema.ValidationError as e:
                return GateResult(
                    gate=self.name,
                    passed=False,
                    code="bad_arguments",
                    message=f"reference call {i} ({call.tool}): {e.message}",
                    category="bad_reference",
                    components=["calls"],
                )
        return None

    def _verifiers(self, spec: ToolSpec, columns: dict[str, dict[str, set[str]]], gyms: list[str]) -> GateResult | None:
        tools = set()
        for v in spec.verifiers:
            if isinstance(v, ToolExecutionVerifier):
                tools |= set(v.validation_config.selected_tools)
                continue
            # the other two kinds (the discriminated union has three) each read with one query
            sql = v.validation_config.query if isinstance(v, DatabaseStateVerifier) else v.validation_config.sql_query
            gym = v.gym_name or gyms[0]
            if gym not in columns:
                return self._bad_sql(v.name, f"gym_name '{gym}' is not one of {gyms}")
            problem = sql_problem(sql)
            if problem is None:
                names = sql_name_problems(sql, columns[gym])
                problem = "; ".join(names) if names else None
            if problem:
                return self._bad_sql(v.name, problem)
        return None

    def _bad_sql(self, verifier: str, problem: str) -> GateResult:
        return GateResult(
            gate=self.name,
            passed=False,
            code="verifier_sql",
            message=f"verifier '{verifier}': {problem}",
            category="weak_verifier",
            components=["verifiers"],
            details={"verifier": verifier},
        )

    async def _entities(self, body, columns, sb, spec_path) -> GateResult | None:
        queries, refs = [], []
        for e in body.entities:
            gym = next((g for g, cols in columns.items() if e.column in cols.get(e.table, ())), None)
            if gym is None:
                return GateResult(
                    gate=self.name,
                    passed=False,
                    code="unknown_entity_column",
                    message=f"entity {e.table}.{e.column}: no such table or column",
                    category="state_mismatch",
                    components=["entities", "seed_sql"],
                )
            queries.append(
                {"sql": f'SELECT COUNT(*) AS n FROM "{e.table}" WHERE "{e.column}" = {_literal(e.value)}', "gym": gym}
            )
            refs.append(e)
        for e, res in zip(refs, await run_queries(sb, spec_path, queries)):
            if "error" in res or not res["rows"] or not res["rows"][0].get("n"):
                return GateResult(
                    gate=self.name,
                    passed=False,
                    code="missing_entity",
                    message=f"no {e.table} row with {e.column} = {json.dumps(e.value)} in the seeded state",
                    category="state_mismatch",
                    components=["seed_sql", "entities"],
                    details={"entity": e.model_dump()},
                )
        return None


def _columns(result: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for row in result.get("rows", []):
        out.setdefault(row["t"], set()).add(row["c"])
    return out
