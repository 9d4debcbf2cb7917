#!/usr/bin/env node
// Fails on what breaks the architecture (docs/DESIGN.md, STYLE.md):
//  - a runtime import cycle between source files (type-only imports are erased and do not count), through
//    relative imports and through `@weft/<name>[/sub]` imports alike (the latter resolved to the file the target's
//    `exports[sub].source` names, the repository's convention);
//  - a cycle between packages: package A's src/ importing package B (type-only imports included: A then needs B
//    built first) while B's src/ imports A, directly or through other packages;
//  - any file, in a package or not (examples/, bench/, scripts/, a package's bench/), importing a package's
//    files by path (a relative or absolute path into packages/<name>/ from outside that package), through
//    `/src/`, or by a subpath the target's `exports` map does not open: sibling packages are imported by
//    name only;
//  - @weft/engine importing a shuffle implementation or @weft/cluster (it is handed a TaskExecutorProvider); @weft/shuffle-api importing any package at all;
//  - the shuffle server importing the shuffle client.
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const rootArg = process.argv.indexOf('--root');
const root = rootArg > 0 ? resolve(process.argv[rootArg + 1]) : fileURLToPath(new URL('..', import.meta.url));
const problems = [];

const packages = new Map(); // name -> { dir, exports: Map<subpath, source file | undefined> }
for (const dir of readdirSync(join(root, 'packages'))) {
  const pj = join(root, 'packages', dir, 'package.json');
  if (!existsSync(pj)) continue;
  const json = JSON.parse(readFileSync(pj, 'utf8'));
  const exports = new Map();
  for (const [subpath, entry] of Object.entries(json.exports ?? { '.': {} })) {
    const source = entry !== null && typeof entry === 'object' && typeof entry.source === 'string' ? entry.source : undefined;
    exports.set(subpath, source === undefined ? undefined : resolve(root, 'packages', dir, source));
  }
  packages.set(json.name, { dir: join(root, 'packages', dir), exports });
}

