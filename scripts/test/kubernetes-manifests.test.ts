// deploy/kubernetes against the Kubernetes schemas (kubernetes-models: types, required fields, enums,
// unknown fields) and against the weft CLI (every weft container's command and flags are what
// `weft <command> --help` lists), plus the references between the objects. No cluster here: the checks
// are schema-level. Each check is also shown to fail on a manifest broken on purpose.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { checkKustomization, isAppliedSeparately } from '../kubernetes/check-kustomization.js';
import { checkManifestDirectory, MANIFESTS_DIR, REPO_ROOT } from '../kubernetes/check-manifests.js';
import { checkReferences } from '../kubernetes/check-references.js';
import { checkSchemas, checkUnknownFields } from '../kubernetes/check-schemas.js';
import { checkWeftContainers } from '../kubernetes/check-weft-containers.js';
import { parseUsage } from '../kubernetes/cli-surface.js';
import { loadManifests, parseManifestText } from '../kubernetes/load-manifests.js';
import { formatProblem, type Manifest, type ManifestProblem } from '../kubernetes/manifest-problem.js';

// Mutations reach anywhere inside an object: a loose type on purpose, in this test only.
type Json = Record<string, any>;

const loaded = loadManifests(MANIFESTS_DIR);

function find(manifests: readonly Manifest[], kind: string, name: string): Manifest {
  const found = manifests.find((m) => m.object['kind'] === kind && (m.object['metadata'] as Json | undefined)?.['name'] === name);
  assert.ok(found, `${kind}/${name} is in deploy/kubernetes`);
  return found;
}

/** A deep copy of every manifest, with `change` applied to the object `kind/name`. */
function mutated(kind: string, name: string, change: (object: Json) => void): Manifest[] {
  const copy = loaded.manifests.map((m) => ({ ...m, object: structuredClone(m.object) }));
  change(find(copy, kind, name).object as Json);
  return copy;
}

function weftContainer(object: Json): Json {
  return object['spec']['template']['spec']['containers'].find((c: Json) => c['name'] === 'weft');
}

function argsOf(object: Json): string[] {
  return weftContainer(object)['args'];
}

function assertReported(problems: readonly ManifestProblem[], pattern: RegExp, what: string): void {
  assert.ok(problems.some((p) => pattern.test(formatProblem(p))), `${what}: expected a problem matching ${pattern}, got:\n${problems.map(formatProblem).join('\n') || '(none)'}`);
}

