/** A Kubernetes manifest: one YAML document of one file. */
export interface Manifest {
  /** The file, relative to the manifests' root (deploy/kubernetes). */
  readonly file: string;
  /** The document's index in its file (0 for the first). */
  readonly index: number;
  readonly object: Record<string, unknown>;
}

/** One thing wrong with the manifests, where it is and what. */
export interface ManifestProblem {
  readonly file: string;
  /** The document's index in its file; undefined for a problem of the whole file. */
  readonly index?: number;
  /** JSON-pointer-like path inside the document (`/spec/replicas`), '' for the whole document. */
  readonly path: string;
  readonly message: string;
}

/** `file#index /path: message`, for test output and the command line. */
export function formatProblem(problem: ManifestProblem): string {
  const where = problem.index === undefined ? problem.file : `${problem.file}#${problem.index}`;
  return `${where}${problem.path === '' ? '' : ` ${problem.path}`}: ${problem.message}`;
}

/** The problem's constructor for one manifest. */
export function problemAt(manifest: Manifest, path: string, message: string): ManifestProblem {
  return { file: manifest.file, index: manifest.index, path, message };
}

/** The object's `kind/name` (for messages). */
export function describeManifest(manifest: Manifest): string {
  const metadata = manifest.object['metadata'] as { name?: unknown } | undefined;
  return `${String(manifest.object['kind'])}/${String(metadata?.name)}`;
}

/** `value` as a plain object, or undefined. */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** `value` as an array of plain objects (anything else in it dropped), or []. */
export function asRecords(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.map(asRecord).filter((v): v is Record<string, unknown> => v !== undefined) : [];
}
