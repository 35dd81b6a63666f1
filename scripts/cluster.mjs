#!/usr/bin/env node
// Runs several Tollgate instances behind nginx, in the foreground, for a local scale-out set-up and for the
// multi-instance tests (docs/deployment.md). Every instance shares DATABASE_URL (PostgreSQL) and
// REDIS_URL from the environment, which is passed on to each of them as is.
//
//   DATABASE_URL=postgres://… REDIS_URL=redis://… PROV_DEEPSEEK_API_KEY=… \
//     node scripts/cluster.mjs --instances 2 --port 8080
//
// Options (--help lists them): --instances N (2) · --port P, nginx's port (8080; 0 picks a free one) ·
// --instance-ports P1,P2,… (each instance's own port on 127.0.0.1; default: free ones) · --dir DIR (logs
// and the generated nginx.conf; default: a new temp dir) · --nginx PATH (default: nginx on PATH, then
// /usr/sbin/nginx) · --simulator (start the local upstream simulator and point every provider of every
// instance at it: no provider keys needed). A mistake on the command line: one line and the usage, exit 2.
// When everything answers, one JSON line is printed: {"url", "instances": [{url, pid, log}], "nginx":
// {pid, config, log}, "dir"} (and "simulator": its URL, with --simulator). SIGTERM or SIGINT stops nginx
// and drains the instances; exit 0.
import { spawn, spawnSync } from 'node:child_process';
import {
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'tollgate');

function fail(message) {
  process.stderr.write(`cluster: ${message}\n`);
  process.exit(1);
}

const USAGE =
  'usage: node scripts/cluster.mjs [--instances N] [--port P] [--instance-ports P1,P2,…] [--dir DIR]\n' +
  '                                [--nginx PATH] [--simulator]';

const HELP = `${USAGE}

Runs N \`bin/tollgate serve\` instances on loopback ports and nginx in front of them, in the foreground;
Ctrl-C or SIGTERM stops nginx and drains the instances. The instances share DATABASE_URL (PostgreSQL)
and REDIS_URL, taken with everything else from the environment (docs/deployment.md).

  --instances N          how many instances (2; 1 to 64)
  --port P               nginx's port on 127.0.0.1 (8080; 0 picks a free one)
  --instance-ports LIST  each instance's port, comma-separated (default: free ones)
  --dir DIR              where the logs and the generated nginx.conf go (default: a new temp dir)
  --nginx PATH           the nginx to run (default: nginx on PATH, then /usr/sbin/nginx)
  --simulator            start the local upstream simulator and point every provider of every instance
                         at it (PROV_<NAME>_BASE_URL and _API_KEY): a try-out without provider keys
  -h, --help             this text

Example:
  DATABASE_URL=postgres://tollgate@127.0.0.1:5432/tollgate REDIS_URL=redis://127.0.0.1:6379 \\
    node scripts/cluster.mjs --instances 2 --port 8080 --simulator`;

/** A mistake on the command line: one line and the usage, exit 2 (no stack trace). */
function usageError(message) {
  process.stderr.write(`cluster: ${message}\n${USAGE}\n`);
  process.exit(2);
}

const OPTIONS = {
  instances: 'string',
  port: 'string',
  'instance-ports': 'string',
  dir: 'string',
  nginx: 'string',
  simulator: 'boolean',
  help: 'boolean',
};

/** `--name value`, `--name=value` and the boolean flags; anything else is a usage error. */
function parseCommandLine(argv) {
  const values = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h') {
      values.help = true;
      continue;
    }
    if (!arg.startsWith('--')) usageError(`unexpected argument "${arg}"`);
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const kind = Object.hasOwn(OPTIONS, name) ? OPTIONS[name] : undefined;
    if (kind === undefined) usageError(`unknown option --${name}`);
    if (kind === 'boolean') {
      if (eq !== -1) usageError(`--${name} takes no value`);
      values[name] = true;
      continue;
    }
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined || (eq === -1 && value.startsWith('--'))) usageError(`--${name} needs a value`);
    values[name] = value;
  }
  return values;
}

const values = parseCommandLine(process.argv.slice(2));
if (values.help) {
  process.stdout.write(`${HELP}\n`);
  process.exit(0);
}
const count = Number(values.instances ?? '2');
if (!/^\d+$/.test(values.instances ?? '2') || count < 1 || count > 64)
  usageError(`--instances: "${values.instances}" must be a whole number from 1 to 64`);