function sourceFiles(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (/\.(ts|mts|js|mjs)$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const importPattern = /(?:^|[;\s])(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;

function importsOf(file) {
  const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const out = [];
  for (const m of text.matchAll(importPattern)) {
    const specifier = m[3] ?? m[4];
    const typeOnly = Boolean(m[2]) || /^import\s+type\s|^export\s+type\s/.test(m[0].trim());
    out.push({ specifier, typeOnly });
  }
  return out;
}

function packageOf(file) {
  for (const [name, info] of packages) if (file.startsWith(info.dir + sep)) return name;
  return undefined;
}

/** Whether `file` is part of `name`'s shipped code (src/), not its tests or benchmarks. */
function isPackageSource(name, file) {
  return file.startsWith(join(packages.get(name).dir, 'src') + sep);
}

function resolveRelative(from, specifier) {
  const base = resolve(dirname(from), specifier);
  const candidates = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

const graph = new Map();
const packageGraph = new Map(); // package name -> Map<imported package name, first file of the importer that imports it>
for (const name of packages.keys()) packageGraph.set(name, new Map());
// Every source file of the repository (sourceFiles skips node_modules, dist and dot-folders).
const files = sourceFiles(root);
for (const file of files) {
  const rel = relative(root, file);
  const fromPackage = packageOf(file);
  const edges = [];
  for (const { specifier, typeOnly } of importsOf(file)) {
    if (specifier.startsWith('.') || specifier.startsWith('/')) {
      const target = resolveRelative(file, specifier);
      // Judge where the path points even when no file is there: a path into a package is wrong either way.
      const toPackage = packageOf(target ?? resolve(dirname(file), specifier));
      if (toPackage !== undefined && toPackage !== fromPackage) {
        problems.push(`${rel}: imports ${specifier}, a path into ${toPackage}${fromPackage === undefined ? '' : ` from ${fromPackage}`}; import ${toPackage} by name`);
      }
      if (target && !typeOnly) edges.push(target);
      continue;
    }
    if (specifier.includes('/src/') || /^@weft\/[^/]+\/src/.test(specifier)) {
      problems.push(`${rel}: deep import ${specifier}`);
    }
    const m = /^(@weft\/[^/]+)(\/.*)?$/.exec(specifier);
    if (m) {
      const target = packages.get(m[1]);
      const subpath = m[2] ? `.${m[2]}` : '.';
      if (target && !target.exports.has(subpath)) problems.push(`${rel}: imports ${specifier}, which ${m[1]} does not export`);
      const source = target?.exports.get(subpath);
      if (source !== undefined && existsSync(source) && !typeOnly) edges.push(source);
      if (target && fromPackage !== undefined && m[1] !== fromPackage && isPackageSource(fromPackage, file)) {
        const importers = packageGraph.get(fromPackage);
        if (!importers.has(m[1])) importers.set(m[1], rel);
      }
      if (fromPackage === '@weft/engine' && /^@weft\/cluster(\/|$)/.test(specifier) && rel.includes(`${sep}src${sep}`)) {
        problems.push(`${rel}: the engine imports @weft/cluster (${specifier}); it must be handed a TaskExecutorProvider`);
      }
      if (fromPackage === '@weft/engine' && /^@weft\/shuffle-(memory|remote)/.test(specifier) && rel.includes(`${sep}src${sep}`)) {
        problems.push(`${rel}: the engine imports a shuffle implementation (${specifier}); it must be handed one`);
      }
    }
    if (fromPackage === '@weft/shuffle-api' && rel.includes(`${sep}src${sep}`) && !specifier.startsWith('node:')) {
      problems.push(`${rel}: @weft/shuffle-api has no dependencies, but imports ${specifier}`);
    }
  }
  graph.set(file, edges);
}

for (const [file, edges] of graph) {
  const rel = relative(root, file);
  if (rel.includes(`shuffle-remote${sep}src${sep}server${sep}`)) {
    for (const target of edges) {
      if (relative(root, target).includes(`shuffle-remote${sep}src${sep}client${sep}`)) {
        problems.push(`${rel}: the shuffle server imports the client (${relative(root, target)})`);
      }
    }
  }
}

/** Tarjan's strongly connected components, iterative; returns the components of more than one node. */
function cycles(g) {
  let index = 0;
  const indexOf = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const found = [];
  for (const start of g.keys()) {
    if (indexOf.has(start)) continue;
    const work = [[start, 0]];
    indexOf.set(start, index); low.set(start, index); index++; stack.push(start); onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const [node, i] = frame;
      const edges = g.get(node) ?? [];
      if (i < edges.length) {
        frame[1]++;
        const next = edges[i];
        if (!indexOf.has(next)) {
          indexOf.set(next, index); low.set(next, index); index++; stack.push(next); onStack.add(next);
          work.push([next, 0]);
        } else if (onStack.has(next)) {
          low.set(node, Math.min(low.get(node), indexOf.get(next)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(node)));
      }
      if (low.get(node) === indexOf.get(node)) {
        const component = [];
        let member;
        do { member = stack.pop(); onStack.delete(member); component.push(member); } while (member !== node);
        if (component.length > 1) found.push(component);
      }
    }
  }
  return found;
}

/** One closed path through a strongly connected `component` of `g`, starting and ending at its first node. */
function cyclePath(g, component) {
  const inside = new Set(component);
  const start = component[0];
  const previous = new Map();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const next of g.get(node) ?? []) {
      if (!inside.has(next)) continue;
      if (next === start) {
        const path = [start];
        for (let at = node; at !== start; at = previous.get(at)) path.unshift(at);
        path.unshift(start);
        return path;
      }
      if (!previous.has(next)) { previous.set(next, node); queue.push(next); }
    }
  }
  return [...component, start];
}

for (const component of cycles(graph)) {
  problems.push(`import cycle: ${cyclePath(graph, component).map((f) => relative(root, f)).join(' -> ')}`);
}

const packageEdges = new Map([...packageGraph].map(([name, importers]) => [name, [...importers.keys()]]));
for (const component of cycles(packageEdges)) {
  const path = cyclePath(packageEdges, component);
  const via = path.slice(0, -1).map((name, i) => `${packageGraph.get(name).get(path[i + 1])} imports ${path[i + 1]}`);
  problems.push(`package import cycle: ${path.join(' -> ')} (${via.join('; ')})`);
}

if (problems.length > 0) {
  for (const p of problems) console.error(`lint: ${p}`);
  process.exit(1);
}
console.log(`lint: ${graph.size} files, no cycles, package boundaries kept`);
