import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { FastifyInstance } from 'fastify';
import { ERROR_CODES } from '../../src/errors.js';

type Schema = Record<string, unknown>;
interface Operation {
  responses: Record<
    string,
    { content?: Record<string, { schema: Schema }>; headers?: Record<string, unknown> }
  >;
}
type OpenApi = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

export interface Conformance {
  /** Responses checked so far. */
  readonly checked: number;
  /** Every way a response disagreed with the document. */
  readonly violations: string[];
}

const PREFIX = '/api/v1';

/**
 * Checks every response a Fastify app sends under /api/v1 against the app's own OpenAPI document
 * (`/api/v1/openapi.json`): the path and method are documented, the status is one the operation
 * declares, the body is JSON matching the declared schema, and the documented headers that are always
 * present (`x-request-id`, and `x-should-retry` on errors) are there. Undocumented paths must answer in
 * the error shape. Install before the app is ready; read `violations` when done.
 */
export function watchConformance(app: FastifyInstance, doc: OpenApi): Conformance {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  ajv.addSchema({ $id: 'tollgate-openapi', components: doc.components });
  const validators = new Map<string, ValidateFunction>();
  const validatorFor = (schema: Schema): ValidateFunction => {
    const key = JSON.stringify(schema);
    let v = validators.get(key);
    if (!v) {
      const resolved = typeof schema.$ref === 'string' ? { $ref: `tollgate-openapi${schema.$ref}` } : schema;
      v = ajv.compile(resolved);
      validators.set(key, v);
    }
    return v;
  };
  const errorValidator = validatorFor({ $ref: '#/components/schemas/Error' });
  const templates = Object.keys(doc.paths).map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '.+')}$`),
  }));

  const state = { checked: 0, violations: [] as string[] };
  app.addHook('onSend', (request, reply, payload, done) => {
    const path = request.url.split('?')[0] ?? '';
    if (path.startsWith(`${PREFIX}/`)) {
      state.checked++;
      const where = `${request.method} ${path} → ${reply.statusCode}`;
      const fail = (what: string) => state.violations.push(`${where}: ${what}`);
      const headers = reply.getHeaders();
      let body: unknown;
      try {
        body = JSON.parse(typeof payload === 'string' ? payload : String(payload));
      } catch {
        fail('the body is not JSON');
      }
      if (!String(headers['content-type'] ?? '').startsWith('application/json')) {
        fail(`content-type is ${String(headers['content-type'])}`);
      }
      if (!headers['x-request-id']) fail('no x-request-id header');
      if (reply.statusCode >= 400) {
        if (headers['x-should-retry'] === undefined) fail('no x-should-retry header');
        const code = (body as { error?: { code?: unknown } } | undefined)?.error?.code;
        const known = typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
        if (!known) fail(`unknown error code ${String(code)}`);
        else if (ERROR_CODES[code as keyof typeof ERROR_CODES].status !== reply.statusCode) {
          fail(`code ${code} is documented with another status`);
        }
      }
      const sub = path.slice(PREFIX.length);
      const documented = templates.find((t) => t.pattern.test(sub));
      // HEAD answers as GET does, without the body (HTTP semantics; Fastify serves it for every GET route).
      const method = request.method === 'HEAD' ? 'get' : request.method.toLowerCase();
      const operation = documented && doc.paths[documented.template]?.[method];
      if (!operation) {
        if (reply.statusCode < 400) fail('an undocumented path or method answered with success');
        else if (body !== undefined && !errorValidator(body))
          fail(`not the error shape: ${ajv.errorsText(errorValidator.errors)}`);
      } else {
        const response = operation.responses[String(reply.statusCode)];
        const schema = response?.content?.['application/json']?.schema;
        if (!response) fail('status not documented for this operation');
        else if (schema && body !== undefined) {
          const validate = validatorFor(schema);
          if (!validate(body)) fail(ajv.errorsText(validate.errors));
        }
      }
    }
    done(null, payload);
  });
  return state;
}
