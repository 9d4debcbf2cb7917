import { asRecord, type ManifestProblem } from './manifest-problem.js';
import { KUSTOMIZATION_FILE } from './load-manifests.js';

/**
 * Files kept out of kustomization.yaml on purpose: Secret templates (an apply must never overwrite the
 * real Secrets with placeholders) and jobs/ (one Job per run, applied when wanted).
 */
export function isAppliedSeparately(file: string): boolean {
  return file.startsWith('jobs/') || /(^|\/)secrets[^/]*\.ya?ml$/.test(file);
}

/** kustomization.yaml: its kind, and that it lists exactly the YAML files that are not applied separately. */
export function checkKustomization(kustomization: Record<string, unknown> | undefined, files: readonly string[]): ManifestProblem[] {
  const file = KUSTOMIZATION_FILE;
  if (kustomization === undefined) return [{ file, path: '', message: 'missing: `kubectl apply -k deploy/kubernetes` needs it' }];
  const problems: ManifestProblem[] = [];
  if (kustomization['apiVersion'] !== 'kustomize.config.k8s.io/v1beta1' || kustomization['kind'] !== 'Kustomization') {
    problems.push({ file, index: 0, path: '', message: 'expected apiVersion kustomize.config.k8s.io/v1beta1, kind Kustomization' });
  }
  const resources = kustomization['resources'];
  const listed = Array.isArray(resources) ? resources.map(String) : [];
  if (!Array.isArray(resources)) problems.push({ file, index: 0, path: '/resources', message: 'expected a list of files' });
  for (const resource of listed) {
    if (!files.includes(resource)) problems.push({ file, index: 0, path: '/resources', message: `${resource}: no such manifest file` });
  }
  for (const candidate of files) {
    if (candidate === file || isAppliedSeparately(candidate) || listed.includes(candidate)) continue;
    problems.push({ file, index: 0, path: '/resources', message: `${candidate} is not listed: \`kubectl apply -k\` would leave it out` });
  }
  for (const image of Array.isArray(kustomization['images']) ? kustomization['images'] : []) {
    if (typeof asRecord(image)?.['name'] !== 'string') problems.push({ file, index: 0, path: '/images', message: 'every image override needs a name' });
  }
  return problems;
}
