import { fileURLToPath } from 'node:url';
import { checkKustomization } from './check-kustomization.js';
import { checkReferences } from './check-references.js';
import { checkSchemas, checkUnknownFields } from './check-schemas.js';
import { checkWeftContainers } from './check-weft-containers.js';
import { loadManifests } from './load-manifests.js';
import { formatProblem, type Manifest, type ManifestProblem } from './manifest-problem.js';

/** The repository root (where kubernetes-models resolves from) and the manifests under it. */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const MANIFESTS_DIR = fileURLToPath(new URL('../../deploy/kubernetes', import.meta.url));

/**
 * Every check of a set of parsed manifests: the Kubernetes schemas (types, required fields, enums, formats,
 * unknown fields), the weft containers against the weft CLI, and the references between objects.
 */
export async function checkManifestObjects(manifests: readonly Manifest[]): Promise<ManifestProblem[]> {
  return [...(await checkSchemas(manifests)), ...checkUnknownFields(manifests, REPO_ROOT), ...(await checkWeftContainers(manifests)), ...checkReferences(manifests)];
}

/** Loads every manifest under `dir` (default deploy/kubernetes) and checks all of it, kustomization included. */
export async function checkManifestDirectory(dir: string = MANIFESTS_DIR): Promise<{ manifests: Manifest[]; files: string[]; problems: ManifestProblem[] }> {
  const loaded = loadManifests(dir);
  const problems = [...loaded.problems, ...checkKustomization(loaded.kustomization, loaded.files), ...(await checkManifestObjects(loaded.manifests))];
  return { manifests: loaded.manifests, files: loaded.files, problems };
}

// `node --conditions=source --import tsx scripts/kubernetes/check-manifests.ts [dir]`: the same checks, for
// an operator editing the manifests; exit 1 listing the problems.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { files, problems } = await checkManifestDirectory(process.argv[2]);
  for (const problem of problems) process.stderr.write(`${formatProblem(problem)}\n`);
  process.stdout.write(`${files.length} files, ${problems.length} problems\n`);
  process.exitCode = problems.length === 0 ? 0 : 1;
}
