import { asRecord, asRecords, type Manifest } from './manifest-problem.js';

/** One pod template inside a manifest: its spec, its labels, and where it is. */
export interface PodTemplate {
  readonly manifest: Manifest;
  /** Path of the pod spec in the document (`/spec/template/spec`). */
  readonly path: string;
  readonly spec: Record<string, unknown>;
  readonly labels: Readonly<Record<string, unknown>>;
}

/** One container of a pod template, with its path. */
export interface ContainerAt {
  readonly template: PodTemplate;
  readonly path: string;
  readonly container: Record<string, unknown>;
}

const TEMPLATE_PATHS: Record<string, readonly string[]> = {
  Deployment: ['spec', 'template'],
  StatefulSet: ['spec', 'template'],
  DaemonSet: ['spec', 'template'],
  ReplicaSet: ['spec', 'template'],
  Job: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};

/** The pod templates of a manifest (a Pod's own spec counts as one). */
export function podTemplatesOf(manifest: Manifest): PodTemplate[] {
  const kind = String(manifest.object['kind']);
  if (kind === 'Pod') {
    const spec = asRecord(manifest.object['spec']);
    const labels = asRecord(asRecord(manifest.object['metadata'])?.['labels']) ?? {};
    return spec === undefined ? [] : [{ manifest, path: '/spec', spec, labels }];
  }
  const steps = TEMPLATE_PATHS[kind];
  if (steps === undefined) return [];
  let template: Record<string, unknown> | undefined = manifest.object;
  for (const step of steps) template = asRecord(template?.[step]);
  const spec = asRecord(template?.['spec']);
  if (template === undefined || spec === undefined) return [];
  const labels = asRecord(asRecord(template['metadata'])?.['labels']) ?? {};
  return [{ manifest, path: `/${steps.join('/')}/spec`, spec, labels }];
}

/** Every container (init containers included) of a pod template. */
export function containersOf(template: PodTemplate): ContainerAt[] {
  return (['initContainers', 'containers'] as const).flatMap((field) =>
    asRecords(template.spec[field]).map((container, i) => ({ template, path: `${template.path}/${field}/${i}`, container })),
  );
}

/** Whether a container runs the weft image (deploy/Dockerfile): `weft`, `weft:tag`, `registry/…/weft@sha`. */
export function isWeftImage(image: unknown): boolean {
  return typeof image === 'string' && /^(?:[^\s]*\/)?weft(?::[\w.-]+)?(?:@[\w:]+)?$/.test(image);
}
