/**
 * A small schema of WIT types, used to read case files (the model's serde form:
 * kebab-case fields, `{case: payload}` or `case` for variants) into the values
 * jco passes a guest (camelCase fields, `{tag, val}` variants, `undefined` for
 * `none`, `bigint` for s64 and u64), and to write a guest's values back for
 * comparison. `json` is a string of JSON text (the controller world's objects):
 * case files write it as a YAML value, as the Rust SDK's `json_text` does.
 */

export type Schema =
  | { kind: "string" }
  | { kind: "bool" }
  | { kind: "s64" }
  | { kind: "u64" }
  | { kind: "json" }
  | { kind: "unit" }
  | { kind: "list"; of: Schema }
  | { kind: "option"; of: Schema }
  | { kind: "tuple"; of: Schema[] }
  | { kind: "enum"; name: string; cases: string[] }
  | { kind: "record"; name: string; fields: [string, Schema][]; defaults: boolean; required: string[] }
  | { kind: "variant"; name: string; cases: [string, Schema | null][] };

export const string: Schema = { kind: "string" };
export const bool: Schema = { kind: "bool" };
export const s64: Schema = { kind: "s64" };
export const u64: Schema = { kind: "u64" };
/** JSON text; a case file writes the value itself (or the text as a string). */
export const json: Schema = { kind: "json" };
/** No value (`null` in a case file): the input of a function without parameters. */
export const unit: Schema = { kind: "unit" };
export const list = (of: Schema): Schema => ({ kind: "list", of });
export const option = (of: Schema): Schema => ({ kind: "option", of });
export const tuple = (...of: Schema[]): Schema => ({ kind: "tuple", of });
export const enumOf = (name: string, cases: string[]): Schema => ({ kind: "enum", name, cases });
/**
 * A record whose missing fields take their default (serde `#[serde(default)]`),
 * but for the `required` ones.
 */
export const record = (name: string, fields: Record<string, Schema>, required: string[] = []): Schema => ({
  kind: "record",
  name,
  fields: Object.entries(fields),
  defaults: true,
  required,
});
/** A record whose fields are required, except options (`none` when missing). */
export const strictRecord = (name: string, fields: Record<string, Schema>): Schema => ({
  kind: "record",
  name,
  fields: Object.entries(fields),
  defaults: false,
  required: [],
});
export const variant = (name: string, cases: Record<string, Schema | null>): Schema => ({
  kind: "variant",
  name,
  cases: Object.entries(cases),
});

/** A case file value that does not fit its schema; `path` says where. */
export class SchemaError extends Error {
  constructor(path: string, message: string) {
    super(`${path || "(top)"}: ${message}`);
  }
}

