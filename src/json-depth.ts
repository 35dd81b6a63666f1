/**
 * Deepest nesting of arrays and objects a JSON value may have: a client's request body, and an upstream's
 * answer body or stream event alike (an answer too deep is the upstream's fault: `bad_response`).
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether a parsed JSON value nests arrays and objects deeper than `max`. Walked with an explicit stack,
 * in O(nodes): the check itself can never overflow, and it runs before any recursive work on the value
 * (validation, hashing for an Idempotency-Key, `JSON.stringify` of a tool call's arguments or of the
 * answer) that a deeply nested value would overflow.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (typeof node !== 'object' || node === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}
