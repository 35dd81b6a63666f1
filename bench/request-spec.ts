/**
 * The request a load generator sends, shared by `loadgen.ts` and `wrk.ts` (and the targets that build it),
 * apart from both so that neither imports the other back.
 *
 * Child-process script (plain `node`): imports nothing from `src/`.
 */
export interface RequestSpec {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  /** When set, each request uses the next of these `Authorization` values in turn (requests over many keys). */
  authorizations?: string[];
}
