/**
 * Standalone simulator: `node dist/simulator/main.js [--host H] [--port N] [--latency-ms N]
 * [--stream-chunks N] [--stream-chunks-per-second X] [--reply-words N]` (`--help` says so).
 * Prints one JSON line `{"url": "..."}` to stdout; closes on SIGTERM/SIGINT. The values given are the start
 * values `POST /__sim/reset` returns to.
 */
import { startSimulator } from './index.js';
import type { SimulatorOptions } from './types.js';

const USAGE =
  'usage: simulator [--host H] [--port N] [--latency-ms N] [--stream-chunks N] ' +
  '[--stream-chunks-per-second X] [--reply-words N]';

const HELP = `${USAGE}

A local upstream speaking the OpenAI, Anthropic and Gemini wire formats, for trying Tollgate without
provider keys. Prints one JSON line {"url": …} when it listens; SIGTERM or Ctrl-C stops it.

  --host H                        address to listen on (127.0.0.1)
  --port N                        port (0: a free one)
  --latency-ms N                  delay before each answer
  --stream-chunks N               pieces of a streamed answer
  --stream-chunks-per-second X    pace of a streamed answer (0: as fast as possible)
  --reply-words N                 words of each answer
  -h, --help                      this text

Point a provider at it with PROV_<NAME>_BASE_URL and any PROV_<NAME>_API_KEY: <url>/openai/<name>/v1
for an OpenAI-format provider (PROV_DEEPSEEK_BASE_URL=<url>/openai/deepseek/v1), <url>/anthropic/claude,
<url>/gemini/gemini. \`tollgate demo\` and \`node scripts/cluster.mjs --simulator\` do so for every provider.`;

/** Asked for the help text: printed on stdout, exit 0. */
class HelpAsked extends Error {}

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

function isKnownFlag(flag: string): boolean {
  return flag === '--host' || flag === '--stream-chunks-per-second' || isIntegerFlag(flag);
}

function parseArgs(argv: readonly string[]): SimulatorOptions {
  const out: SimulatorOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i] as string;
    if (flag === '--help' || flag === '-h') throw new HelpAsked();
    if (!flag.startsWith('-') || !isKnownFlag(flag)) throw new Error(`unknown option ${flag}`);
    const value = argv[i + 1];
    if (value === undefined || value.startsWith('--')) throw new Error(`${flag} needs a value`);
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
    if (err instanceof HelpAsked) {
      process.stdout.write(`${HELP}\n`);
      process.exit(0);
    }
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
