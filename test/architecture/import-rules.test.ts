import { readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The import rules of `src/` and `bench/`, read off the real module graph: every `import`, `export … from`,
 * `import type`, `import()` and `typeof import()` of every `.ts` file of `src/` and `bench/` that
 * tsconfig.json compiles, resolved by the TypeScript compiler as tsc resolves it. docs/architecture.md,
 * "Allowed imports" and "Layers inside store/", states the same tables; the last tests check that it does.
 */

/**
 * Which folders of `src/` each folder may import. Every folder may also import the files at the root of
 * `src/` (errors.ts, json-depth.ts, random.ts, redact-url.ts, version.ts), which import no folder — except `runtime/`,
 * which imports nothing of the project at all: bin/tollgate loads it before any other module.
 * The table must stay a DAG; config/ sits on money/ and providers/ only, which import no folder.
 */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  money: [],
  providers: [],
  simulator: [],
  runtime: [],
  types: [],
  config: ['money', 'providers'],
  store: ['config', 'money', 'providers'],
  routing: ['config', 'providers'],
  auth: ['store', 'config'],
  billing: ['store', 'config', 'money', 'providers'],
  cluster: ['auth', 'routing', 'config'],
  gateway: ['billing', 'routing', 'store', 'config', 'providers'],
  metrics: ['gateway', 'routing', 'config', 'providers'],
  api: ['gateway', 'auth', 'billing', 'routing', 'store', 'config', 'money', 'providers'],
  dashboard: ['auth', 'billing', 'routing', 'store', 'config', 'money', 'providers'],
  http: [
    'api',
    'dashboard',
    'metrics',
    'gateway',
    'cluster',
    'auth',
    'billing',
    'routing',
    'store',
    'config',
    'money',
    'providers',
  ],
  cli: [
    'http',
    'simulator',
    'runtime',
    'cluster',
    'gateway',
    'auth',
    'billing',
    'routing',
    'store',
    'config',
    'money',
    'providers',
  ],
};

/** The files at the root of `src/`: importable by every folder but `runtime/`. */
const ROOT = '(root)';
/** Folders that may not import even the root files. */
const SELF_CONTAINED = new Set(['runtime']);

/** The route layers and the app that assembles them: the only folders that know Fastify. */
const FASTIFY_FOLDERS = new Set(['http', 'api', 'dashboard']);
const FASTIFY = /^(fastify|@fastify\/[^/]+)(\/|$)/;

/** `undici/…` (anything but the package's own entry) reaches into undici's internals. */
const UNDICI_DEEP = /^undici\/./;
/**
 * Known deep imports, each with why. Listed here so the rule holds for every other file; an entry whose
 * import is gone is simply unused.
 */
const UNDICI_DEEP_EXCEPTIONS: readonly { file: string; specifier: string; why: string }[] = [
  {
    file: 'src/providers/upstream-client.ts',
    specifier: 'undici/lib/dispatcher/agent.js',
    why: "undici's Agent on its own, without loading the whole package (see the file)",
  },
];

/**
 * The layers of `store/`, bottom to top, and which layers below its own each may import (a file may also
 * import the files of its own layer). `contract` declares the interfaces and records the rest of the
 * project talks to, and imports no implementation; `rules` are the other files at the top of `store/`
 * (schema, migrations, the ledger's rules, the options, `composeStore`); `shared/` holds the queries both
 * databases run alike; `sqlite/` and `postgres/` build a store each and never import each other; `entry`
 * picks one. docs/architecture.md, "Layers inside store/", states the same table.
 */
const STORE_LAYERS: Readonly<Record<string, readonly string[]>> = {
  contract: [],
  rules: ['contract'],
  shared: ['rules', 'contract'],
  sqlite: ['shared', 'rules', 'contract'],
  postgres: ['shared', 'rules', 'contract'],
  entry: ['sqlite', 'postgres', 'shared', 'rules', 'contract'],
};
/** The files at the top of `store/` that are not `rules`. */
const STORE_FILES: Readonly<Record<string, readonly string[]>> = {
  contract: ['types.ts', 'records.ts', 'dashboard-types.ts', 'topup-code-types.ts'],
  entry: ['index.ts', 'inspect-database.ts'],
};

