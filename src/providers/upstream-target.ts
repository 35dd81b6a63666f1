/** Where one upstream URL points: what undici's `dispatch` takes, and the host error messages name. */
export interface Target {
  origin: string;
  path: string;
  host: string;
  invalid: boolean;
}

/** Parsed upstream URLs: a handful of distinct ones (one per provider), each parsed once. */
const targets = new Map<string, Target>();

/** `url` parsed (once per distinct URL); an unparsable one is `invalid`. */
export function targetOf(url: string): Target {
  let target = targets.get(url);
  if (target) return target;
  try {
    const parsed = new URL(url);
    target = {
      origin: parsed.origin,
      path: `${parsed.pathname}${parsed.search}`,
      host: parsed.host,
      invalid: false,
    };
  } catch {
    target = { origin: '', path: '', host: '(invalid url)', invalid: true };
  }
  if (targets.size >= 1_000) targets.clear();
  targets.set(url, target);
  return target;
}
