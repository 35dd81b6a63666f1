import { randomBytes } from 'node:crypto';
import { CATALOG, envNameOf } from '../providers/catalog.js';
import type { Simulator } from '../simulator/index.js';

/**
 * The variables that point every provider of the catalog at a local simulator: its base URL for the
 * provider's wire format, `_ENABLED`, and a made-up key (the simulator takes any; a provider without a
 * key is inactive). `tollgate demo` runs on them, and `scripts/cluster.mjs --simulator` gives them to
 * each instance.
 */
export function providersAtSimulator(simulator: Pick<Simulator, 'baseUrl'>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of CATALOG) {
    const name = envNameOf(entry.name);
    env[`PROV_${name}_BASE_URL`] = simulator.baseUrl(entry.wireFormat, entry.name.replace(/^prov-/, ''));
    env[`PROV_${name}_API_KEY`] = `simulator-${randomBytes(8).toString('hex')}`;
    env[`PROV_${name}_ENABLED`] = 'true';
  }
  return env;
}
