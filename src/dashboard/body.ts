import { GatewayError } from '../errors.js';

/** A request body's fields, once the body is known to be an object with only allowed fields. */
export type Fields = Record<string, unknown>;

/**
 * The body as an object holding only `allowed` fields. Any other field — `balance`, `role`,
 * `account_id`, … — is refused rather than ignored, so nobody can believe it was applied.
 */
export function fieldsOf(body: unknown, allowed: readonly string[]): Fields {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  }
  for (const name of Object.keys(body)) {
    if (!allowed.includes(name)) {
      throw new GatewayError('invalid_request', `Unknown field "${name.slice(0, 64)}".`, {
        param: name.slice(0, 64),
      });
    }
  }
  return body as Fields;
}

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', message, { param });
}

export function requiredString(fields: Fields, name: string, max: number): string {
  const value = fields[name];
  if (typeof value !== 'string' || value.length === 0) throw invalid(name, `"${name}" is required.`);
  if (value.length > max) throw invalid(name, `"${name}" must be at most ${max} characters.`);
  return value;
}

export function optionalString(fields: Fields, name: string, max: number): string | undefined {
  const value = fields[name];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw invalid(name, `"${name}" must be a string.`);
  if (value.length > max) throw invalid(name, `"${name}" must be at most ${max} characters.`);
  return value;
}

export function optionalBoolean(fields: Fields, name: string): boolean | undefined {
  const value = fields[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw invalid(name, `"${name}" must be true or false.`);
  return value;
}

export function optionalInt(fields: Fields, name: string, min: number, max: number): number | undefined {
  const value = fields[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(name, `"${name}" must be a whole number from ${min} to ${max}.`);
  }
  return value;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

/** An email address, trimmed and lower-cased (the form accounts are stored in). */
export function emailField(fields: Fields, name = 'email'): string {
  const email = requiredString(fields, name, 320).trim().toLowerCase();
  if (!EMAIL.test(email)) throw invalid(name, 'Enter an email address.');
  return email;
}

/** Query-string parameters: only `allowed` ones, each given once. */
export function queryOf(query: unknown, allowed: readonly string[]): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  if (typeof query !== 'object' || query === null) return out;
  for (const [name, value] of Object.entries(query)) {
    if (!allowed.includes(name)) {
      throw new GatewayError('invalid_request', `Unknown parameter "${name.slice(0, 64)}".`, {
        param: name.slice(0, 64),
      });
    }
    if (typeof value !== 'string') throw invalid(name, `"${name}" may be given once.`);
    out[name] = value === '' ? undefined : value;
  }
  return out;
}
