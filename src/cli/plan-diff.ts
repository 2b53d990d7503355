/**
 * `helm-operator plan diff -f cr.yaml [-n NS]` (docs/plans.md): what applying a CR manifest would
 * do, before it is applied: the plan the operator would make for it (operator/plan-preview.ts),
 * printed as `plan show` prints a pending one. Thin: it reads the manifest and the watches file,
 * picks the watch, and prints; a manifest it cannot use is a PlanError naming file:line.
 */
import { readFile } from 'node:fs/promises';
import { isMap, LineCounter, parseAllDocuments, type Document, type YAMLError } from 'yaml';
import type { Watch } from '../config/watch.js';
import { loadWatches } from '../config/watches.js';
import type { CustomResource } from '../k8s/custom-resources.js';
import { loadKubeConfig } from '../k8s/kubeconfig.js';
import { readFingerprintKey } from '../operator/fingerprint-key.js';
import { previewPlan } from '../operator/plan-preview.js';
import { PlanPreviewRefused, planSeals, type UpgradePlan } from '../reconciler/index.js';
import { silentLogger } from '../telemetry/logger.js';
import { apiVersionOf } from '../util/group-kind.js';
import { isPlainObject } from '../util/plain-object.js';
import { PlanError, planLines, type PlanDiffFlags } from './plan.js';

export async function planDiffCommand(f: PlanDiffFlags): Promise<string> {
  const { cr, lineOf } = await readManifest(f.file);
  const namespace = namespaceOf(cr, f, lineOf('namespace'));
  const watch = watchOf(await loadWatches(f.watchesFile), cr, { file: f.file, line: lineOf('kind'), watchesFile: f.watchesFile });
  const planned = structuredClone(cr);
  planned.metadata.namespace = namespace;
  const fingerprintKey = await operatorKey(f);
  const settings = {
    helmBinary: f.helmBinary,
    log: silentLogger(),
    ...(f.kubeconfig === undefined ? {} : { kubeconfig: f.kubeconfig }),
    ...(f.defaultServiceAccount === undefined ? {} : { defaultServiceAccount: f.defaultServiceAccount }),
    ...(fingerprintKey === undefined ? {} : { fingerprintKey }),
  };
  const plan = await previewPlan(settings, watch, planned).catch((err: unknown) => {
    if (err instanceof PlanPreviewRefused)
      throw new PlanError(`${f.file}: the operator would refuse ${cr.kind} ${namespace}/${cr.metadata.name}: ${err.message}`);
    throw err;
  });
  const text = diffText(plan, { kind: cr.kind, namespace, name: cr.metadata.name, file: f.file });
  return fingerprintKey === undefined && planSeals(plan) ? `${text}\n${NOT_THE_OPERATORS_DIGEST}` : text;
}

/**
 * Said when the plan hides values and the operator's key could not be read: the digest seals them
 * under a key of this process (docs/adr/0107), so the operator's plan of the same change has
 * another digest; what the plan shows is the same.
 */
export const NOT_THE_OPERATORS_DIGEST =
  "note: this plan hides or cuts values, sealed in its digest under the operator's key, which you cannot read (--operator-namespace names where it is): the operator's plan of this change shows the same, with another digest";

/** The operator's fingerprint key, where the caller may read it (a platform admin); undefined otherwise. */
async function operatorKey(f: PlanDiffFlags): Promise<Buffer | undefined> {
  if (f.operatorNamespace === undefined) return undefined;
  return readFingerprintKey(loadKubeConfig(f.kubeconfig), f.operatorNamespace).catch(() => undefined);
}

/** Pure: what `plan diff` prints. */
export function diffText(
  plan: UpgradePlan,
  cr: { readonly kind: string; readonly namespace: string; readonly name: string; readonly file: string },
): string {
  return [`plan ${plan.digest} of ${cr.kind} ${cr.namespace}/${cr.name} from ${cr.file} (not applied)`, ...planLines(plan)].join('\n');
}

/** The one CR of the file, and the line of its `kind` or `metadata.namespace` (for messages). */
async function readManifest(file: string): Promise<{ cr: CustomResource; lineOf: (key: 'kind' | 'namespace') => number }> {
  const { doc, lines } = await oneDocument(file);
  const at = (node: unknown): number => lines.linePos((node as { range?: [number] } | null)?.range?.[0] ?? 0).line;
  const raw: unknown = doc.toJS();
  if (!isPlainObject(raw) || !isMap(doc.contents)) throw new PlanError(`${file}:${at(doc.contents)}: not a mapping: give one CR manifest`);
  const missing = ['apiVersion', 'kind'].find((k) => typeof raw[k] !== 'string' || raw[k] === '');
  if (missing !== undefined) throw new PlanError(`${file}:${at(doc.contents)}: the manifest has no ${missing}`);
  const metadata = isPlainObject(raw.metadata) ? raw.metadata : {};
  if (typeof metadata.name !== 'string' || metadata.name === '')
    throw new PlanError(`${file}:${at(doc.get('metadata', true) ?? doc.contents)}: the manifest has no metadata.name`);
  const nodeOf = (key: 'kind' | 'namespace'): unknown =>
    key === 'kind' ? doc.get('kind', true) : (doc.getIn(['metadata', 'namespace'], true) ?? doc.get('metadata', true));
  return { cr: raw as unknown as CustomResource, lineOf: (key) => at(nodeOf(key) ?? doc.contents) };
}

/** The file's one YAML document; unreadable, a syntax error or another number of documents is a PlanError with file:line. */
async function oneDocument(file: string): Promise<{ doc: Document.Parsed; lines: LineCounter }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message;
    throw new PlanError(`${file}: cannot read the CR manifest: ${why}`);
  }
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter: lines, uniqueKeys: true });
  const all = Array.isArray(docs) ? docs : [];
  const err = all.flatMap((d) => d.errors)[0];
  if (err !== undefined) throw new PlanError(`${file}:${syntaxError(err)}`);
  const used = all.filter((d) => d.contents !== null);
  const doc = used[0];
  if (used.length !== 1 || doc === undefined) throw new PlanError(`${file}:1: ${used.length} YAML documents in it: give one CR manifest`);
  return { doc, lines };
}

/** Pure: `line:col: reason` of a YAML error (its own location text moved into the prefix). */
function syntaxError(err: YAMLError): string {
  const pos = err.linePos?.[0];
  const reason = (err.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
  return `${pos?.line ?? 1}:${pos?.col ?? 1}: ${reason}`;
}

/** Pure: the CR's namespace: the manifest's, else `-n`, else `default`; the two must agree (as kubectl). */
function namespaceOf(cr: CustomResource, f: Pick<PlanDiffFlags, 'file' | 'namespace'>, line: number): string {
  const own = cr.metadata.namespace;
  if (own !== undefined && f.namespace !== undefined && own !== f.namespace)
    throw new PlanError(`${f.file}:${line}: the manifest's namespace ${own} is not -n ${f.namespace}`);
  return own ?? f.namespace ?? 'default';
}

/** Pure: the watch of the CR's kind. */
function watchOf(watches: readonly Watch[], cr: CustomResource, at: { file: string; line: number; watchesFile: string }): Watch {
  const watch = watches.find((w) => w.kind === cr.kind && apiVersionOf(w) === cr.apiVersion);
  if (watch !== undefined) return watch;
  const watched = watches.map((w) => `${w.kind} (${apiVersionOf(w)})`).join(', ');
  throw new PlanError(
    `${at.file}:${at.line}: ${cr.kind} (${cr.apiVersion}) is not a kind ${at.watchesFile} watches${watched === '' ? '' : `; it watches ${watched}`}`,
  );
}
