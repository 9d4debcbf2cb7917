import { Buffer } from 'node:buffer';
import { asRecord, asRecords, describeManifest, type Manifest, type ManifestProblem, problemAt } from './manifest-problem.js';
import { containersOf, podTemplatesOf } from './pod-templates.js';

// What the API server's schemas do not see and a rollout would: names that must match across objects
// (Secret and ConfigMap references, selectors, a StatefulSet's governing Service, a Job's failure policy's
// container), and Secrets that must hold placeholders only.

/** What every value of a Secret in these manifests must contain: they are templates, never real values. */
export const SECRET_PLACEHOLDER = 'CHANGE-ME';

function nameOf(manifest: Manifest): unknown {
  return asRecord(manifest.object['metadata'])?.['name'];
}

function find(manifests: readonly Manifest[], kind: string, name: unknown): Manifest | undefined {
  return manifests.find((m) => m.object['kind'] === kind && nameOf(m) === name);
}

function keysOf(manifest: Manifest): Set<string> {
  return new Set(['data', 'stringData', 'binaryData'].flatMap((f) => Object.keys(asRecord(manifest.object[f]) ?? {})));
}

function matches(selector: Readonly<Record<string, unknown>>, labels: Readonly<Record<string, unknown>>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** Every cross-reference and placeholder problem of `manifests`. */
export function checkReferences(manifests: readonly Manifest[]): ManifestProblem[] {
  const problems: ManifestProblem[] = [];
  const templates = manifests.flatMap(podTemplatesOf);
  const ref = (manifest: Manifest, path: string, kind: 'Secret' | 'ConfigMap', name: unknown, key?: unknown): void => {
    const target = find(manifests, kind, name);
    if (target === undefined) problems.push(problemAt(manifest, path, `${kind} ${JSON.stringify(name)} is in none of the manifests`));
    else if (key !== undefined && !keysOf(target).has(String(key))) problems.push(problemAt(manifest, path, `${kind} ${JSON.stringify(name)} has no key ${JSON.stringify(key)}`));
  };
  for (const template of templates) {
    const { manifest } = template;
    for (const at of containersOf(template)) {
      asRecords(at.container['env']).forEach((env, i) => {
        const from = asRecord(env['valueFrom']);
        const secret = asRecord(from?.['secretKeyRef']);
        const config = asRecord(from?.['configMapKeyRef']);
        if (secret !== undefined && secret['optional'] !== true) ref(manifest, `${at.path}/env/${i}`, 'Secret', secret['name'], secret['key']);
        if (config !== undefined && config['optional'] !== true) ref(manifest, `${at.path}/env/${i}`, 'ConfigMap', config['name'], config['key']);
      });
      asRecords(at.container['envFrom']).forEach((source, i) => {
        const secret = asRecord(source['secretRef']);
        const config = asRecord(source['configMapRef']);
        if (secret !== undefined && secret['optional'] !== true) ref(manifest, `${at.path}/envFrom/${i}`, 'Secret', secret['name']);
        if (config !== undefined && config['optional'] !== true) ref(manifest, `${at.path}/envFrom/${i}`, 'ConfigMap', config['name']);
      });
      const volumes = new Set(asRecords(template.spec['volumes']).map((v) => v['name']));
      for (const claim of asRecords(asRecord(manifest.object['spec'])?.['volumeClaimTemplates'])) volumes.add(asRecord(claim['metadata'])?.['name']);
      asRecords(at.container['volumeMounts']).forEach((mount, i) => {
        if (!volumes.has(mount['name'])) problems.push(problemAt(manifest, `${at.path}/volumeMounts/${i}`, `mounts volume ${JSON.stringify(mount['name'])}, which the pod does not have`));
      });
    }
    asRecords(template.spec['volumes']).forEach((volume, i) => {
      const config = asRecord(volume['configMap']);
      const secret = asRecord(volume['secret']);
      if (config !== undefined && config['optional'] !== true) ref(manifest, `${template.path}/volumes/${i}`, 'ConfigMap', config['name']);
      if (secret !== undefined && secret['optional'] !== true) ref(manifest, `${template.path}/volumes/${i}`, 'Secret', secret['secretName']);
    });
    const spec = asRecord(manifest.object['spec']);
    const selector = asRecord(asRecord(spec?.['selector'])?.['matchLabels']);
    if (selector !== undefined && !matches(selector, template.labels)) problems.push(problemAt(manifest, '/spec/selector', `${describeManifest(manifest)}: selector ${JSON.stringify(selector)} does not match its pod template's labels ${JSON.stringify(template.labels)}`));
    const serviceName = spec?.['serviceName'];
    if (manifest.object['kind'] === 'StatefulSet') {
      const service = find(manifests, 'Service', serviceName);
      if (service === undefined || asRecord(service.object['spec'])?.['clusterIP'] !== 'None') problems.push(problemAt(manifest, '/spec/serviceName', `${describeManifest(manifest)}: serviceName ${JSON.stringify(serviceName)} must name a headless Service (clusterIP: None) in the manifests`));
    }
    const containerNames = new Set(containersOf(template).map((at) => at.container['name']));
    asRecords(asRecord(spec?.['podFailurePolicy'])?.['rules']).forEach((rule, i) => {
      const name = asRecord(rule['onExitCodes'])?.['containerName'];
      if (name !== undefined && !containerNames.has(name)) problems.push(problemAt(manifest, `/spec/podFailurePolicy/rules/${i}`, `names container ${JSON.stringify(name)}, which the pod does not have`));
    });
  }
  for (const manifest of manifests) {
    if (manifest.object['kind'] === 'Service') checkService(manifest, templates, problems);
    if (manifest.object['kind'] === 'Secret') {
      for (const [field, decode] of [['stringData', (v: string) => v], ['data', (v: string) => Buffer.from(v, 'base64').toString('utf8')]] as const) {
        for (const [key, value] of Object.entries(asRecord(manifest.object[field]) ?? {})) {
          if (!decode(String(value)).includes(SECRET_PLACEHOLDER)) problems.push(problemAt(manifest, `/${field}/${key}`, `a Secret in the repository holds placeholders only (${SECRET_PLACEHOLDER}), never a real value: create the real one with kubectl (docs/kubernetes.md)`));
        }
      }
    }
  }
  return problems;
}

/** A Service selects some pod template, and its named target ports are ports of that template. */
function checkService(manifest: Manifest, templates: ReturnType<typeof podTemplatesOf>, problems: ManifestProblem[]): void {
  const spec = asRecord(manifest.object['spec']);
  const selector = asRecord(spec?.['selector']);
  if (selector === undefined) return;
  const selected = templates.filter((t) => matches(selector, t.labels));
  if (selected.length === 0) {
    problems.push(problemAt(manifest, '/spec/selector', `${describeManifest(manifest)} selects no pod template of the manifests (${JSON.stringify(selector)})`));
    return;
  }
  asRecords(spec?.['ports']).forEach((port, i) => {
    const target = port['targetPort'] ?? port['port'];
    const has = selected.some((t) => containersOf(t).some((at) => asRecords(at.container['ports']).some((p) => (typeof target === 'number' ? p['containerPort'] === target : p['name'] === target))));
    if (!has) problems.push(problemAt(manifest, `/spec/ports/${i}`, `${describeManifest(manifest)}: targetPort ${JSON.stringify(target)} is no port of the pods it selects`));
  });
}
