/** Query parameters whose value is a secret whatever it looks like. */
const SECRET_NAMES =
  /^(invite|invite_code|code|api[_-]?key|key|token|access[_-]?token|auth|password|secret|session)$/i;
/** A value shaped like a credential: an API key prefix, or a long run of token characters. */
const KEY_SHAPED = /^(sk-|sk_|pk-|rk-|ghp_|xox)|^[A-Za-z0-9_\-.~+/=]{24,}$/;

/**
 * A request URL as it may be written to a log: the query string's secrets — invite codes, keys, tokens,
 * and any value shaped like a key — replaced by `[redacted]`. Logs are read by more people than hold the
 * keys, and an access log kept for months would otherwise be a list of working credentials.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const pairs = url.slice(q + 1).split('&');
  let changed = false;
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i] as string;
    const eq = pair.indexOf('=');
    if (eq === -1) continue;
    const rawName = pair.slice(0, eq);
    let name = rawName;
    let value = pair.slice(eq + 1);
    try {
      name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      value = decodeURIComponent(value.replace(/\+/g, ' '));
    } catch {
      // An undecodable pair is judged as it stands.
    }
    if (value !== '' && (SECRET_NAMES.test(name) || KEY_SHAPED.test(value))) {
      pairs[i] = `${rawName}=[redacted]`;
      changed = true;
    }
  }
  return changed ? `${url.slice(0, q)}?${pairs.join('&')}` : url;
}
