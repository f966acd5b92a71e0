/**
 * The controller world's helpers and its case runner: projected objects read
 * as the Rust SDK's `Object` reads them, JSON text compared by value, and the
 * runner failing what must fail.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  actions,
  get,
  kind,
  list,
  read,
  readResult,
  requeueAfter,
  updateChild,
} from "../controller.js";
import { KubeObject, timestamp } from "../object.js";
import { runCaseFiles, type CaseFile } from "../cases/runner.js";
import type { ctl } from "../types.js";

const job = KubeObject.parse(
  JSON.stringify({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      namespace: "ns",
      name: "pi",
      uid: "u1",
      resourceVersion: "7",
      deletionTimestamp: "2026-11-26T00:00:00Z",
      finalizers: ["x/y"],
      labels: { app: "pi" },
      ownerReferences: [{ apiVersion: "v1", kind: "Foo", name: "a", uid: "o1", controller: true }],
    },
    spec: { ttlSecondsAfterFinished: 100, parallelism: 1.5 },
    status: { conditions: [{ type: "Complete", status: "True" }, { type: "Broken" }] },
  }),
);

test("a projected object reads its metadata, paths and conditions", () => {
  assert.equal(job.name, "pi");
  assert.equal(job.namespace, "ns");
  assert.equal(job.uid, "u1");
  assert.equal(job.resourceVersion, "7");
  assert.equal(job.deleting, true);
  assert.deepEqual(job.finalizers, ["x/y"]);
  assert.ok(job.hasFinalizer("x/y") && !job.hasFinalizer("x/z"));
  assert.equal(job.label("app"), "pi");
  assert.ok(job.isControlledBy("o1") && !job.isControlledBy("u1"));
  assert.equal(job.int("spec.ttlSecondsAfterFinished"), 100);
  assert.equal(job.int("spec.parallelism"), undefined, "not an integer");
  assert.equal(job.get("spec.missing.deeper"), undefined);
  assert.equal(job.str("spec.ttlSecondsAfterFinished"), undefined, "not a string");
  assert.deepEqual(
    job.conditions.map((c) => c.type),
    ["Complete"],
    "a condition without a status is not one",
  );
  assert.ok(job.isTrue("Complete") && !job.isTrue("Failed"));
});

test("an object with nothing set reads as empty, and bad text is an error", () => {
  const bare = KubeObject.parse("{}");
  assert.equal(bare.name, "");
  assert.equal(bare.deleting, false);
  assert.deepEqual(bare.finalizers, []);
  assert.deepEqual(bare.conditions, []);
  assert.equal(bare.controllerRef, undefined);
  assert.throws(() => KubeObject.parse("[1]"), /not a JSON object/);
  assert.throws(() => KubeObject.parse(""), /not JSON/);
});

test("timestamps are RFC 3339 only", () => {
  assert.equal(timestamp("2026-11-26T00:00:01Z"), Date.UTC(2026, 10, 26, 0, 0, 1));
  assert.equal(timestamp("2026-11-26T01:00:00+01:00"), Date.UTC(2026, 10, 26));
  assert.equal(timestamp("2026-11-26T00:00:00.5Z"), Date.UTC(2026, 10, 26) + 500);
  // The host's `now`: milliseconds, always three digits.
  assert.equal(timestamp("2026-11-26T00:00:59.750Z"), Date.UTC(2026, 10, 26, 0, 0, 59) + 750);
  assert.equal(timestamp("2026-11-26T00:00:00.001Z"), Date.UTC(2026, 10, 26) + 1);
  for (const bad of [undefined, "", "yesterday", "2026-11-26", "1764115200"]) assert.equal(timestamp(bad), undefined);
});

test("read results are found by their request, and absent until asked", () => {
  const JOB = kind("batch", "v1", "Job");
  const input: ctl.Input = {
    primary: "{}",
    related: [],
    reads: [
      { request: list(JOB, "app=pi"), objects: ['{"metadata":{"name":"listed"}}'] },
      { request: get(JOB, "pi"), objects: ['{"metadata":{"name":"pi"}}'] },
    ],
    now: "2026-11-26T00:00:00Z",
  };
  assert.deepEqual(readResult(input, get(JOB, "pi"))?.map((o) => o.name), ["pi"]);
  assert.deepEqual(readResult(input, list(JOB, "app=pi"))?.map((o) => o.name), ["listed"]);
  assert.equal(readResult(input, get(JOB, "other")), undefined);
  assert.equal(readResult(input, list(JOB)), undefined);
  assert.equal(readResult(input, get(kind("", "v1", "Job"), "pi")), undefined, "another group");
});

test("builders make jco's values: whole milliseconds, JSON text", () => {
  assert.deepEqual(requeueAfter(1500.2), { tag: "requeue-after", val: 1501n });
  assert.deepEqual(requeueAfter(-3), { tag: "requeue-after", val: 0n });
  const deployment = kind("apps", "v1", "Deployment");
  const child = KubeObject.parse('{"metadata":{"name":"web","resourceVersion":"4"}}');
  assert.deepEqual(updateChild(deployment, child, { spec: { replicas: 2 } }), {
    tag: "update-child",
    val: { kind: deployment, name: "web", resourceVersion: "4", patch: '{"spec":{"replicas":2}}' },
  });
  assert.deepEqual(read(get(deployment, "web")), { tag: "read", val: [get(deployment, "web")] });
  assert.deepEqual(actions(), { tag: "actions", val: [] });
});

// A guest that patches the status it is told to (in the key order it likes).
const patcher = {
  controllerDecider: {
    describe: (): ctl.Description => ({
      name: "patcher",
      primary: kind("", "v1", "ConfigMap"),
      primaryFields: [],
      watches: [{ kind: kind("apps", "v1", "Deployment"), mapping: { tag: "owner" }, fields: [] }],
      scope: {
        finalizers: [],
        labels: [],
        annotations: [],
        statusFields: ["a", "b"],
        deletePrimary: false,
        children: [],
        eventReasons: [],
        reads: [],
      },
    }),
    decide: (input: ctl.Input): ctl.Decision =>
      actions(
        { tag: "patch-status", val: JSON.stringify({ b: [1, { y: 2, x: 1 }], a: "z" }) },
        requeueAfter(JSON.parse(input.primary).metadata.wait),
      ),
  },
};

const cases = (expect: unknown, decision = "decide", input: unknown = { primary: { metadata: { wait: 5 } } }): CaseFile => ({
  path: "inline.yaml",
  cases: [{ name: "case", decision, input, expect }],
});

test("JSON text compares by value whatever the key order or writing", () => {
  const expect = { actions: [{ "patch-status": { a: "z", b: [1, { x: 1, y: 2 }] } }, { "requeue-after": 5 }] };
  assert.equal(runCaseFiles("controller", patcher, [cases(expect)]).passed, 1);
  const asText = { actions: [{ "patch-status": '{"b":[1,{"x":1,"y":2}],"a":"z"}' }, { "requeue-after": 5 }] };
  assert.equal(runCaseFiles("controller", patcher, [cases(asText)]).passed, 1);
  const other = { actions: [{ "patch-status": { a: "z", b: [{ x: 1, y: 2 }, 1] } }, { "requeue-after": 5 }] };
  const report = runCaseFiles("controller", patcher, [cases(other)]);
  assert.equal(report.failed, 1);
  assert.match(report.lines.join("\n"), /decision differs/);
});

test("describe takes no input and omitted description fields are their defaults", () => {
  const expect = {
    name: "patcher",
    primary: { version: "v1", kind: "ConfigMap" },
    watches: [{ kind: { group: "apps", version: "v1", kind: "Deployment" }, mapping: "owner" }],
    scope: { "status-fields": ["a", "b"] },
  };
  assert.equal(runCaseFiles("controller", patcher, [cases(expect, "describe", null)]).passed, 1);
  const withInput = runCaseFiles("controller", patcher, [cases(expect, "describe", { primary: {} })]);
  assert.match(withInput.lines.join("\n"), /expected no value/);
  const noMapping = { ...expect, watches: [{ kind: { version: "v1", kind: "Pod" } }] };
  const report = runCaseFiles("controller", patcher, [cases(noMapping, "describe", null)]);
  assert.match(report.lines.join("\n"), /missing field `mapping` of watch/);
});

test("a malformed requeue and an unknown action are named", () => {
  const negative = cases({ actions: [{ "requeue-after": -1 }] });
  assert.match(runCaseFiles("controller", patcher, [negative]).lines.join("\n"), /unsigned 64-bit/);
  const unknown = cases({ actions: [{ "patch-spec": {} }] });
  assert.match(runCaseFiles("controller", patcher, [unknown]).lines.join("\n"), /unknown action case `patch-spec`/);
});
