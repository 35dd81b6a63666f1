/**
 * Settings that match nothing. A misspelt variable would otherwise be ignored in silence — the server
 * runs on the default it was meant to replace — so the server warns about each at start, with the
 * nearest name it knows. Only `PROV_…` variables are looked at in the environment (the rest of it is the
 * whole machine's); every key of the config file is.
 */

/** Levenshtein distance: the fewest insertions, deletions and substitutions that turn `a` into `b`. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/**
 * The known name nearest to `name` (letter case ignored), when it is near enough to be the one meant: at
 * most a quarter of the name's letters apart, and never more than 2 for a short name. The first of equals
 * in `known`'s order wins.
 */
export function nearestName(name: string, known: Iterable<string>): string | undefined {
  const upper = name.toUpperCase();
  const within = Math.max(2, Math.floor(name.length / 4));
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const d = editDistance(upper, candidate.toUpperCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return bestDistance <= within ? best : undefined;
}

export interface UnknownSettingsInput {
  /** Every name the configuration reads. */
  known: ReadonlySet<string>;
  /** The names set in the environment. */
  envNames: Iterable<string>;
  /** The top-level keys of the config file, and its path, when there is one. */
  file?: { path: string; keys: Iterable<string> };
}

/** The provider variables' prefix: the one part of the environment that is surely meant for Tollgate. */
const PROVIDER_PREFIX = 'PROV_';

/** The key of the config file that holds the providers' fields (checked where it is read). */
const PROVIDERS_KEY = 'providers';

/** One warning per setting that matches nothing, naming it and the nearest known name. */
export function unknownSettingWarnings(input: UnknownSettingsInput): string[] {
  const advice = (name: string) => {
    const near = nearestName(name, input.known);
    return near ? `did you mean ${near}?` : 'it is ignored (docs/configuration.md lists every setting)';
  };
  const warnings: string[] = [];
  for (const name of input.envNames) {
    if (name.startsWith(PROVIDER_PREFIX) && !input.known.has(name))
      warnings.push(`${name} is set but matches no setting: ${advice(name)}`);
  }
  if (input.file) {
    for (const key of input.file.keys) {
      if (key !== PROVIDERS_KEY && !input.known.has(key))
        warnings.push(`TOLLGATE_CONFIG: "${key}" in ${input.file.path} matches no setting: ${advice(key)}`);
    }
  }
  return warnings;
}
