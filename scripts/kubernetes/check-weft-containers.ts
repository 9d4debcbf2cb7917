import { type CliSurface, cliSurface } from './cli-surface.js';
import { asRecord, asRecords, type Manifest, type ManifestProblem, problemAt } from './manifest-problem.js';
import { type ContainerAt, containersOf, isWeftImage, podTemplatesOf } from './pod-templates.js';

// The weft containers (image `weft`, deploy/Dockerfile) against the weft CLI: the command and every flag
// must be ones `weft <command> --help` lists, values where a flag takes one, the required flags and
// positionals there; every $(VAR) defined; --port a containerPort; --advertise-url on that port; the grace
// period longer than --shutdown-timeout-ms. So a manifest cannot drift from the CLI unnoticed.

/** The env names a container defines: `env`, and the keys of the ConfigMaps / Secrets of its `envFrom`. */
function definedNames(at: ContainerAt, manifests: readonly Manifest[]): Set<string> {
  const names = new Set(asRecords(at.container['env']).map((e) => String(e['name'])));
  for (const source of asRecords(at.container['envFrom'])) {
    const prefix = typeof source['prefix'] === 'string' ? source['prefix'] : '';
    for (const [refField, kind] of [['configMapRef', 'ConfigMap'], ['secretRef', 'Secret']] as const) {
      const name = asRecord(source[refField])?.['name'];
      if (name === undefined) continue;
      const object = manifests.find((m) => m.object['kind'] === kind && asRecord(m.object['metadata'])?.['name'] === name)?.object;
      for (const field of ['data', 'stringData']) for (const key of Object.keys(asRecord(object?.[field]) ?? {})) names.add(prefix + key);
    }
  }
  return names;
}

function containerPorts(at: ContainerAt): { name?: string; port: number }[] {
  return asRecords(at.container['ports']).map((p) => ({ ...(typeof p['name'] === 'string' ? { name: p['name'] } : {}), port: Number(p['containerPort']) }));
}

/** The flags given, by name (the last value wins, as node:util parseArgs does), and the problems of argv. */
function parseArgv(argv: readonly string[], surface: CliSurface, report: (message: string) => void): Map<string, string | true> {
  const given = new Map<string, string | true>();
  const positionals: string[] = [];
  const where = `weft ${surface.command}`;
  for (let i = 1; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') break; // the job's own arguments
    if (!token.startsWith('-') || token === '-') {
      positionals.push(token);
      continue;
    }
    const eq = token.indexOf('=');
    const flag = eq === -1 ? token : token.slice(0, eq);
    const info = surface.flags.get(flag);
    if (info === undefined) {
      report(`${where} has no flag ${flag} (see weft ${surface.command} --help)`);
      continue;
    }
    if (!info.takesValue) {
      if (eq !== -1) report(`${where}: ${flag} takes no value`);
      given.set(flag, true);
      continue;
    }
    const value = eq !== -1 ? token.slice(eq + 1) : argv[i + 1];
    if (value === undefined || (eq === -1 && value.startsWith('--'))) {
      report(`${where}: ${flag} needs a value`);
      continue;
    }
    if (eq === -1) i++;
    given.set(flag, value);
  }
  for (const flag of surface.required) if (!given.has(flag)) report(`${where}: missing ${flag}, which it requires`);
  if (positionals.length !== surface.positionals.length) {
    report(`${where} takes ${surface.positionals.length === 0 ? 'no positional argument' : surface.positionals.join(' ')}, got ${positionals.length === 0 ? 'none' : positionals.map((p) => JSON.stringify(p)).join(' ')}`);
  }
  return given;
}

/**
 * Every problem of the weft containers of `manifests`. `surfaceOf` says what a command accepts (default:
 * its `--help` in this checkout, see cli-surface.ts).
 */
