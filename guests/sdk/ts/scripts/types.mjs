// Regenerates generated/<world>/ from the WIT contract with `jco types`.
// WIT directory: $REKON_WIT_DIR, else ../../../wit (this SDK inside the rekon repository).
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const sdk = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const wit = resolve(process.env.REKON_WIT_DIR ?? join(sdk, "../../../wit"));
const out = resolve(process.argv[2] ?? join(sdk, "generated"));
const jco = join(sdk, "node_modules/.bin/jco");
// Each world at its version: the 0.2.0 worlds (wit/deps/rekon-reconcile@0.2.0)
// and the generic controller world (0.3.0, the root of wit/).
const worlds = [
  ["pvc-protection", "0.2.0"],
  ["resource-claim", "0.2.0"],
  ["ephemeral-volume", "0.2.0"],
  ["controller", "0.3.0"],
];
for (const [world, version] of worlds) {
  rmSync(join(out, world), { recursive: true, force: true });
  execFileSync(jco, ["types", wit, "-n", `rekon:reconcile/${world}@${version}`, "-o", join(out, world), "-q"], {
    stdio: "inherit",
  });
}