const REPO = join(import.meta.dirname, '..', '..');
const SRC = join(REPO, 'src');
const BENCH = join(REPO, 'bench');

/** Whether `file` (absolute) lies under `dir`. */
function under(dir: string, file: string): boolean {
  return !relative(dir, file).startsWith('..');
}

interface Import {
  /** The importing file, relative to the repository (`src/store/index.ts`). */
  from: string;
  specifier: string;
  line: number;
  typeOnly: boolean;
  /** The imported file relative to the repository, when it is a file of `src/` or `bench/`. */
  to: string | undefined;
}

function readGraph(): { files: string[]; benchFiles: string[]; imports: Import[] } {
  const configPath = join(REPO, 'tsconfig.json');
  const read = ts.readConfigFile(configPath, ts.sys.readFile);
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, REPO, undefined, configPath);
  const files = parsed.fileNames.filter((f) => under(SRC, f));
  const benchFiles = parsed.fileNames.filter((f) => under(BENCH, f));
  const cache = ts.createModuleResolutionCache(REPO, (f) => f, parsed.options);
  const imports: Import[] = [];
  for (const file of [...files, ...benchFiles]) {
    const text = readFileSync(file, 'utf8');
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
    const add = (literal: ts.Node, typeOnly: boolean) => {
      if (!ts.isStringLiteralLike(literal)) return;
      const specifier = literal.text;
      let to: string | undefined;
      if (specifier.startsWith('.')) {
        const resolved = ts.resolveModuleName(specifier, file, parsed.options, ts.sys, cache).resolvedModule;
        const target = resolved?.resolvedFileName ?? join(dirname(file), specifier.replace(/\.js$/, '.ts'));
        if (under(SRC, target) || under(BENCH, target)) to = repoPath(target);
      }
      const line = source.getLineAndCharacterOfPosition(literal.getStart(source)).line + 1;
      imports.push({ from: repoPath(file), specifier, line, typeOnly, to });
    };
    const visit = (node: ts.Node) => {
      if (ts.isImportDeclaration(node)) {
        add(node.moduleSpecifier, node.importClause?.isTypeOnly ?? false);
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
        add(node.moduleSpecifier, node.isTypeOnly);
      } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
        add(node.moduleReference.expression, node.isTypeOnly);
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const [first] = node.arguments;
        if (first) add(first, false);
      } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
        add(node.argument.literal, true);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { files: files.map(repoPath), benchFiles: benchFiles.map(repoPath), imports };
}

function repoPath(file: string): string {
  return relative(REPO, file).split(sep).join('/');
}

/** Whether a repository path is a file of `src/`. */
function inSrc(file: string): boolean {
  return file.startsWith('src/');
}

/** `src/store/index.ts` → `store`; `src/errors.ts` → the root. */
function folderOf(file: string): string {
  const parts = file.split('/');
  return parts.length === 2 ? ROOT : (parts[1] as string);
}

function show(i: Import): string {
  return `${i.from}:${i.line} ${i.typeOnly ? 'import type' : 'imports'} '${i.specifier}'`;
}

function label(folder: string): string {
  return folder === ROOT ? 'the root files of src/' : `${folder}/`;
}

/** Strongly connected components of more than one node (Tarjan). */
function cycles(nodes: Iterable<string>, next: (node: string) => Iterable<string>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (v: string) => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of nodes) if (!index.has(v)) connect(v);
  return found;
}

/**
 * The import cycles among `nodes`, following `edges` (the imports each file makes that count), each as one
 * closed path with the import of every step.
 */