export async function checkWeftContainers(manifests: readonly Manifest[], surfaceOf: (command: string) => Promise<CliSurface | undefined> = cliSurface): Promise<ManifestProblem[]> {
  const problems: ManifestProblem[] = [];
  for (const manifest of manifests) {
    for (const template of podTemplatesOf(manifest)) {
      for (const at of containersOf(template)) {
        if (!isWeftImage(at.container['image'])) continue;
        const report = (path: string, message: string): void => {
          problems.push(problemAt(manifest, at.path + path, message));
        };
        if (at.container['command'] !== undefined) report('/command', "a weft container gives only args: command would replace the image's entrypoint (tini, which passes SIGTERM on and reaps workers)");
        const argv = Array.isArray(at.container['args']) ? at.container['args'].map(String) : [];
        const names = definedNames(at, manifests);
        argv.forEach((arg, i) => {
          for (const m of arg.matchAll(/(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)) {
            if (!names.has(m[1]!)) report(`/args/${i}`, `$(${m[1]}) is not defined in the container's env or envFrom: Kubernetes would pass it on literally`);
          }
        });
        const name = argv[0];
        const surface = name === undefined ? undefined : await surfaceOf(name);
        if (surface === undefined) {
          report('/args/0', name === undefined ? 'a weft container needs args: the weft command and its flags' : `weft has no command ${JSON.stringify(name)} (see weft --help)`);
          continue;
        }
        const given = parseArgv(argv, surface, (message) => report('/args', message));
        checkPorts(at, given, report);
        if (SERVES_HEALTHZ.has(surface.command)) checkHealthProbes(at, given, report, surface.command);
        const dir = given.get('--dir');
        const mounts = asRecords(at.container['volumeMounts']).map((m) => String(m['mountPath']).replace(/\/+$/, ''));
        if (typeof dir === 'string' && !mounts.some((m) => dir === m || dir.startsWith(`${m}/`))) {
          report('/volumeMounts', `--dir ${dir} is on no volume: the image's own filesystem is lost with the container (mounted: ${mounts.join(', ') || 'nothing'})`);
        }
        const drain = DRAIN_FLAGS[surface.command];
        if (drain !== undefined) {
          const drainMs = Number(given.get(drain.flag) ?? drain.defaultMs);
          const grace = Number(template.spec['terminationGracePeriodSeconds'] ?? 30);
          if (grace * 1000 <= drainMs) report('', `terminationGracePeriodSeconds (${grace}) must exceed ${drain.flag} (${drainMs} ms), or Kubernetes kills weft ${surface.command} mid-drain`);
        }
      }
    }
  }
  return problems;
}

/** How long each draining command's SIGTERM drain may take: its flag and that flag's default. */
const DRAIN_FLAGS: Readonly<Record<string, { flag: string; defaultMs: number }>> = {
  'shuffle-server': { flag: '--shutdown-timeout-ms', defaultMs: 30_000 },
  'task-executor': { flag: '--drain-timeout-ms', defaultMs: 30_000 },
};

/** The commands that serve `GET /healthz` on their --port. */
const SERVES_HEALTHZ = new Set(['shuffle-server', 'task-executor']);

/**
 * The path each command's liveness probe must use: the task executor's `/healthz` turns 503 while it
 * drains (readiness: no new work), so liveness is its `/livez`, green until it exits.
 */
const LIVENESS_PATH: Readonly<Record<string, string>> = { 'shuffle-server': '/healthz', 'task-executor': '/livez' };

/** Readiness (`GET /healthz`) and liveness (LIVENESS_PATH) probes on the port --port names (by number or by port name). */
function checkHealthProbes(at: ContainerAt, given: ReadonlyMap<string, string | true>, report: (path: string, message: string) => void, command: string): void {
  const port = given.get('--port');
  const names = new Set(containerPorts(at).filter((p) => String(p.port) === port).map((p) => p.name));
  for (const probe of ['readinessProbe', 'livenessProbe']) {
    const path = probe === 'livenessProbe' ? (LIVENESS_PATH[command] ?? '/healthz') : '/healthz';
    const httpGet = asRecord(asRecord(at.container[probe])?.['httpGet']);
    const target = httpGet?.['port'];
    const onPort = String(target) === port || (typeof target === 'string' && names.has(target));
    if (httpGet?.['path'] !== path || !onPort) report(`/${probe}`, `needs httpGet ${path} on --port ${String(port)} (the ${String(at.container['name'])} container serves it there)`);
  }
}

/** --port is a containerPort; --advertise-url names that port; probes name a port the container has. */
function checkPorts(at: ContainerAt, given: ReadonlyMap<string, string | true>, report: (path: string, message: string) => void): void {
  const ports = containerPorts(at);
  const port = given.get('--port');
  if (typeof port === 'string' && !ports.some((p) => String(p.port) === port)) report('/ports', `--port ${port} is not one of the container's ports (${ports.map((p) => p.port).join(', ') || 'none'})`);
  const advertised = given.get('--advertise-url');
  if (typeof advertised === 'string' && typeof port === 'string') {
    let url: URL | undefined;
    try {
      url = new URL(advertised.replace(/\$\([A-Za-z0-9_]+\)/g, 'x'));
    } catch {
      report('/args', `--advertise-url ${JSON.stringify(advertised)} is not a URL`);
    }
    if (url !== undefined && url.port !== port) report('/args', `--advertise-url ${advertised} names port ${url.port || '(default)'}, but --port is ${port}`);
  }
  for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
    const handler = asRecord(asRecord(at.container[probe])?.['httpGet']) ?? asRecord(asRecord(at.container[probe])?.['tcpSocket']);
    const target = handler?.['port'];
    if (target === undefined) continue;
    const found = typeof target === 'number' ? ports.some((p) => p.port === target) : ports.some((p) => p.name === target);
    if (!found) report(`/${probe}`, `${probe} probes port ${JSON.stringify(target)}, which the container does not declare`);
  }
}
