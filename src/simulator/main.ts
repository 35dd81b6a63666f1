/**
 * Standalone simulator: `node dist/simulator/main.js [--host H] [--port N] [--latency-ms N]
 * [--stream-chunks N] [--stream-chunks-per-second X] [--reply-words N]`.
 * Prints one JSON line `{"url": "..."}` to stdout; closes on SIGTERM/SIGINT. The values given are the start
 * values `POST /__sim/reset` returns to.
 */
import { startSimulator } from './index.js';
import type { SimulatorOptions } from './types.js';

const USAGE =
  'usage: simulator [--host H] [--port N] [--latency-ms N] [--stream-chunks N] ' +
  '[--stream-chunks-per-second X] [--reply-words N]';

/** The flags that take a whole number, and the option each sets. */
const INTEGER_FLAGS = {
  '--port': 'port',
  '--latency-ms': 'latencyMs',
  '--stream-chunks': 'streamChunks',
  '--reply-words': 'replyWords',
} as const satisfies Record<string, keyof SimulatorOptions>;

function isIntegerFlag(flag: string): flag is keyof typeof INTEGER_FLAGS {
  return Object.hasOwn(INTEGER_FLAGS, flag);
}

function parseArgs(argv: readonly string[]): SimulatorOptions {
  const out: SimulatorOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i] as string;
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`missing value for ${flag}`);
    i++;
    if (flag === '--host') out.host = value;
    else if (isIntegerFlag(flag)) {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} must be a non-negative integer`);
      out[INTEGER_FLAGS[flag]] = n;
    } else if (flag === '--stream-chunks-per-second') {
      const n = Number(value);
      if (value.trim() === '' || !Number.isFinite(n) || n < 0) {
        throw new Error(`${flag} must be a number >= 0 (0: as fast as possible)`);
      }
      out.streamChunksPerSecond = n;
    } else throw new Error(`unknown option ${flag}`);
  }
  return out;
}

function usageError(err: unknown): never {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  let options: SimulatorOptions;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (err) {
    usageError(err);
  }
  let sim: Awaited<ReturnType<typeof startSimulator>>;
  try {
    sim = await startSimulator(options);
  } catch (err) {
    // A TypeError: a stream setting or the reply words out of range; anything else is not the caller's.
    if (err instanceof TypeError) usageError(err);
    throw err;
  }
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
