/**
 * Standalone simulator: `node dist/simulator/main.js [--host H] [--port N] [--latency-ms N]`.
 * Prints one JSON line `{"url": "..."}` to stdout; closes on SIGTERM/SIGINT.
 */
import { startSimulator } from './index.js';

function parseArgs(argv: readonly string[]): { host?: string; port?: number; latencyMs?: number } {
  const out: { host?: string; port?: number; latencyMs?: number } = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`missing value for ${flag}`);
    i++;
    if (flag === '--host') out.host = value;
    else if (flag === '--port' || flag === '--latency-ms') {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} must be a non-negative integer`);
      if (flag === '--port') out.port = n;
      else out.latencyMs = n;
    } else throw new Error(`unknown option ${flag}`);
  }
  return out;
}

async function main(): Promise<void> {
  let options: ReturnType<typeof parseArgs>;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.stderr.write('usage: simulator [--host H] [--port N] [--latency-ms N]\n');
    process.exit(2);
  }
  const sim = await startSimulator(options);
  process.stdout.write(`${JSON.stringify({ url: sim.url })}\n`);
  const stop = () => {
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

void main();
