/**
 * Gemini's request body is protobuf JSON: each field may be written in lowerCamelCase or in its proto
 * snake_case name, and an unknown name is refused ("Invalid JSON payload received. Unknown name …: Cannot
 * find field."). This reads an object that way, and checks a `Schema` (the OpenAPI subset Gemini takes for
 * `parameters` and `responseSchema`): JSON Schema keywords outside it, such as `additionalProperties`,
 * are unknown names, and an OBJECT must list properties.
 *
 * @see https://protobuf.dev/programming-guides/json/
 * @see https://ai.google.dev/api/caching#Schema
 */
import { isRecord } from './shared.js';

export class GeminiInvalid {
  constructor(readonly message: string) {}
}

export function fail(message: string): never {
  throw new GeminiInvalid(message);
}

/** `maxOutputTokens` → `max_output_tokens`. */
export function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function camel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * The fields of a proto message written as JSON, keyed by their camelCase names; a name that is neither a
 * known field nor its snake_case form is refused. `at` is the message's path in proto names ('' at the top).
 */
export function readFields(
  value: Record<string, unknown>,
  known: readonly string[],
  at: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    const name = known.includes(key) ? key : camel(key);
    if (!known.includes(name)) {
      fail(
        `Invalid JSON payload received. Unknown name "${key}"${at === '' ? '' : ` at '${at}'`}: Cannot find field.`,
      );
    }
    out[name] = field;
  }
  return out;
}

/** A proto message field that received something other than an object. */
export function notAMessage(at: string, type: string, value: unknown): never {
  fail(`Invalid value at '${at}' (type.googleapis.com/${type}), ${JSON.stringify(value)}`);
}

const SCHEMA_FIELDS = [
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'properties',
  'required',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'anyOf',
  'propertyOrdering',
  'default',
  'items',
  'minimum',
  'maximum',
];

const TYPES = new Set([
  'TYPE_UNSPECIFIED',
  'STRING',
  'NUMBER',
  'INTEGER',
  'BOOLEAN',
  'ARRAY',
  'OBJECT',
  'NULL',
]);

/**
 * Checks a Gemini `Schema` at `at` (a path such as `tools[0].function_declarations[0].parameters`); returns
 * it with camelCase keys. The type is read case-insensitively (`object` and `OBJECT` alike).
 */
export function checkSchema(schema: unknown, at: string): Record<string, unknown> {
  if (!isRecord(schema)) notAMessage(at, 'google.ai.generativelanguage.v1beta.Schema', schema);
  const s = readFields(schema, SCHEMA_FIELDS, at);
  if (s.type !== undefined) {
    if (typeof s.type !== 'string' || !TYPES.has(s.type.toUpperCase())) {
      fail(
        `Invalid value at '${at}.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), ${JSON.stringify(s.type)}`,
      );
    }
  }
  if (s.enum !== undefined && !(Array.isArray(s.enum) && s.enum.every((e) => typeof e === 'string'))) {
    fail(`Invalid value at '${at}.enum' (TYPE_STRING): enum values must be strings`);
  }
  if (
    s.required !== undefined &&
    !(Array.isArray(s.required) && s.required.every((e) => typeof e === 'string'))
  ) {
    fail(`Invalid value at '${at}.required' (TYPE_STRING): required must list property names`);
  }
  const properties: Record<string, unknown> = {};
  if (s.properties !== undefined) {
    if (!isRecord(s.properties))
      notAMessage(`${at}.properties`, 'google.ai.generativelanguage.v1beta.Schema', s.properties);
    for (const [k, [name, sub]] of Object.entries(s.properties).entries()) {
      properties[name] = checkSchema(sub, `${at}.properties[${k}].value`);
    }
    s.properties = properties;
  }
  if (
    typeof s.type === 'string' &&
    s.type.toUpperCase() === 'OBJECT' &&
    Object.keys(properties).length === 0
  ) {
    fail(`* GenerateContentRequest.${at}.properties: should be non-empty for OBJECT type`);
  }
  if (s.items !== undefined) s.items = checkSchema(s.items, `${at}.items`);
  if (s.anyOf !== undefined) {
    if (!Array.isArray(s.anyOf)) fail(`Invalid value at '${at}.any_of': expected a list of schemas`);
    s.anyOf = s.anyOf.map((sub, k) => checkSchema(sub, `${at}.any_of[${k}]`));
  }
  return s;
}
