#!/usr/bin/env node
/**
 * `rekon-guest-cases --world W --guest GUEST.js CASES...`: runs case files
 * against a compiled guest module in Node. Exit status 1 when a case fails.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { caseFilePaths, readCaseFile, runCaseFiles, type GuestModule } from "./runner.js";
import { world } from "./worlds.js";

const usage = "usage: rekon-guest-cases --world WORLD --guest GUEST.js CASES_DIR_OR_FILE...";

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: { world: { type: "string" }, guest: { type: "string" } },
    allowPositionals: true,
  });
  if (!values.world || !values.guest || positionals.length === 0) {
    console.error(usage);
    return 2;
  }
  world(values.world);
  const guest = (await import(pathToFileURL(resolve(values.guest)).href)) as GuestModule;
  const files = caseFilePaths(positionals).map(readCaseFile);
  const report = runCaseFiles(values.world, guest, files);
  for (const line of report.lines) console.log(line);
  console.log(`${report.passed} passed, ${report.failed} failed`);
  return report.failed === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: Error) => {
    console.error(`rekon-guest-cases: ${err.message}`);
    process.exitCode = 2;
  },
);
