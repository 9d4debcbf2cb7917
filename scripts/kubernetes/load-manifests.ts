import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { asRecord, type Manifest, type ManifestProblem } from './manifest-problem.js';

/** The kustomize file: not a Kubernetes object, checked on its own (check-kustomization.ts). */
export const KUSTOMIZATION_FILE = 'kustomization.yaml';

/** What `loadManifests` read: every object of every YAML file, the kustomization, and what did not parse. */
export interface LoadedManifests {
  readonly manifests: Manifest[];
  readonly kustomization?: Record<string, unknown>;
  /** Every YAML file found, relative to the root, '/'-separated. */
  readonly files: string[];
  readonly problems: ManifestProblem[];
}

function yamlFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yamlFiles(path, out);
    else if (/\.ya?ml$/.test(name)) out.push(path);
  }
  return out;
}

/**
 * Parses YAML text of one file into manifests: every non-empty document must be a mapping. Syntax errors
 * (and YAML warnings such as duplicate keys) are problems, never thrown.
 */
export function parseManifestText(file: string, text: string): { manifests: Manifest[]; problems: ManifestProblem[] } {
  const manifests: Manifest[] = [];
  const problems: ManifestProblem[] = [];
  parseAllDocuments(text, { uniqueKeys: true, prettyErrors: false }).forEach((doc, index) => {
    if (!('errors' in doc)) {
      problems.push({ file, path: '', message: 'not a YAML stream' });
      return;
    }
    for (const error of [...doc.errors, ...doc.warnings]) problems.push({ file, index, path: '', message: `YAML: ${error.message}` });
    if (doc.errors.length > 0) return;
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return;
    const object = asRecord(value);
    if (object === undefined) problems.push({ file, index, path: '', message: 'a document must be a mapping (a Kubernetes object)' });
    else manifests.push({ file, index, object });
  });
  return { manifests, problems };
}

/** Reads every *.yaml / *.yml under `root`, recursively. */
export function loadManifests(root: string): LoadedManifests {
  const manifests: Manifest[] = [];
  const problems: ManifestProblem[] = [];
  const files: string[] = [];
  let kustomization: Record<string, unknown> | undefined;
  for (const path of yamlFiles(root)) {
    const file = relative(root, path).split(sep).join('/');
    files.push(file);
    const parsed = parseManifestText(file, readFileSync(path, 'utf8'));
    problems.push(...parsed.problems);
    if (file === KUSTOMIZATION_FILE) kustomization = parsed.manifests[0]?.object;
    else manifests.push(...parsed.manifests);
  }
  return { manifests, files, problems, ...(kustomization === undefined ? {} : { kustomization }) };
}
