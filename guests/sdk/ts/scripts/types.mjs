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
for (const world of ["pvc-protection", "resource-claim", "ephemeral-volume"]) {
  rmSync(join(out, world), { recursive: true, force: true });
  execFileSync(jco, ["types", wit, "-n", `rekon:reconcile/${world}@0.2.0`, "-o", join(out, world), "-q"], {
    stdio: "inherit",
  });
}