function fileCycles(
  nodes: string[],
  edges: Map<string, Import[]>,
  where: (file: string) => string,
): string[] {
  const next = (f: string) => [...new Set((edges.get(f) ?? []).map((i) => i.to as string))].sort();
  return cycles(nodes.slice().sort(), next).map((component) => {
    const loop = loopThrough(component, next);
    const steps = loop
      .slice(1)
      .map((to, n) => `  ${show((edges.get(loop[n] as string) ?? []).find((i) => i.to === to) as Import)}`);
    const all = component.length > loop.length - 1 ? ` (one of the loops among ${component.join(', ')})` : '';
    return `file cycle in ${where(loop[0] as string)}: ${loop.join(' → ')}${all}\n${steps.join('\n')}`;
  });
}

/** One closed path through a component: start → … → start, each step an edge of `next`. */
function loopThrough(component: string[], next: (node: string) => Iterable<string>): string[] {
  const inside = new Set(component);
  const start = component[0] as string;
  const seen = new Set<string>();
  const path: string[] = [];
  const walk = (v: string): boolean => {
    path.push(v);
    seen.add(v);
    for (const w of next(v)) {
      if (w === start) return true;
      if (inside.has(w) && !seen.has(w) && walk(w)) return true;
    }
    path.pop();
    return false;
  };
  walk(start);
  return [...path, start];
}

const { files, benchFiles, imports } = readGraph();
const linked = imports.filter((i) => i.to !== undefined) as (Import & { to: string })[];
/** The imports of the files of `src/`. */
const srcImports = imports.filter((i) => inSrc(i.from));
/** The imports from a file of `src/` to a file of `src/`. */
const internal = linked.filter((i) => inSrc(i.from) && inSrc(i.to));

/** The layer of a file of `store/` (see `STORE_LAYERS`): its subfolder, or its row in `STORE_FILES`. */
function storeLayerOf(file: string): string {
  const inStore = file.slice('src/store/'.length);
  const slash = inStore.indexOf('/');
  if (slash >= 0) return inStore.slice(0, slash);
  return Object.keys(STORE_FILES).find((layer) => STORE_FILES[layer]?.includes(inStore)) ?? 'rules';
}
const folders = [...new Set(files.map(folderOf))].filter((f) => f !== ROOT).sort();

/** The imports of `from` folder into `to` folder. */
function crossing(from: string, to: string): Import[] {
  return internal.filter((i) => folderOf(i.from) === from && folderOf(i.to) === to);
}

