import { join } from 'node:path';
import ts from 'typescript';
import { describeManifest, type Manifest, type ManifestProblem, problemAt } from './manifest-problem.js';

// Two checks of every object against the Kubernetes API schemas that kubernetes-models ships (its
// generated JSON-schema validators, and its TypeScript interfaces of the same schemas):
//  - the validators (ajv): wrong types, missing required fields, values outside an enum, bad formats;
//  - the interfaces: unknown fields. The validators let unknown fields through, and the API server
//    refuses them (kubectl's field validation is strict by default), so a misspelt `livenessProb`
//    must fail here too. An object literal typed by an interface gets TypeScript's excess-property check.

/** `kubernetes-models/<apiVersion>/<Kind>`: the module of one kind (core `v1` objects under `v1/`). */
function modelModule(apiVersion: string, kind: string): string {
  return `kubernetes-models/${apiVersion}/${kind}`;
}

interface ModelClass {
  new (data: unknown): { validate(): void };
}

interface AjvError {
  readonly instancePath: string;
  readonly message?: string;
  readonly params?: Record<string, unknown>;
}

function typeMeta(manifest: Manifest): { apiVersion: string; kind: string } | ManifestProblem {
  const { apiVersion, kind } = manifest.object;
  if (typeof apiVersion !== 'string' || !/^([a-z0-9.-]+\/)?v[0-9a-z]+$/.test(apiVersion)) return problemAt(manifest, '/apiVersion', `expected an API version such as "apps/v1", got ${JSON.stringify(apiVersion)}`);
  if (typeof kind !== 'string' || !/^[A-Z][A-Za-z0-9]*$/.test(kind)) return problemAt(manifest, '/kind', `expected a kind such as "Deployment", got ${JSON.stringify(kind)}`);
  return { apiVersion, kind };
}

/** The JSON-schema validation of every manifest (kubernetes-models' validators). */
export async function checkSchemas(manifests: readonly Manifest[]): Promise<ManifestProblem[]> {
  const problems: ManifestProblem[] = [];
  for (const manifest of manifests) {
    const meta = typeMeta(manifest);
    if ('message' in meta) {
      problems.push(meta);
      continue;
    }
    let Model: ModelClass | undefined;
    try {
      const module = (await import(modelModule(meta.apiVersion, meta.kind))) as Record<string, unknown>;
      Model = module[meta.kind] as ModelClass | undefined;
    } catch {
      Model = undefined;
    }
    if (Model === undefined) {
      problems.push(problemAt(manifest, '', `no Kubernetes schema for apiVersion ${meta.apiVersion}, kind ${meta.kind}`));
      continue;
    }
    try {
      new Model(manifest.object).validate();
    } catch (error) {
      const errors = (error as { errors?: AjvError[] }).errors;
      if (!Array.isArray(errors)) throw error;
      for (const e of errors) problems.push(problemAt(manifest, e.instancePath, `${describeManifest(manifest)}: ${e.message ?? 'invalid'}${e.params === undefined ? '' : ` ${JSON.stringify(e.params)}`}`));
    }
  }
  return problems;
}

const VIRTUAL_FILE = 'kubernetes-manifests.virtual.ts';

/**
 * The unknown-field check: every manifest as an object literal typed by its kind's interface
 * (`IStatefulSet` …), type-checked in memory; each diagnostic is mapped back to its manifest.
 * `root` is where `kubernetes-models` resolves from (the repository root).
 */
export function checkUnknownFields(manifests: readonly Manifest[], root: string): ManifestProblem[] {
  const spans: { manifest: Manifest; start: number; end: number }[] = [];
  const imports: string[] = [];
  let body = '';
  manifests.forEach((manifest, i) => {
    const meta = typeMeta(manifest);
    if ('message' in meta) return; // reported by checkSchemas
    imports.push(`import type { I${meta.kind} as T${i} } from ${JSON.stringify(modelModule(meta.apiVersion, meta.kind))};`);
    const line = `export const m${i}: T${i} = ${JSON.stringify(manifest.object, null, 1)};\n`;
    const start = body.length;
    body += line;
    spans.push({ manifest, start, end: body.length });
  });
  const head = `${imports.join('\n')}\n`;
  const text = head + body;
  const fileName = join(root, VIRTUAL_FILE);
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    skipLibCheck: true,
    types: [],
    lib: ['lib.es2022.d.ts'],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) => (name === fileName ? ts.createSourceFile(name, text, version) : getSourceFile(name, version, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === fileName || fileExists(name);
  const program = ts.createProgram({ rootNames: [fileName], options, host });
  const source = program.getSourceFile(fileName);
  const problems: ManifestProblem[] = [];
  for (const d of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '; ');
    const at = (d.start ?? 0) - head.length;
    const span = spans.find((s) => at >= s.start && at < s.end);
    if (span === undefined) {
      // an import that did not resolve: checkSchemas reports the missing kind; anything else is ours
      if (!/Cannot find module/.test(message)) problems.push({ file: '(schemas)', path: '', message });
      continue;
    }
    problems.push(problemAt(span.manifest, propertyPath(source, d.start ?? 0), `${describeManifest(span.manifest)}: ${unknownFieldMessage(message)}`));
  }
  return problems;
}

/** TypeScript's excess-property message, said as a Kubernetes user would: `unknown field "x" (…)`. */
function unknownFieldMessage(message: string): string {
  return message.replace(/^Object literal may only specify known properties, (?:and|but) '"?([^'"]+)"?' does not exist in type '([^']+)'\./, 'unknown field "$1" ($2 has no such field).');
}

/** The `/a/b/0/c` path of the property at `position` in the virtual file. */
function propertyPath(source: ts.SourceFile | undefined, position: number): string {
  if (source === undefined) return '';
  const parts: string[] = [];
  let node: ts.Node | undefined = findNode(source, position);
  while (node !== undefined && !ts.isVariableDeclaration(node)) {
    const parent: ts.Node | undefined = node.parent;
    if (ts.isPropertyAssignment(node)) parts.unshift(ts.isStringLiteral(node.name) ? node.name.text : node.name.getText(source));
    else if (parent !== undefined && ts.isArrayLiteralExpression(parent)) parts.unshift(String(parent.elements.indexOf(node as ts.Expression)));
    node = parent;
  }
  return parts.length === 0 ? '' : `/${parts.join('/')}`;
}

function findNode(node: ts.Node, position: number): ts.Node {
  for (const child of node.getChildren()) if (position >= child.getStart() && position < child.getEnd()) return findNode(child, position);
  return node;
}