const portIsValid = (text) => /^\d+$/.test(text) && Number(text) <= 65535;
if (!portIsValid(values.port ?? '8080')) usageError(`--port: "${values.port}" must be a port, 0 to 65535`);
const instancePorts = values['instance-ports']
  ? values['instance-ports'].split(',').map((p) => p.trim())
  : Array.from({ length: count }, () => '0');
if (instancePorts.length !== count || !instancePorts.every(portIsValid))
  usageError(`--instance-ports must list ${count} ports (one per instance), comma-separated`);
if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js')))
  fail('the project is not built: run `npm run build` (or `npm ci`) first');
if (!/^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? ''))
  fail('DATABASE_URL must name a PostgreSQL database: instances share it (SQLite is the one-instance store)');
if (!process.env.REDIS_URL)
  process.stderr.write('cluster: REDIS_URL is not set: each instance keeps its own state\n');

const dir = resolve(values.dir ?? mkdtempSync(join(tmpdir(), 'tollgate-cluster-')));
mkdirSync(dir, { recursive: true });

function findNginx() {
  if (values.nginx) return values.nginx;
  const which = spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim()) return which.stdout.trim();
  if (existsSync('/usr/sbin/nginx')) return '/usr/sbin/nginx';
  return fail('nginx not found: install it (Debian: apt-get install nginx) or pass --nginx PATH');
}
const nginxBin = findNginx();

/** A port nothing listens on right now. */
function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts a child with its output in a log file (a full pipe would block it). */
function start(command, args, logFile, env) {
  const fd = openSync(logFile, 'a');
  const child = spawn(command, args, { env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  return child;
}

const children = [];
let stopping = false;

/** The simulator of --simulator, in this process; closed after the instances have drained. */
let simulator;

async function stopAll(code) {
  if (stopping) return;
  stopping = true;
  for (const { child, kind } of children) {
    if (child.exitCode === null && child.signalCode === null)
      child.kill(kind === 'nginx' ? 'SIGQUIT' : 'SIGTERM');
  }
  await Promise.all(
    children.map(
      ({ child }) =>
        new Promise((r) => {
          if (child.exitCode !== null || child.signalCode !== null) r();
          else child.once('exit', r);
        }),
    ),
  );
  await simulator?.close().catch(() => undefined);
  process.exit(code);
}
process.on('SIGTERM', () => stopAll(0));
process.on('SIGINT', () => stopAll(0));

const instanceEnv = { ...process.env, HOST: '127.0.0.1' };

if (values.simulator) {
  // The built simulator, and the same provider variables `tollgate demo` runs on.
  const { startSimulator } = await import('../dist/simulator/index.js');
  const { providersAtSimulator } = await import('../dist/cli/simulator-providers.js');
  simulator = await startSimulator({ host: '127.0.0.1', port: 0 });
  Object.assign(instanceEnv, providersAtSimulator(simulator));
}

// Migrations once, before the instances start (they would also apply them, one at a time).
const migrate = spawnSync(process.execPath, [BIN, 'migrate', '--json'], {
  env: instanceEnv,
  encoding: 'utf8',
});
if (migrate.status !== 0) fail(`migrate failed: ${migrate.stderr.trim() || migrate.stdout.trim()}`);

async function startInstance(i) {
  const log = join(dir, `instance-${i + 1}.log`);
  writeFileSync(log, '');
  const child = start(process.execPath, [BIN, 'serve', '--json'], log, {
    ...instanceEnv,
    PORT: instancePorts[i],
  });
  children.push({ child, kind: 'instance' });
  const end = Date.now() + 30_000;
  for (;;) {
    const match = readFileSync(log, 'utf8').match(/"url":"([^"]+)"/);
    if (match) {
      child.once('exit', (code, signal) => {
        if (!stopping)
          process.stdout.write(
            `${JSON.stringify({ event: 'instance_exited', instance: i + 1, code, signal })}\n`,
          );
      });
      return { url: match[1], pid: child.pid, log };
    }
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > end) {
      await stopAll(1);
    }
    await sleep(25);
  }
}

const instances = [];
for (let i = 0; i < count; i++) instances.push(await startInstance(i));

