/**
 * The bundle commands as the CLI calls them: read the kustomize output, plan, write through the
 * scaffold machinery's writer, and return what to print.
 */
import { readFile } from 'node:fs/promises';
import path, { basename } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { applyPlan, formatPlan, formatResults } from '../machinery/index.js';
import { readProject } from '../machinery/project.js';
import { BundleInputError, manifestFileName } from './csv.js';
import { isPlainObject } from '../util/plain-object.js';
import { generateBundle } from './generate.js';
import { kustomizeManifests } from './kustomize-manifests.js';
import { previousCsv, upgradeEdge, type UpgradeEdge } from './upgrade-edge.js';
import { isK8sObject, type K8sObject } from './types.js';
import { formatFindings, readBundleDir, validateBundle } from './validate.js';

export interface WriteFlags {
  readonly root: string;
  readonly force: boolean;
  readonly dryRun: boolean;
}

/** --package, else the PROJECT file's projectName, else the directory name (operator-sdk's order). */
export async function packageName(root: string, flag: string | undefined): Promise<string> {
  if (flag !== undefined) return flag;
  try {
    return (await readProject(root)).projectName;
  } catch {
    return basename(root);
  }
}

const report = (results: Awaited<ReturnType<typeof applyPlan>>, plan: Parameters<typeof formatPlan>[0], dryRun: boolean): string[] => [
  ...(dryRun ? ['plan:', formatPlan(plan), ''] : []),
  formatResults(results, dryRun),
];

export async function runKustomizeManifests(f: WriteFlags & { readonly packageName?: string }): Promise<string> {
  const pkg = await packageName(f.root, f.packageName);
  const plan = kustomizeManifests(pkg);
  return report(await applyPlan(f.root, plan, { force: f.force, dryRun: f.dryRun }), plan, f.dryRun).join('\n');
}

export function parseObjects(text: string, source: string): K8sObject[] {
  const out: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    const [first] = doc.errors;
    if (first !== undefined) throw new BundleInputError(`${source}: not valid YAML: ${first.message}`);
    const v: unknown = doc.toJS();
    if (v === null || v === undefined) continue;
    if (!isK8sObject(v)) throw new BundleInputError(`${source}: a document is not a Kubernetes object (apiVersion, kind, metadata.name)`);
    out.push(v);
  }
  return out;
}

export interface GenerateBundleFlags extends WriteFlags {
  readonly input: string;
  readonly inputName: string;
  readonly version: string;
  readonly channels: readonly string[];
  readonly defaultChannel?: string;
  readonly packageName?: string;
  readonly useImageDigests: boolean;
  readonly outputDir: string;
  readonly shardedReplicas?: number;
  readonly builderVersion: string;
  readonly now: Date;
}

/** `replaces` from the CSV the previous `generate bundle` left in the output directory (upgrade-edge.ts). */
async function edgeFromDisk(f: GenerateBundleFlags, pkg: string, objects: readonly K8sObject[]): Promise<UpgradeEdge> {
  const file = path.join(
    f.root,
    f.outputDir,
    'manifests',
    manifestFileName({ apiVersion: '', kind: 'ClusterServiceVersion', metadata: { name: '' } }, pkg),
  );
  const text = await readFile(file, 'utf8').catch(() => undefined);
  let previous: unknown;
  try {
    previous = text === undefined ? undefined : parse(text);
  } catch {
    previous = undefined; // a CSV that no longer parses is regenerated; it names no edge
  }
  const base = objects.find((o) => o.kind === 'ClusterServiceVersion')?.['spec'];
  const baseReplaces = isPlainObject(base) && typeof base['replaces'] === 'string' ? base['replaces'] : undefined;
  const prev = previousCsv(previous);
  return upgradeEdge({
    packageName: pkg,
    version: f.version,
    ...(baseReplaces === undefined ? {} : { baseReplaces }),
    ...(prev === undefined ? {} : { previous: prev }),
  });
}

export async function runGenerateBundle(f: GenerateBundleFlags): Promise<string> {
  const pkg = await packageName(f.root, f.packageName);
  const objects = parseObjects(f.input, f.inputName);
  const edge = await edgeFromDisk(f, pkg, objects);
  const { plan, notes } = generateBundle({
    objects,
    ...(edge.replaces === undefined ? {} : { replaces: edge.replaces }),
    version: f.version,
    packageName: pkg,
    createdAt: f.now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    builderVersion: f.builderVersion,
    useImageDigests: f.useImageDigests,
    channels: f.channels,
    outputDir: f.outputDir,
    ...(f.defaultChannel === undefined ? {} : { defaultChannel: f.defaultChannel }),
    ...(f.shardedReplicas === undefined ? {} : { shardedReplicas: f.shardedReplicas }),
  });
  // The bundle is output, not a file the user owns: always regenerated.
  const results = await applyPlan(f.root, plan, { force: true, dryRun: f.dryRun });
  return [...report(results, plan, f.dryRun), ...[...edge.notes, ...notes].map((n) => `note: ${n}`)].join('\n');
}

export async function runBundleValidate(
  dir: string,
  opts: { selectOptional?: string; output: 'text' | 'json' },
): Promise<{ text: string; ok: boolean }> {
  const findings = validateBundle(
    await readBundleDir(dir),
    opts.selectOptional === undefined ? {} : { selectOptional: opts.selectOptional },
  );
  return { text: formatFindings(findings, opts.output), ok: !findings.some((x) => x.level === 'error') };
}