describe('import rules of src/ and bench/ (docs/architecture.md, "Allowed imports")', () => {
  it('reads the module graph', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(internal.length).toBeGreaterThan(200);
    expect(benchFiles.length).toBeGreaterThan(10);
    expect(linked.filter((i) => !inSrc(i.from)).length).toBeGreaterThan(20);
  });

  it('has a row in the table for every folder of src/, and the table has no cycle', () => {
    const problems: string[] = [];
    for (const folder of folders) {
      if (!(folder in ALLOWED)) {
        problems.push(
          `src/${folder}/ is in no row of ALLOWED (test/architecture/import-rules.test.ts): add it, and its line to docs/architecture.md`,
        );
      }
    }
    for (const component of cycles(Object.keys(ALLOWED), (f) => ALLOWED[f] ?? [])) {
      problems.push(`the table itself has a cycle: ${component.join(', ')}`);
    }
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('(a) has no cycle among the folders of src/', () => {
    const edges = new Map<string, Set<string>>();
    for (const i of internal) {
      const [a, b] = [folderOf(i.from), folderOf(i.to)];
      if (a === b) continue;
      if (!edges.has(a)) edges.set(a, new Set());
      edges.get(a)?.add(b);
    }
    const next = (f: string) => [...(edges.get(f) ?? [])].sort();
    const problems = cycles([...edges.keys()].sort(), next).map((component) => {
      const loop = loopThrough(component, next);
      const steps = loop.slice(1).map((to, n) => {
        const from = loop[n] as string;
        const first = crossing(from, to)[0] as Import;
        return `  ${label(from)} → ${label(to)}: ${show(first)}`;
      });
      return `folder cycle ${loop.map(label).join(' → ')}\n${steps.join('\n')}`;
    });
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('(b) imports across folders only as the table allows', () => {
    const problems: string[] = [];
    for (const i of internal) {
      const [from, to] = [folderOf(i.from), folderOf(i.to)];
      if (from === to) continue;
      const allowed = from === ROOT ? [] : (ALLOWED[from] ?? []);
      if (to === ROOT ? !SELF_CONTAINED.has(from) : allowed.includes(to)) continue;
      const may = allowed.length === 0 ? 'no folder' : allowed.map((f) => `${f}/`).join(', ');
      const root = from === ROOT || SELF_CONTAINED.has(from) ? '' : ' (and the root files)';
      problems.push(`${show(i)}: ${label(from)} may not import ${label(to)}; it may import ${may}${root}`);
    }
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('(c) imports Fastify only in http/, api/ and dashboard/', () => {
    const problems = srcImports
      .filter((i) => FASTIFY.test(i.specifier) && !FASTIFY_FOLDERS.has(folderOf(i.from)))
      .map(
        (i) =>
          `${show(i)}: only ${[...FASTIFY_FOLDERS].map((f) => `${f}/`).join(', ')} know Fastify; ` +
          `${label(folderOf(i.from))} takes and returns plain values`,
      );
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it("(d) does not reach into undici's internals (undici/…), but for the listed exceptions", () => {
    const problems = srcImports
      .filter((i) => UNDICI_DEEP.test(i.specifier))
      .filter((i) => !UNDICI_DEEP_EXCEPTIONS.some((e) => e.file === i.from && e.specifier === i.specifier))
      .map((i) => `${show(i)}: a deep import of undici; import from 'undici' itself`);
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('(e) has no import cycle between the files of one folder', () => {
    const edges = new Map<string, Import[]>();
    for (const i of internal) {
      if (folderOf(i.from) !== folderOf(i.to) || i.from === i.to) continue;
      edges.set(i.from, [...(edges.get(i.from) ?? []), i]);
    }
    const problems = fileCycles(files, edges, (f) => label(folderOf(f)));
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('(f) layers store/: each layer imports only those below it, sqlite/ and postgres/ not each other', () => {
    const problems: string[] = [];
    const storeFiles = files.filter((f) => folderOf(f) === 'store');
    for (const layer of new Set(storeFiles.map(storeLayerOf))) {
      if (!(layer in STORE_LAYERS)) {
        problems.push(
          `src/store/${layer}/ is in no layer of STORE_LAYERS: add it, and its row to docs/architecture.md`,
        );
      }
    }
    for (const i of internal) {
      if (folderOf(i.from) !== 'store' || folderOf(i.to) !== 'store') continue;
      const [from, to] = [storeLayerOf(i.from), storeLayerOf(i.to)];
      const allowed = STORE_LAYERS[from] ?? [];
      if (from === to || allowed.includes(to)) continue;
      const may = allowed.length === 0 ? 'no other layer' : allowed.join(', ');
      problems.push(`${show(i)}: store/ layer ${from} may not import layer ${to}; it may import ${may}`);
    }
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('(g) bench/ has no import cycle among its files, and src/ imports nothing of bench/', () => {
    const problems = linked
      .filter((i) => inSrc(i.from) && !inSrc(i.to))
      .map((i) => `${show(i)}: src/ may not import bench/`);
    const edges = new Map<string, Import[]>();
    for (const i of linked) {
      if (inSrc(i.from) || inSrc(i.to) || i.from === i.to) continue;
      edges.set(i.from, [...(edges.get(i.from) ?? []), i]);
    }
    problems.push(...fileCycles(benchFiles, edges, () => 'bench/'));
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('(i) reads process.env only in config/, which reads the configuration once', () => {
    const problems = files
      .map((file) => relative(REPO, file).split(sep).join('/'))
      .filter((file) => !file.startsWith('src/config/'))
      .filter((file) => /\bprocess\.env\b/.test(readFileSync(join(REPO, file), 'utf8')))
      .map((file) => `${file} reads process.env: take the setting from src/config/ instead`);
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('(h) reaches billing/ only through billing/billing.ts, its public face', () => {
    const face = join('src', 'billing', 'billing.ts');
    const problems = internal
      .filter((i) => folderOf(i.to) === 'billing' && folderOf(i.from) !== 'billing')
      .filter((i) => relative(REPO, i.to) !== face)
      .map((i) => `${show(i)}: import billing/billing.ts, which exports what billing/ offers`);
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('is the table docs/architecture.md states', () => {
    const doc = readFileSync(join(REPO, 'docs', 'architecture.md'), 'utf8');
    const section = doc.split(/^## /m).find((s) => s.startsWith('Allowed imports'));
    expect(section, 'docs/architecture.md has no "## Allowed imports" section').toBeDefined();
    const stated: Record<string, string[]> = {};
    for (const [, folder, cell] of (section ?? '').matchAll(/^\| `([a-z-]+)\/` \| ([^|]*) \|/gm)) {
      stated[folder as string] = [...(cell ?? '').matchAll(/`([a-z-]+)\/`/g)]
        .map((m) => m[1] as string)
        .sort();
    }
    const problems: string[] = [];
    for (const folder of new Set([...Object.keys(ALLOWED), ...Object.keys(stated)])) {
      const inTest = ALLOWED[folder] ? [...ALLOWED[folder]].sort().join(', ') : '(no row)';
      const inDoc = stated[folder] ? stated[folder].join(', ') : '(no row)';
      if (inTest !== inDoc) problems.push(`${folder}/: the test allows [${inTest}], the doc says [${inDoc}]`);
    }
    expect(problems, `docs/architecture.md, "Allowed imports", differs:\n${problems.join('\n')}`).toEqual([]);
  });

  it('is the layering of store/ docs/architecture.md states', () => {
    const doc = readFileSync(join(REPO, 'docs', 'architecture.md'), 'utf8');
    const section = doc.split(/^## /m).find((s) => s.startsWith('Layers inside `store/`'));
    expect(section, 'docs/architecture.md has no "## Layers inside `store/`" section').toBeDefined();
    const problems: string[] = [];
    const stated = new Map<string, { files: string[]; mayImport: string[] }>();
    for (const [, layer, files, cell] of (section ?? '').matchAll(
      /^\| ([a-z]+) \| ([^|]*) \| ([^|]*) \|/gm,
    )) {
      if (layer === 'layer') continue;
      stated.set(layer as string, {
        files: [...(files ?? '').matchAll(/`([a-z-]+\.ts)`/g)].map((m) => m[1] as string).sort(),
        mayImport: (cell ?? '')
          .split(',')
          .map((w) => w.trim())
          .filter((w) => w !== '' && w !== '—')
          .sort(),
      });
    }
    for (const layer of new Set([...Object.keys(STORE_LAYERS), ...stated.keys()])) {
      const inTest = STORE_LAYERS[layer] ? [...STORE_LAYERS[layer]].sort().join(', ') : '(no row)';
      const inDoc = stated.get(layer)?.mayImport.join(', ') ?? '(no row)';
      if (inTest !== inDoc) problems.push(`${layer}: the test allows [${inTest}], the doc says [${inDoc}]`);
      const files = STORE_FILES[layer];
      const docFiles = stated.get(layer)?.files.join(', ') ?? '';
      if (files && [...files].sort().join(', ') !== docFiles) {
        problems.push(
          `${layer}: the test lists the files [${[...files].sort().join(', ')}], the doc [${docFiles}]`,
        );
      }
    }
    expect(
      problems,
      `docs/architecture.md, "Layers inside store/", differs:\n${problems.join('\n')}`,
    ).toEqual([]);
  });
});
