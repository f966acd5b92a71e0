/**
 * The SDK's own tests: the generated-claim naming rule (the Rust SDK's
 * `generated_claim` tests, case for case), and the runner failing what must fail.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { generateName, utf8Length } from "../generated-claim.js";
import { runCaseFiles, type CaseFile } from "../cases/runner.js";

test("a short base is pod, claim and a trailing hyphen", () => {
  assert.equal(generateName("test-pod", "acme-resource"), "test-pod-acme-resource-");
});

test("a long base is cut in proportion without a trailing hyphen", () => {
  const name = generateName("a".repeat(40), "b".repeat(30));
  assert.equal(name, `${"a".repeat(31)}-${"b".repeat(23)}`);
  assert.equal(name.length, 55);
});

test("a base of exactly 57 is kept and one of 58 is cut", () => {
  assert.equal(generateName("p".repeat(27), "c".repeat(28)), `${"p".repeat(27)}-${"c".repeat(28)}-`);
  assert.equal(generateName("p".repeat(28), "c".repeat(28)), `${"p".repeat(27)}-${"c".repeat(27)}`);
});

test("a cut never exceeds the limit, in bytes, even for non-ASCII names", () => {
  for (let pod = 1; pod < 80; pod++) {
    for (let claim = 1; claim < 80; claim += 7) {
      assert.ok(generateName("p".repeat(pod), "c".repeat(claim)).length <= 57);
    }
  }
  assert.ok(utf8Length(generateName("é".repeat(40), "ß".repeat(30))) <= 57);
});

const pvcCase = (expect: unknown): CaseFile => ({
  path: "inline.yaml",
  cases: [
    {
      name: "live PVC gets the finalizer",
      decision: "decide",
      input: { pvc: { meta: { namespace: "ns", name: "data", uid: "u1", "resource-version": "5" } } },
      expect,
    },
  ],
});

const addsFinalizer = {
  pvcDecider: {
    decide: (input: { pvc: { name: string; uid: string; resourceVersion: string } }) => ({
      tag: "actions",
      val: [{ tag: "add-finalizer", val: { name: input.pvc.name, uid: input.pvc.uid, resourceVersion: input.pvc.resourceVersion } }],
    }),
  },
};

test("the runner passes a matching decision and fails a different one", () => {
  const right = { actions: [{ "add-finalizer": { name: "data", uid: "u1", "resource-version": "5" } }] };
  assert.equal(runCaseFiles("pvc-protection", addsFinalizer, [pvcCase(right)]).passed, 1);
  const wrong = runCaseFiles("pvc-protection", addsFinalizer, [pvcCase({ actions: [] })]);
  assert.equal(wrong.failed, 1);
  assert.match(wrong.lines.join("\n"), /decision differs/);
});

test("the runner names a malformed result and an unknown field", () => {
  const malformed = { pvcDecider: { decide: () => ({ tag: "actions", val: [{ tag: "add-finalizer", val: { name: "data" } }] }) } };
  const report = runCaseFiles("pvc-protection", malformed, [pvcCase({ actions: [] })]);
  assert.match(report.lines.join("\n"), /missing field `uid`/);
  const typo = runCaseFiles("pvc-protection", addsFinalizer, [pvcCase({ actoins: [] })]);
  assert.match(typo.lines.join("\n"), /unknown pvc-decision case `actoins`/);
});
