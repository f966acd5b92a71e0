/**
 * Runs case files (the `rekon test` format) against a guest module natively in
 * Node, as the Rust guests' logic tests do, so the files and the logic are known
 * good before the component is built:
 *
 * ```yaml
 * cases:
 *   - name: ...
 *     decision: decide        # decide | decide-pod | decide-claim
 *     input: {...}            # the host's model, serde form
 *     expect: {...}
 * ```
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { parse } from "yaml";
import { decode, encode, show } from "./schema.js";
import { world as worldNamed, type Decision } from "./worlds.js";

export interface Case {
  name: string;
  decision: string;
  input: unknown;
  expect: unknown;
}

export interface CaseFile {
  path: string;
  cases: Case[];
}

/** The outcome of one run: a line per case, as `rekon test` prints them. */
export interface Report {
  passed: number;
  failed: number;
  lines: string[];
  /** Cases per decision name. */
  counts: Record<string, number>;
}

/** Every `*.yaml` / `*.yml` under `paths` (directories searched recursively), sorted. */
export function caseFilePaths(paths: string[]): string[] {
  const files: string[] = [];
  const visit = (path: string): void => {
    if (statSync(path).isDirectory()) {
      for (const entry of readdirSync(path).sort()) visit(join(path, entry));
    } else if (/\.ya?ml$/.test(path)) {
      files.push(path);
    }
  };
  for (const path of paths) visit(path);
  if (files.length === 0) throw new Error(`no case files (*.yaml, *.yml) in ${paths.join(", ")}`);
  return files;
}

/** Parses one case file; throws naming the file on bad input. */
export function readCaseFile(path: string): CaseFile {
  const doc: unknown = parse(readFileSync(path, "utf8"));
  const fail = (why: string): never => {
    throw new Error(`${path}: ${why}`);
  };
  if (typeof doc !== "object" || doc === null || !Array.isArray((doc as { cases?: unknown }).cases))
    fail("expected a map with a `cases` list");
  const extra = Object.keys(doc as object).filter((key) => key !== "cases");
  if (extra.length > 0) fail(`unknown field \`${extra[0]}\``);
  const cases = (doc as { cases: unknown[] }).cases.map((raw, i): Case => {
    if (typeof raw !== "object" || raw === null) fail(`case ${i}: expected a map`);
    const c = raw as Record<string, unknown>;
    for (const key of Object.keys(c))
      if (!["name", "decision", "input", "expect"].includes(key)) fail(`case ${i}: unknown field \`${key}\``);
    if (typeof c.name !== "string") fail(`case ${i}: missing \`name\``);
    if (typeof c.decision !== "string") fail(`case ${c.name as string}: missing \`decision\``);
    return { name: c.name as string, decision: c.decision as string, input: c.input ?? null, expect: c.expect ?? null };
  });
  return { path, cases };
}

/** The guest module's exported interface, with its functions. */
export type GuestModule = Record<string, unknown>;

/** Runs one case; `Err` text explains a failure. */
export function runCase(worldName: string, guest: GuestModule, c: Case): string | undefined {
  const world = worldNamed(worldName);
  const decision: Decision | undefined = world.decisions[c.decision];
  if (!decision)
    return `unknown decision \`${c.decision}\`: a ${worldName} guest exports ${Object.keys(world.decisions).join(", ")}`;
  const exported = guest[world.exportName] as Record<string, unknown> | undefined;
  const fn = exported?.[decision.fn];
  if (typeof fn !== "function") return `the guest module exports no \`${world.exportName}.${decision.fn}\``;
  let input: unknown;
  let expected: unknown;
  try {
    input = decision.project(decode(decision.input, c.input, "input") as never);
  } catch (e) {
    return `input is not a valid \`${c.decision}\` input: ${(e as Error).message}`;
  }
  try {
    expected = decode(decision.result, c.expect, "expect");
  } catch (e) {
    return `expect is not a valid \`${c.decision}\` result: ${(e as Error).message}`;
  }
  let written: unknown;
  try {
    const actual = (fn as (input: unknown) => unknown).call(exported, input);
    written = encode(decision.result, actual, "result");
  } catch (e) {
    return `the decision failed: ${(e as Error).stack ?? String(e)}`;
  }
  if (isDeepStrictEqual(decode(decision.result, written), expected)) return undefined;
  return `decision differs:\n  expected ${show(c.expect)}\n  actual   ${show(written)}`;
}

/** Runs every case of `files`; duplicate case names are failures. */
export function runCaseFiles(worldName: string, guest: GuestModule, files: CaseFile[]): Report {
  const report: Report = { passed: 0, failed: 0, lines: [], counts: {} };
  const names = new Set<string>();
  for (const file of files) {
    for (const c of file.cases) {
      report.counts[c.decision] = (report.counts[c.decision] ?? 0) + 1;
      let why = runCase(worldName, guest, c);
      if (names.has(c.name)) why = `duplicate case name ${JSON.stringify(c.name)}`;
      names.add(c.name);
      if (why === undefined) {
        report.passed += 1;
        report.lines.push(`ok   ${file.path}: ${c.name}`);
      } else {
        report.failed += 1;
        report.lines.push(`FAIL ${file.path}: ${c.name}`, ...why.split("\n").map((line) => `    ${line}`));
      }
    }
  }
  return report;
}
