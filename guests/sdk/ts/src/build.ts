#!/usr/bin/env node
/**
 * `rekon-guest-build --world W --wit DIR -o OUT.wasm GUEST.js`: componentizes a
 * compiled guest module with componentize-js, every WASI capability disabled
 * (random, stdio, clocks, http, fetch-event): the component imports nothing but
 * what its world imports, so the host links it without WASI.
 */
import { writeFile, rename } from "node:fs/promises";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { componentize } from "@bytecodealliance/componentize-js";
import { world } from "./cases/worlds.js";

const usage = "usage: rekon-guest-build --world WORLD --wit WIT_DIR -o OUT.wasm GUEST.js";

/** Every capability componentize-js can leave out. */
export const DISABLED_FEATURES = ["random", "stdio", "clocks", "http", "fetch-event"] as const;

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: { world: { type: "string" }, wit: { type: "string" }, out: { type: "string", short: "o" } },
    allowPositionals: true,
  });
  if (!values.world || !values.wit || !values.out || positionals.length !== 1) {
    console.error(usage);
    return 2;
  }
  const { witWorld } = world(values.world);
  const started = Date.now();
  const { component } = await componentize({
    sourcePath: resolve(positionals[0]!),
    witPath: resolve(values.wit),
    worldName: witWorld,
    disableFeatures: [...DISABLED_FEATURES],
  });
  // Written whole, then renamed: a watcher never sees half a module.
  const partial = `${values.out}.partial`;
  await writeFile(partial, component);
  await rename(partial, values.out);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`${values.out}: ${(component.byteLength / 1e6).toFixed(1)} MB in ${seconds} s`);
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: Error) => {
    console.error(`rekon-guest-build: ${err.stack ?? err.message}`);
    process.exitCode = 1;
  },
);