// nginx as the load balancer: round robin over the instances, HTTP/1.1 keep-alive to them, timeouts
// above the gateway's own, and the gateway's own answers passed through untouched (its error bodies
// included). Only nginx's own errors (no instance reachable, body beyond its limit) are rewritten into
// the same {error:{message,type,code}} body.
const port = Number(values.port) === 0 ? await freePort() : Number(values.port);
const requestTimeoutS = Math.ceil(Number(process.env.REQUEST_TIMEOUT_MS ?? 120_000) / 1000);
const bodyLimit = Number(process.env.BODY_LIMIT_BYTES ?? 4 * 1024 * 1024);
const tmp = join(dir, 'nginx-tmp');
mkdirSync(tmp, { recursive: true });
const runsAsRoot = process.getuid?.() === 0;
let userLine = '';
if (runsAsRoot) {
  // Workers drop to nobody: give them the temp dir they write request bodies to.
  const nobody = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((f) => f[0] === 'nobody');
  const uid = Number(nobody?.[2] ?? 65534);
  const gid = Number(nobody?.[3] ?? 65534);
  chownSync(tmp, uid, gid);
  userLine = `user nobody ${spawnSync('id', ['-gn', 'nobody'], { encoding: 'utf8' }).stdout.trim() || 'nogroup'};`;
}
const config = join(dir, 'nginx.conf');
const nginxLog = join(dir, 'nginx-error.log');
writeFileSync(
  config,
  `# Generated by scripts/cluster.mjs
${userLine}
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${nginxLog} warn;

events {
  worker_connections 4096;
}

http {
  access_log off;
  client_body_temp_path ${tmp}/body;
  proxy_temp_path ${tmp}/proxy;
  fastcgi_temp_path ${tmp}/fastcgi;
  uwsgi_temp_path ${tmp}/uwsgi;
  scgi_temp_path ${tmp}/scgi;

  upstream tollgate {
${instances.map((i) => `    server ${new URL(i.url).host} max_fails=1 fail_timeout=5s;`).join('\n')}
    keepalive 64;
  }

  server {
    listen 127.0.0.1:${port};

    # Tollgate answers over-large bodies itself (413 request_too_large in its error shape).
    client_max_body_size ${bodyLimit + 1024 * 1024};

    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host $host;
    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    proxy_set_header X-Forwarded-Proto $scheme;
    proxy_connect_timeout 5s;
    proxy_send_timeout ${requestTimeoutS + 10}s;
    proxy_read_timeout ${requestTimeoutS + 10}s;
    # Try the next instance only when this one could not be reached; nginx never resends a POST that
    # was already sent (a completion would be served, and billed, twice).
    proxy_next_upstream error timeout;
    proxy_next_upstream_tries 2;

    error_page 502 503 504 = @unavailable;
    error_page 413 = @too_large;

    location / {
      proxy_pass http://tollgate;
    }

    location @unavailable {
      default_type application/json;
      add_header Retry-After 1 always;
      add_header x-should-retry true always;
      return 503 '{"error":{"message":"No gateway instance is reachable right now; retry shortly.","type":"server_error","code":"service_unavailable"}}';
    }

    location @too_large {
      default_type application/json;
      add_header x-should-retry false always;
      return 413 '{"error":{"message":"Request body is too large.","type":"invalid_request_error","code":"request_too_large"}}';
    }
  }
}
`,
);
const test = spawnSync(nginxBin, ['-t', '-q', '-p', `${dir}/`, '-e', nginxLog, '-c', config], {
  encoding: 'utf8',
});
if (test.status !== 0) {
  process.stderr.write(test.stderr);
  await stopAll(1);
}
const nginx = start(
  nginxBin,
  ['-p', `${dir}/`, '-e', nginxLog, '-c', config, '-g', 'daemon off;'],
  join(dir, 'nginx.out'),
  {
    PATH: process.env.PATH ?? '',
  },
);
children.push({ child: nginx, kind: 'nginx' });
nginx.once('exit', (code, signal) => {
  if (!stopping) {
    process.stderr.write(`cluster: nginx exited (${code ?? signal}); see ${nginxLog}\n`);
    stopAll(1);
  }
});

const url = `http://127.0.0.1:${port}`;
const end = Date.now() + 15_000;
for (;;) {
  try {
    const res = await fetch(`${url}/healthz`);
    if (res.ok) break;
  } catch {
    // not listening yet
  }
  if (Date.now() > end) {
    process.stderr.write(`cluster: nginx did not answer on ${url}; see ${nginxLog}\n`);
    await stopAll(1);
  }
  await sleep(50);
}

process.stdout.write(
  `${JSON.stringify({
    url,
    instances,
    nginx: { pid: nginx.pid, config, log: nginxLog },
    dir,
    ...(simulator ? { simulator: simulator.url } : {}),
  })}\n`,
);