/** `resource-version` → `resourceVersion`, as jco names fields. */
export function camel(kebab: string): string {
  return kebab.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The value serde's `Default` gives a missing field of this schema. */
function defaultOf(schema: Schema, path: string): unknown {
  switch (schema.kind) {
    case "string":
      return "";
    case "bool":
      return false;
    case "s64":
    case "u64":
      return 0n;
    case "json":
      return "";
    case "unit":
      return undefined;
    case "list":
      return [];
    case "option":
      return undefined;
    case "tuple":
      return schema.of.map((s, i) => defaultOf(s, `${path}[${i}]`));
    case "enum":
      return schema.cases[0];
    case "record":
      return decode(schema, {}, path);
    case "variant":
      throw new SchemaError(path, `missing ${schema.name} (no default)`);
  }
}

/** Reads a case-file value (serde form) as the value jco would hand the guest. */
export function decode(schema: Schema, value: unknown, path = ""): unknown {
  switch (schema.kind) {
    case "string":
      if (typeof value !== "string") throw new SchemaError(path, `expected a string, got ${show(value)}`);
      return value;
    case "bool":
      if (typeof value !== "boolean") throw new SchemaError(path, `expected true or false, got ${show(value)}`);
      return value;
    case "s64":
      if (typeof value === "bigint") return value;
      if (typeof value !== "number" || !Number.isInteger(value))
        throw new SchemaError(path, `expected an integer, got ${show(value)}`);
      return BigInt(value);
    case "u64": {
      const n = decode(s64, value, path) as bigint;
      if (n < 0n || n >= 1n << 64n) throw new SchemaError(path, `expected an unsigned 64-bit integer, got ${show(value)}`);
      return n;
    }
    case "json":
      return jsonText(value);
    case "unit":
      if (value !== null && value !== undefined) throw new SchemaError(path, `expected no value (null), got ${show(value)}`);
      return undefined;
    case "list":
      if (!Array.isArray(value)) throw new SchemaError(path, `expected a list, got ${show(value)}`);
      return value.map((item, i) => decode(schema.of, item, `${path}[${i}]`));
    case "option":
      return value === null || value === undefined ? undefined : decode(schema.of, value, path);
    case "tuple":
      if (!Array.isArray(value) || value.length !== schema.of.length)
        throw new SchemaError(path, `expected a list of ${schema.of.length}, got ${show(value)}`);
      return schema.of.map((s, i) => decode(s, value[i], `${path}[${i}]`));
    case "enum":
      if (typeof value !== "string" || !schema.cases.includes(value))
        throw new SchemaError(path, `expected a ${schema.name} (${schema.cases.join(", ")}), got ${show(value)}`);
      return value;
    case "record":
      return decodeRecord(schema, value, path);
    case "variant":
      return decodeVariant(schema, value, path);
  }
}

function decodeRecord(schema: Extract<Schema, { kind: "record" }>, value: unknown, path: string): unknown {
  if (value === null && schema.defaults) value = {};
  if (!isObject(value)) throw new SchemaError(path, `expected a ${schema.name} (a map), got ${show(value)}`);
  const known = new Set(schema.fields.map(([name]) => name));
  for (const key of Object.keys(value)) {
    if (!known.has(key))
      throw new SchemaError(path, `unknown field \`${key}\` of ${schema.name} (fields: ${[...known].join(", ")})`);
  }
  const out: Record<string, unknown> = {};
  for (const [name, field] of schema.fields) {
    const at = path ? `${path}.${name}` : name;
    if (name in value) out[camel(name)] = decode(field, value[name], at);
    else if ((schema.defaults && !schema.required.includes(name)) || field.kind === "option")
      out[camel(name)] = defaultOf(field, at);
    else throw new SchemaError(path, `missing field \`${name}\` of ${schema.name}`);
  }
  return out;
}

function decodeVariant(schema: Extract<Schema, { kind: "variant" }>, value: unknown, path: string): unknown {
  const names = schema.cases.map(([name]) => name).join(", ");
  let tag: string;
  let payload: unknown;
  if (typeof value === "string") tag = value;
  else if (isObject(value) && Object.keys(value).length === 1) [tag, payload] = Object.entries(value)[0]!;
  else throw new SchemaError(path, `expected a ${schema.name} (one of ${names}), got ${show(value)}`);
  const found = schema.cases.find(([name]) => name === tag);
  if (!found) throw new SchemaError(path, `unknown ${schema.name} case \`${tag}\` (one of ${names})`);
  const [, caseSchema] = found;
  if (caseSchema === null) {
    if (typeof value !== "string" && payload !== null) throw new SchemaError(path, `\`${tag}\` carries no value`);
    return { tag };
  }
  if (typeof value === "string") throw new SchemaError(path, `\`${tag}\` needs a value`);
  return { tag, val: decode(caseSchema, payload, `${path}.${tag}`) };
}

/**
 * Writes a guest's value back in the serde form (options that are `none`
 * omitted), checking it against the schema: a guest that returns a malformed
 * value fails natively with the path of the bad field, as lowering would fail.
 */
export function encode(schema: Schema, value: unknown, path = ""): unknown {
  switch (schema.kind) {
    case "string":
    case "bool":
    case "enum":
      // decode checks the type and the enum case.
      decode(schema, value, path);
      return value;
    case "s64":
    case "u64":
      if (typeof value !== "bigint") throw new SchemaError(path, `expected a bigint (${schema.kind}), got ${show(value)}`);
      decode(schema, value, path);
      return Number(value);
    case "json":
      if (typeof value !== "string") throw new SchemaError(path, `expected JSON text (a string), got ${show(value)}`);
      try {
        return JSON.parse(value) as unknown;
      } catch {
        return value;
      }
    case "unit":
      return undefined;
    case "list":
      if (!Array.isArray(value)) throw new SchemaError(path, `expected an array, got ${show(value)}`);
      return value.map((item, i) => encode(schema.of, item, `${path}[${i}]`));
    case "option":
      return value === null || value === undefined ? undefined : encode(schema.of, value, path);
    case "tuple":
      if (!Array.isArray(value) || value.length !== schema.of.length)
        throw new SchemaError(path, `expected an array of ${schema.of.length}, got ${show(value)}`);
      return schema.of.map((s, i) => encode(s, value[i], `${path}[${i}]`));
    case "record": {
      if (!isObject(value)) throw new SchemaError(path, `expected a ${schema.name} object, got ${show(value)}`);
      const out: Record<string, unknown> = {};
      for (const [name, field] of schema.fields) {
        const at = path ? `${path}.${camel(name)}` : camel(name);
        const got = value[camel(name)];
        if (got === undefined && field.kind !== "option") throw new SchemaError(path, `missing field \`${camel(name)}\``);
        const written = encode(field, got, at);
        if (written !== undefined) out[name] = written;
      }
      return out;
    }
    case "variant": {
      if (!isObject(value) || typeof value.tag !== "string")
        throw new SchemaError(path, `expected a ${schema.name} ({tag, val}), got ${show(value)}`);
      const found = schema.cases.find(([name]) => name === value.tag);
      if (!found) throw new SchemaError(path, `unknown ${schema.name} tag \`${value.tag}\``);
      const [tag, caseSchema] = found;
      return caseSchema === null ? tag : { [tag]: encode(caseSchema, value.val, `${path}.${tag}`) };
    }
  }
}

/**
 * A case-file value as JSON text: a string stays itself, unless it is JSON
 * text, which is rewritten like any other value: keys sorted, so texts compare
 * equal exactly when their values do (as the host compares parsed JSON).
 */
function jsonText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") {
    try {
      return JSON.stringify(sortKeys(JSON.parse(value)));
    } catch {
      return value;
    }
  }
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys(value[key])]),
  );
}

/** JSON for messages (bigints as numbers). */
export function show(value: unknown): string {
  return JSON.stringify(value, (_, v) => (typeof v === "bigint" ? Number(v) : v)) ?? "undefined";
}