describe('deploy/kubernetes manifests', () => {
  let problems: ManifestProblem[] = [];
  before(async () => {
    problems = (await checkManifestDirectory()).problems;
  });

  it('has every part: Redis, shuffle servers, task executors, jobs, config, secrets, kustomization', () => {
    assert.deepEqual(loaded.problems, []);
    for (const [kind, name] of [
      ['StatefulSet', 'weft-redis'],
      ['Service', 'weft-redis'],
      ['StatefulSet', 'weft-shuffle-server'],
      ['Service', 'weft-shuffle-server'],
      ['Deployment', 'weft-task-executor'],
      ['PodDisruptionBudget', 'weft-task-executor'],
      ['Job', 'weft-word-count'],
      ['Job', 'weft-line-lengths'],
      ['ConfigMap', 'weft-config'],
      ['Secret', 'weft-shuffle-secret'],
      ['Secret', 'weft-aws'],
    ] as const) {
      find(loaded.manifests, kind, name);
    }
    assert.ok(loaded.kustomization, 'kustomization.yaml');
    const shuffle = find(loaded.manifests, 'StatefulSet', 'weft-shuffle-server').object as Json;
    assert.equal(shuffle['spec']['volumeClaimTemplates'][0]['metadata']['name'], 'data');
    // readiness on /healthz; liveness too for the shuffle server, /livez for the executor (its /healthz is 503 while it drains)
    for (const [object, live] of [[shuffle, '/healthz'], [find(loaded.manifests, 'Deployment', 'weft-task-executor').object as Json, '/livez']] as const) {
      const c = weftContainer(object);
      assert.equal(c['readinessProbe']['httpGet']['path'], '/healthz');
      assert.equal(c['livenessProbe']['httpGet']['path'], live);
      assert.ok(c['resources']['requests']['cpu'] && c['resources']['limits']['memory'], 'requests and limits');
      assert.ok(c['env'].some((e: Json) => e['name'] === 'WEFT_SHUFFLE_SECRET' && e['valueFrom']['secretKeyRef']['name'] === 'weft-shuffle-secret'));
    }
  });

  it('passes every check: schemas, unknown fields, the weft CLI, references, kustomization', () => {
    assert.deepEqual(problems.map(formatProblem), []);
  });

  it('a broken manifest fails: a YAML error, a wrong field type, a missing required field (the whole directory, as checked above)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-k8s-'));
    try {
      await cp(MANIFESTS_DIR, dir, { recursive: true });
      const redis = await readFile(join(dir, 'redis.yaml'), 'utf8');
      await writeFile(join(dir, 'redis.yaml'), redis.replace('  replicas: 1\n', '  replicas: one\n'));
      const executor = await readFile(join(dir, 'task-executor.yaml'), 'utf8');
      await writeFile(join(dir, 'task-executor.yaml'), executor.replace(/\n {2}selector:\n {4}matchLabels:\n {6}app.kubernetes.io\/name: weft-task-executor\n {2}template:/, '\n  template:'));
      await writeFile(join(dir, 'namespace.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: [weft\n');
      const broken = (await checkManifestDirectory(dir)).problems;
      assertReported(broken, /^redis\.yaml#2 \/spec\/replicas: StatefulSet\/weft-redis: must be integer/, 'wrong type');
      assertReported(broken, /^task-executor\.yaml#0 \/spec: Deployment\/weft-task-executor: must have required property selector/, 'missing field');
      assertReported(broken, /^namespace\.yaml#0: YAML: /, 'YAML syntax');
      // the same checks from the command line, for an operator: exit 1, the problems on stderr (on the
      // broken redis.yaml alone, which also has no kustomization.yaml beside it)
      const alone = join(dir, 'alone');
      await mkdir(alone);
      await cp(join(dir, 'redis.yaml'), join(alone, 'redis.yaml'));
      const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(process.execPath, ['--conditions=source', '--import', 'tsx', join(REPO_ROOT, 'scripts/kubernetes/check-manifests.ts'), alone], { cwd: REPO_ROOT }, (error, _stdout, stderr) => {
          resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stderr });
        });
      });
      assert.equal(run.code, 1);
      assert.match(run.stderr, /^redis\.yaml#2 \/spec\/replicas: StatefulSet\/weft-redis: must be integer/m);
      assert.match(run.stderr, /^kustomization\.yaml: missing/m);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the schemas refuse wrong types, missing required fields, bad enums and unknown fields, at their path', async () => {
    const cases: { label: string; kind: string; name: string; change: (o: Json) => void; expect: RegExp }[] = [
      { label: 'type', kind: 'StatefulSet', name: 'weft-shuffle-server', change: (o) => (o['spec']['replicas'] = 'two'), expect: /\/spec\/replicas: .*must be integer/ },
      { label: 'required', kind: 'Job', name: 'weft-word-count', change: (o) => delete o['spec']['template']['spec']['containers'][0]['name'], expect: /\/spec\/template\/spec\/containers\/0: .*required property name/ },
      { label: 'enum', kind: 'Job', name: 'weft-word-count', change: (o) => (o['spec']['template']['spec']['restartPolicy'] = 'Sometimes'), expect: /\/restartPolicy: .*allowed values/ },
      { label: 'port type', kind: 'Deployment', name: 'weft-task-executor', change: (o) => (weftContainer(o)['ports'][0]['containerPort'] = '7071'), expect: /containerPort: .*must be integer/ },
      { label: 'unknown', kind: 'Deployment', name: 'weft-task-executor', change: (o) => (weftContainer(o)['livenessProb'] = weftContainer(o)['livenessProbe']), expect: /\/spec\/template\/spec\/containers\/0\/livenessProb: .*unknown field "livenessProb"/ },
      { label: 'unknown nested', kind: 'StatefulSet', name: 'weft-shuffle-server', change: (o) => (o['spec']['volumeClaimTemplates'][0]['spec']['resources']['request'] = {}), expect: /volumeClaimTemplates\/0\/spec\/resources\/request: .*unknown field "request"/ },
      { label: 'kind', kind: 'Service', name: 'weft-redis', change: (o) => (o['kind'] = 'Servce'), expect: /no Kubernetes schema for apiVersion v1, kind Servce/ },
    ];
    // one batch (one TypeScript program for all): each case is its own document
    const batch = cases.map(({ label, kind, name, change }) => ({ ...find(mutated(kind, name, change), label === 'kind' ? 'Servce' : kind, name), file: `case:${label}` }));
    const found = [...(await checkSchemas(batch)), ...checkUnknownFields(batch, REPO_ROOT)];
    for (const { label, expect } of cases) assertReported(found.filter((p) => p.file === `case:${label}`), expect, label);
    // and the unbroken documents pass both
    const clean = loaded.manifests.filter((m) => m.object['kind'] === 'Deployment');
    assert.deepEqual([...(await checkSchemas(clean)), ...checkUnknownFields(clean, REPO_ROOT)], []);
  });

  it('reads each command\'s flags from its --help: values, required flags, positionals; not flags named in prose', () => {
    const surface = parseUsage('x', 'Usage: weft x <input> --port <n> [--mode a|b] [--json]\n\nOptions:\n  --port N   listen here\n  --mode M   how\n  --json     print JSON; see weft y --other VALUE\n    fixed:   --alpha N (default 1), --beta MS\n');
    assert.deepEqual(surface.required, ['--port']);
    assert.deepEqual(surface.positionals, ['<input>']);
    assert.deepEqual([...surface.flags].map(([f, i]) => `${f}${i.takesValue ? '=' : ''}`).sort(), ['--alpha=', '--beta=', '--help', '--json', '--mode=', '--port=']);
  });

  it('every weft container must use a command and flags the CLI has, as its --help says', async () => {
    const cases: { what: string; kind: string; name: string; change: (o: Json) => void; expect: RegExp }[] = [
      { what: 'unknown flag', kind: 'StatefulSet', name: 'weft-shuffle-server', change: (o) => (argsOf(o)[argsOf(o).indexOf('--port')] = '--prot'), expect: /weft shuffle-server has no flag --prot/ },
      { what: 'unknown command', kind: 'StatefulSet', name: 'weft-shuffle-server', change: (o) => (argsOf(o)[0] = 'shuffle-servre'), expect: /weft has no command "shuffle-servre"/ },
      { what: 'required flag', kind: 'StatefulSet', name: 'weft-shuffle-server', change: (o) => argsOf(o).splice(argsOf(o).indexOf('--dir'), 2), expect: /weft shuffle-server: missing --dir, which it requires/ },
      { what: 'missing value', kind: 'Deployment', name: 'weft-task-executor', change: (o) => argsOf(o).splice(argsOf(o).indexOf('--slots') + 1, 1), expect: /--slots needs a value/ },
      { what: 'boolean with a value', kind: 'Job', name: 'weft-word-count', change: (o) => (argsOf(o)[argsOf(o).indexOf('--json')] = '--json=yes'), expect: /weft run: --json takes no value/ },
      { what: 'job module', kind: 'Job', name: 'weft-word-count', change: (o) => argsOf(o).splice(1, 1), expect: /weft run takes <job module>, got none/ },
      { what: 'recovery flag', kind: 'Job', name: 'weft-word-count', change: (o) => (argsOf(o)[argsOf(o).indexOf('--restart-delay')] = '--restart-pause'), expect: /weft run has no flag --restart-pause/ },
      { what: 'a flag the command lacks', kind: 'Deployment', name: 'weft-task-executor', change: (o) => argsOf(o).push('--threads', '4'), expect: /weft task-executor .*has no flag --threads/ },
      { what: 'undefined variable', kind: 'Deployment', name: 'weft-task-executor', change: (o) => (argsOf(o)[argsOf(o).indexOf('--advertise-url') + 1] = 'http://$(POD_ADDR):7071'), expect: /\$\(POD_ADDR\) is not defined/ },
      { what: 'advertised port', kind: 'Deployment', name: 'weft-task-executor', change: (o) => (argsOf(o)[argsOf(o).indexOf('--advertise-url') + 1] = 'http://$(POD_IP):7072'), expect: /names port 7072, but --port is 7071/ },
      { what: 'port', kind: 'StatefulSet', name: 'weft-shuffle-server', change: (o) => (argsOf(o)[argsOf(o).indexOf('--port') + 1] = '8080'), expect: /--port 8080 is not one of the container's ports/ },
      { what: 'health probe', kind: 'StatefulSet', name: 'weft-shuffle-server', change: (o) => (weftContainer(o)['readinessProbe']['httpGet']['path'] = '/health'), expect: /readinessProbe: needs httpGet \/healthz/ },
      { what: 'data volume', kind: 'StatefulSet', name: 'weft-shuffle-server', change: (o) => (weftContainer(o)['volumeMounts'][0]['mountPath'] = '/data'), expect: /--dir \/var\/lib\/weft\/shuffle is on no volume/ },
      { what: 'entrypoint', kind: 'Deployment', name: 'weft-task-executor', change: (o) => (weftContainer(o)['command'] = ['node']), expect: /gives only args/ },
      { what: 'grace period', kind: 'StatefulSet', name: 'weft-shuffle-server', change: (o) => (o['spec']['template']['spec']['terminationGracePeriodSeconds'] = 30), expect: /terminationGracePeriodSeconds \(30\) must exceed --shutdown-timeout-ms \(45000 ms\)/ },
      { what: 'drain', kind: 'Deployment', name: 'weft-task-executor', change: (o) => (argsOf(o)[argsOf(o).indexOf('--drain-timeout-ms') + 1] = '400000'), expect: /terminationGracePeriodSeconds \(330\) must exceed --drain-timeout-ms \(400000 ms\)/ },
    ];
    for (const { what, kind, name, change, expect } of cases) assertReported(await checkWeftContainers(mutated(kind, name, change)), expect, what);
  });

  it('names must match across objects, and Secrets hold placeholders only', () => {
    const cases: { what: string; kind: string; name: string; change: (o: Json) => void; expect: RegExp }[] = [
      { what: 'secret key', kind: 'Deployment', name: 'weft-task-executor', change: (o) => (weftContainer(o)['env'][1]['valueFrom']['secretKeyRef']['key'] = 'SECRET'), expect: /Secret "weft-shuffle-secret" has no key "SECRET"/ },
      { what: 'configmap', kind: 'StatefulSet', name: 'weft-shuffle-server', change: (o) => (weftContainer(o)['envFrom'][0]['configMapRef']['name'] = 'weft-settings'), expect: /ConfigMap "weft-settings" is in none of the manifests/ },
      { what: 'selector', kind: 'Deployment', name: 'weft-task-executor', change: (o) => (o['spec']['selector']['matchLabels']['app.kubernetes.io/name'] = 'weft-executor'), expect: /selector .* does not match its pod template's labels/ },
      { what: 'service', kind: 'Service', name: 'weft-redis', change: (o) => (o['spec']['ports'][0]['targetPort'] = 'redis-port'), expect: /targetPort "redis-port" is no port of the pods it selects/ },
      { what: 'governing service', kind: 'StatefulSet', name: 'weft-shuffle-server', change: (o) => (o['spec']['serviceName'] = 'weft-redis'), expect: /serviceName "weft-redis" must name a headless Service/ },
      { what: 'volume', kind: 'Job', name: 'weft-line-lengths', change: (o) => (weftContainer(o)['volumeMounts'][0]['name'] = 'code'), expect: /mounts volume "code", which the pod does not have/ },
      { what: 'failure policy', kind: 'Job', name: 'weft-word-count', change: (o) => (o['spec']['podFailurePolicy']['rules'][0]['onExitCodes']['containerName'] = 'main'), expect: /names container "main"/ },
      { what: 'real secret', kind: 'Secret', name: 'weft-shuffle-secret', change: (o) => (o['stringData']['WEFT_SHUFFLE_SECRET'] = 'e3b0c44298fc1c149afbf4c8996fb924'), expect: /holds placeholders only/ },
      { what: 'real secret (data)', kind: 'Secret', name: 'weft-aws', change: (o) => (o['data'] = { AWS_SECRET_ACCESS_KEY: Buffer.from('wJalrXUtnFEMI').toString('base64') }), expect: /\/data\/AWS_SECRET_ACCESS_KEY: a Secret in the repository holds placeholders only/ },
    ];
    for (const { what, kind, name, change, expect } of cases) assertReported(checkReferences(mutated(kind, name, change)), expect, what);
  });

  it('kustomization.yaml lists every manifest but the Secret templates and jobs/', () => {
    const k = structuredClone(loaded.kustomization) as Json;
    assert.deepEqual(checkKustomization(k, loaded.files), []);
    k['resources'] = k['resources'].filter((r: string) => r !== 'redis.yaml').concat('redis-sentinel.yaml');
    const found = checkKustomization(k, loaded.files);
    assertReported(found, /redis\.yaml is not listed/, 'unlisted file');
    assertReported(found, /redis-sentinel\.yaml: no such manifest file/, 'missing file');
    assertReported(checkKustomization(undefined, loaded.files), /kustomization\.yaml: missing/, 'no kustomization');
  });

  it('kubectl kustomize renders the base: every object in the weft namespace, weft images tagged (skipped without kubectl)', async (t) => {
    const which = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
    if (which.status !== 0) {
      t.skip('kubectl is not installed (apt-get install kubectl)');
      return;
    }
    const render = spawnSync('kubectl', ['kustomize', MANIFESTS_DIR], { encoding: 'utf8' });
    assert.equal(render.status, 0, render.stderr);
    const rendered = parseManifestText('rendered', render.stdout);
    assert.deepEqual(rendered.problems, []);
    const base = loaded.manifests.filter((m) => !isAppliedSeparately(m.file));
    assert.equal(rendered.manifests.length, base.length);
    for (const m of rendered.manifests) {
      const metadata = m.object['metadata'] as Json;
      if (m.object['kind'] !== 'Namespace') assert.equal(metadata['namespace'], 'weft', `${String(m.object['kind'])}/${metadata['name']}`);
    }
    const images = rendered.manifests.flatMap((m) => JSON.stringify(m.object).match(/"image":"[^"]+"/g) ?? []);
    assert.ok(images.includes('"image":"weft:0.1.0"') && !images.includes('"image":"weft"'), images.join(' '));
    assert.deepEqual(await checkWeftContainers(rendered.manifests), []);
  });

  it('the ConfigMap job module is a working weft job (run here on local files, in-process)', async () => {
    const configMap = find(loaded.manifests, 'ConfigMap', 'weft-job-line-lengths').object as Json;
    // inside the repository, as /app/jobs/job.ts is inside /app in the image: @weft/engine resolves from node_modules
    const dir = await mkdtemp(join(REPO_ROOT, '.k8s-job-test-'));
    try {
      await writeFile(join(dir, 'job.ts'), configMap['data']['job.ts']);
      const lines = ['a', 'bb', 'cc', '', 'dddd', 'e', 'ff', 'g h'];
      await writeFile(join(dir, 'in.txt'), `${lines.join('\n')}\n`);
      const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const args = [join(REPO_ROOT, 'packages/cli/bin/weft.js'), 'run', join(dir, 'job.ts'), '--executor', 'inprocess', '--parallelism', '2', '--store', `file://${dir}/store`, '--meta', `sqlite://${dir}/meta.db`, '--', '--input', join(dir, 'in.txt'), '--output', join(dir, 'out.tsv')];
        execFile(process.execPath, args, { cwd: dir }, (error, _stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stderr }));
      });
      assert.equal(run.code, 0, run.stderr);
      const expected = new Map<number, number>();
      for (const line of lines) expected.set(line.length, (expected.get(line.length) ?? 0) + 1);
      const got = (await readFile(join(dir, 'out.tsv'), 'utf8')).trim().split('\n').map((l) => l.split('\t').map(Number) as [number, number]);
      assert.deepEqual(new Map(got), expected);
      assert.equal(got.length, expected.size);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the Dockerfile builds weft with npm ci on node:20-slim and keeps the entrypoint the manifests rely on', async () => {
    const dockerfile = await readFile(join(REPO_ROOT, 'deploy/Dockerfile'), 'utf8');
    assert.match(dockerfile, /^FROM node:20-slim/m);
    assert.match(dockerfile, /^RUN npm ci\b/m);
    assert.match(dockerfile, /^ENTRYPOINT \["\/usr\/bin\/tini", "--", "weft"\]$/m);
    const ignore = await readFile(join(REPO_ROOT, 'deploy/Dockerfile.dockerignore'), 'utf8');
    assert.match(ignore, /^\*\*\/node_modules$/m);
    assert.equal(parse('a: 1').a, 1); // the yaml parser the checks use
  });
});
