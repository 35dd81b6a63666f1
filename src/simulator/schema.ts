/**
 * The simulator's one generator of JSON values from a schema: tool-call arguments and structured output
 * both come from it, so a reply always satisfies the schema it was asked for. It reads JSON Schema
 * (OpenAI `parameters`, Anthropic `input_schema`, Gemini `parametersJsonSchema` / `responseJsonSchema`) and
 * Gemini's OpenAPI `Schema` (upper-case `type`, string `enum`) alike.
 *
 * @see https://json-schema.org/draft/2020-12/json-schema-validation
 * @see https://ai.google.dev/api/caching#Schema
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The last word of a text, punctuation stripped (letters, digits, `_` and `-` kept); "sample" if none. */
export function lastWord(text: string): string {
  const words = text
    .split(/\s+/)
    .map((w) => w.replace(/[^\p{L}\p{N}_-]/gu, ''))
    .filter((w) => w.length > 0);
  return words.at(-1) ?? 'sample';
}

/** The schema's type, lower-cased; the first non-null one when it lists several. */
function typeOf(schema: Record<string, unknown>): string | undefined {
  const { type } = schema;
  if (typeof type === 'string') return type.toLowerCase();
  if (Array.isArray(type)) {
    const named = type.filter((t): t is string => typeof t === 'string').map((t) => t.toLowerCase());
    return named.find((t) => t !== 'null') ?? named[0];
  }
  if (isRecord(schema.properties)) return 'object';
  if (schema.items !== undefined) return 'array';
  return undefined;
}

/**
 * A value for `schema`: an object gets every property of `properties` (recursively); a string the first
 * `enum` value if any, else `word`; an integer or number its `minimum`, else 1; a boolean true; an array
 * one generated item; `anyOf` / `oneOf` the first branch; `const` its value; `null` null. No schema (or one
 * without a type) gives `{}`.
 */
export function generate(schema: unknown, word: string): JsonValue {
  if (!isRecord(schema)) return {};
  if (schema.const !== undefined) return schema.const as JsonValue;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0) return generate(branches[0], word);
  }
  const choices = schema.enum;
  const type = typeOf(schema);
  switch (type) {
    case 'object': {
      const out: { [key: string]: JsonValue } = {};
      if (isRecord(schema.properties)) {
        for (const [name, sub] of Object.entries(schema.properties)) out[name] = generate(sub, word);
      }
      return out;
    }
    case 'string':
      if (Array.isArray(choices) && choices.length > 0) return choices[0] as JsonValue;
      return word;
    case 'integer':
    case 'number': {
      if (Array.isArray(choices) && choices.length > 0) {
        // Gemini writes the enum of an INTEGER as strings.
        const first = Number(choices[0]);
        if (Number.isFinite(first)) return first;
      }
      const minimum = typeof schema.minimum === 'number' ? schema.minimum : undefined;
      if (minimum === undefined) return 1;
      return type === 'integer' ? Math.ceil(minimum) : minimum;
    }
    case 'boolean':
      return true;
    case 'array':
      return [generate(schema.items, word)];
    case 'null':
      return null;
    default:
      if (Array.isArray(choices) && choices.length > 0) return choices[0] as JsonValue;
      return {};
  }
}
