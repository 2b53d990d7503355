/**
 * `bundle validate`: the checks of operator-sdk's `bundle validate` (OLM's operator-framework/api and
 * operator-registry validators), each finding with the file and field path it is about. The pure
 * core works on the bundle's files as data; {@link readBundleDir} is the I/O edge.
 */
import { groupOf, versionOf } from '../util/group-kind.js';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parseAllDocuments } from 'yaml';
import { isPlainObject } from '../util/plain-object.js';
import { checkDeprecatedApis } from './deprecated-apis.js';
import type { Finding } from './finding.js';
import { get, INSTALL_MODES, isK8sObject, objs as arr, REGISTRY_V1_KINDS, type K8sObject } from './types.js';

export interface BundleFile {
  readonly path: string;
  readonly text: string;
}
export interface BundleFiles {
  readonly dirs: ReadonlySet<string>;
  readonly files: readonly BundleFile[];
}

export const OPTIONAL_SUITES = ['operatorframework'] as const;
export const OPTIONAL_NAMES = ['operatorhub', 'capabilities', 'good-practices', 'alpha-deprecated-apis'] as const;
/** OLM's limit on the sum of the gzipped manifest files (operator-framework/api `max_bundle_size`). */
export const MAX_BUNDLE_BYTES = 1 << 20;
const CAPABILITIES = ['Basic Install', 'Seamless Upgrades', 'Full Lifecycle', 'Deep Insights', 'Auto Pilot'];
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

export async function readBundleDir(dir: string): Promise<BundleFiles> {
  const dirs = new Set<string>();
  const files: BundleFile[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const e of await readdir(join(dir, rel), { withFileTypes: true })) {
      const p = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) {
        dirs.add(p);
        await walk(p);
      } else if (e.isFile()) files.push({ path: p, text: await readFile(join(dir, p), 'utf8') });
    }
  };
  await walk('');
  return { dirs, files: files.sort((a, b) => a.path.localeCompare(b.path)) };
}

interface Parsed {
  file: string;
  obj: K8sObject;
}

function parseManifests(files: readonly BundleFile[], out: Finding[]): Parsed[] {
  const parsed: Parsed[] = [];
  for (const f of files.filter((x) => x.path.startsWith('manifests/'))) {
    if (!/\.(ya?ml|json)$/.test(f.path)) continue;
    for (const doc of parseAllDocuments(f.text)) {
      const [bad] = doc.errors;
      if (bad !== undefined) {
        out.push({ level: 'error', check: 'format', file: f.path, message: `not valid YAML: ${bad.message}` });
        continue;
      }
      const v: unknown = doc.toJS();
      if (v === null || v === undefined) continue;
      if (!isK8sObject(v)) {
        out.push({
          level: 'error',
          check: 'objects',
          file: f.path,
          message: 'not a Kubernetes object (apiVersion, kind and metadata.name are required)',
        });
        continue;
      }
      parsed.push({ file: f.path, obj: v });
    }
  }
  return parsed;
}

function checkFormat(b: BundleFiles, out: Finding[]): Record<string, string> {
  if (!b.dirs.has('manifests'))
    out.push({ level: 'error', check: 'format', file: 'manifests/', message: 'Unable to locate manifests directory' });
  if (!b.dirs.has('metadata'))
    out.push({ level: 'error', check: 'format', file: 'metadata/', message: 'Unable to locate metadata directory' });
  const file = 'metadata/annotations.yaml';
  const f = b.files.find((x) => x.path === file);
  if (f === undefined) {
    if (b.dirs.has('metadata')) out.push({ level: 'error', check: 'format', file, message: 'Could not find annotations file' });
    return {};
  }
  const doc: unknown = parseAllDocuments(f.text)[0]?.toJS();
  const ann = isPlainObject(doc) && isPlainObject(doc['annotations']) ? (doc['annotations'] as Record<string, string>) : {};
  const need = (key: string, expected?: string): void => {
    const v = ann[key];
    if (v === undefined || v === '')
      out.push({ level: 'error', check: 'format', file, path: `annotations.${key}`, message: `${key} is missing` });
    else if (expected !== undefined && v !== expected)
      out.push({ level: 'error', check: 'format', file, path: `annotations.${key}`, message: `${key} is ${v}, expected ${expected}` });
  };
  need('operators.operatorframework.io.bundle.mediatype.v1', 'registry+v1');
  need('operators.operatorframework.io.bundle.manifests.v1', 'manifests/');
  need('operators.operatorframework.io.bundle.metadata.v1', 'metadata/');
  need('operators.operatorframework.io.bundle.package.v1');
  need('operators.operatorframework.io.bundle.channels.v1');
  const channels = (ann['operators.operatorframework.io.bundle.channels.v1'] ?? '').split(',');
  const def = ann['operators.operatorframework.io.bundle.channel.default.v1'];
  if (def !== undefined && def !== '' && !channels.includes(def)) {
    out.push({
      level: 'error',
      check: 'format',
      file,
      path: 'annotations.operators.operatorframework.io.bundle.channel.default.v1',
      message: `default channel ${def} is not one of the channels ${channels.join(',')}`,
    });
  }
  return ann;
}

function checkObjects(parsed: readonly Parsed[], out: Finding[]): void {
  for (const { file, obj } of parsed) {
    if (!REGISTRY_V1_KINDS.has(obj.kind))
      out.push({
        level: 'error',
        check: 'objects',
        file,
        path: 'kind',
        message: `${obj.kind} ${obj.metadata.name}: kind is not supported in a registry+v1 bundle`,
      });
    if (!DNS1123_SUBDOMAIN.test(obj.metadata.name) || obj.metadata.name.length > 253) {
      out.push({
        level: 'error',
        check: 'objects',
        file,
        path: 'metadata.name',
        message: `${obj.kind} name ${obj.metadata.name} is not a valid DNS-1123 subdomain`,
      });
    }
  }
}

interface CrdKey {
  name: string;
  version: string;
  kind: string;
  group: string;
}

function crdKeys(crd: K8sObject): CrdKey[] {
  return arr(get(crd, 'spec', 'versions')).map((v) => ({
    name: crd.metadata.name,
    version: String(v['name']),
    kind: String(get(crd, 'spec', 'names', 'kind')),
    group: String(get(crd, 'spec', 'group')),
  }));
}

function checkBundle(b: BundleFiles, csv: Parsed | undefined, crds: readonly Parsed[], out: Finding[]): void {
  if (csv === undefined) {
    out.push({ level: 'error', check: 'bundle', file: 'manifests/', message: 'no ClusterServiceVersion in bundle' });
    return;
  }
  const owned = arr(get(csv.obj, 'spec', 'customresourcedefinitions', 'owned'));
  const bundled = crds.flatMap((c) => crdKeys(c.obj));
  owned.forEach((o, i) => {
    if (!bundled.some((k) => k.name === o['name'] && k.version === o['version'] && k.kind === o['kind'])) {
      out.push({
        level: 'error',
        check: 'bundle',
        file: csv.file,
        path: `spec.customresourcedefinitions.owned[${i}]`,
        message: `owned CRD ${String(o['name'])}/${String(o['version'])} (${String(o['kind'])}) is not in the bundle`,
      });
    }
  });
  for (const c of crds) {
    if (!owned.some((o) => o['name'] === c.obj.metadata.name)) {
      out.push({
        level: 'error',
        check: 'bundle',
        file: c.file,
        message: `CRD ${c.obj.metadata.name} is in the bundle but not owned by the CSV (spec.customresourcedefinitions.owned)`,
      });
    }
  }
  const size = b.files.filter((f) => f.path.startsWith('manifests/')).reduce((n, f) => n + gzipSync(f.text).length, 0);
  const mib = (n: number): string => `${(n / (1 << 20)).toFixed(2)} MiB`;
  if (size > MAX_BUNDLE_BYTES)
    out.push({
      level: 'error',
      check: 'bundle',
      file: 'manifests/',
      message: `maximum bundle compressed size exceeded: ~${mib(size)} gzipped, max ${mib(MAX_BUNDLE_BYTES)}`,
    });
  else if (size > MAX_BUNDLE_BYTES * 0.85)
    out.push({
      level: 'warning',
      check: 'bundle',
      file: 'manifests/',
      message: `nearing the maximum bundle compressed size: ~${mib(size)} gzipped, max ${mib(MAX_BUNDLE_BYTES)}`,
    });
}

function checkCsv(csv: Parsed, crds: readonly Parsed[], out: Finding[]): void {
  const { file, obj } = csv;
  const err = (path: string, message: string): void => void out.push({ level: 'error', check: 'csv', file, path, message });
  const warn = (path: string, message: string): void => void out.push({ level: 'warning', check: 'csv', file, path, message });
  if (!DNS1123_SUBDOMAIN.test(obj.metadata.name)) err('metadata.name', `${obj.metadata.name} is not a valid DNS-1123 subdomain`);
  for (const f of ['displayName', 'install', 'version']) if (get(obj, 'spec', f) === undefined) err(`spec.${f}`, `spec.${f} is required`);
  if (get(obj, 'spec', 'install', 'strategy') !== 'deployment') err('spec.install.strategy', 'install strategy must be "deployment"');
  const version = get(obj, 'spec', 'version');
  if (typeof version === 'string' && !SEMVER.test(version)) err('spec.version', `${version} is not a semantic version`);
  const minKube = get(obj, 'spec', 'minKubeVersion');
  if (minKube === undefined || minKube === '')
    warn('spec.minKubeVersion', 'minKubeVersion is not set: OLM installs it on any Kubernetes version');
  else if (typeof minKube !== 'string' || !SEMVER.test(minKube))
    err('spec.minKubeVersion', `${JSON.stringify(minKube)} is not a semantic version`);

  checkInstallModes(csv, out);
  checkExamples(csv, crds, out);
}

function checkInstallModes(csv: Parsed, out: Finding[]): void {
  const { file, obj } = csv;
  const err = (path: string, message: string): void => void out.push({ level: 'error', check: 'csv', file, path, message });
  const modes = arr(get(obj, 'spec', 'installModes'));
  if (modes.length === 0)
    err(
      'spec.installModes',
      'installModes is empty: list OwnNamespace, SingleNamespace, MultiNamespace and AllNamespaces with supported true/false',
    );
  modes.forEach((m, i) => {
    if (!(INSTALL_MODES as readonly unknown[]).includes(m['type']))
      err(`spec.installModes[${i}].type`, `${String(m['type'])} is not an install mode (${INSTALL_MODES.join(', ')})`);
  });
  if (modes.length > 0 && !modes.some((m) => m['supported'] === true))
    err('spec.installModes', 'no install mode is supported: OLM cannot install it in any OperatorGroup');
}

function checkExamples(csv: Parsed, crds: readonly Parsed[], out: Finding[]): void {
  const { file, obj } = csv;
  const err = (path: string, message: string): void => void out.push({ level: 'error', check: 'csv', file, path, message });
  const warn = (path: string, message: string): void => void out.push({ level: 'warning', check: 'csv', file, path, message });
  const owned = arr(get(obj, 'spec', 'customresourcedefinitions', 'owned'));
  const raw = obj.metadata.annotations?.['alm-examples'];
  if (raw !== undefined && raw !== '') {
    let examples: unknown;
    try {
      examples = JSON.parse(raw);
    } catch (e) {
      err('metadata.annotations.alm-examples', `alm-examples is not valid JSON: ${(e as Error).message}`);
      return;
    }
    if (!Array.isArray(examples)) {
      err('metadata.annotations.alm-examples', 'alm-examples must be a JSON array of objects');
      return;
    }
    const keys = crds.flatMap((c) => crdKeys(c.obj));
    examples.forEach((ex: unknown, i) => {
      const apiVersion = get(ex, 'apiVersion');
      const kind = get(ex, 'kind');
      const match =
        typeof apiVersion === 'string' &&
        owned.some(
          (o) =>
            o['kind'] === kind &&
            o['version'] === versionOf(apiVersion) &&
            keys.some((k) => k.name === o['name'] && k.group === groupOf(apiVersion)),
        );
      if (!match) err(`metadata.annotations.alm-examples[${i}]`, `example ${String(kind)} (${String(apiVersion)}) is not of an owned CRD`);
    });
    owned.forEach((o, i) => {
      if (!examples.some((ex: unknown) => get(ex, 'kind') === o['kind']))
        warn(`spec.customresourcedefinitions.owned[${i}]`, `owned CRD ${String(o['name'])} has no example in alm-examples`);
    });
  } else if (owned.length > 0) warn('metadata.annotations.alm-examples', 'alm-examples is empty: the console has no example CR to offer');
}

function checkCrd(c: Parsed, out: Finding[]): void {
  const err = (path: string, message: string): void => void out.push({ level: 'error', check: 'crd', file: c.file, path, message });
  if (c.obj.apiVersion !== 'apiextensions.k8s.io/v1') err('apiVersion', `${c.obj.apiVersion}: bundles carry apiextensions.k8s.io/v1 CRDs`);
  const group = get(c.obj, 'spec', 'group');
  const plural = get(c.obj, 'spec', 'names', 'plural');
  if (typeof group !== 'string' || typeof plural !== 'string') err('spec', 'spec.group and spec.names.plural are required');
  else if (c.obj.metadata.name !== `${plural}.${group}`)
    err('metadata.name', `must be spec.names.plural + "." + spec.group (${plural}.${group})`);
  const versions = arr(get(c.obj, 'spec', 'versions'));
  if (versions.filter((v) => v['storage'] === true).length !== 1) err('spec.versions', 'exactly one version must be the storage version');
  versions.forEach((v, i) => {
    if (get(v, 'schema', 'openAPIV3Schema') === undefined)
      err(`spec.versions[${i}].schema.openAPIV3Schema`, 'a v1 CRD version needs a schema');
  });
}

function checkOperatorHub(csv: Parsed, out: Finding[]): void {
  const { file, obj } = csv;
  const err = (path: string, message: string): void => void out.push({ level: 'error', check: 'operatorhub', file, path, message });
  if (typeof get(obj, 'spec', 'provider', 'name') !== 'string') err('spec.provider.name', 'provider.name is required');
  const maintainers = arr(get(obj, 'spec', 'maintainers'));
  if (maintainers.length === 0) err('spec.maintainers', 'at least one maintainer (name, email) is required');
  maintainers.forEach((m, i) => {
    if (typeof m['email'] !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(m['email']))
      err(`spec.maintainers[${i}].email`, `${String(m['email'])} is not an email address`);
  });
  arr(get(obj, 'spec', 'links')).forEach((l, i) => {
    if (typeof l['url'] !== 'string' || !URL.canParse(l['url'])) err(`spec.links[${i}].url`, `${String(l['url'])} is not a URL`);
  });
  const icons = arr(get(obj, 'spec', 'icon'));
  if (icons.length !== 1) err('spec.icon', 'exactly one icon (base64data, mediatype) is expected');
  icons.forEach((ic, i) => {
    if (!['image/gif', 'image/jpeg', 'image/png', 'image/svg+xml'].includes(String(ic['mediatype'])))
      err(`spec.icon[${i}].mediatype`, `${String(ic['mediatype'])} is not image/gif, image/jpeg, image/png or image/svg+xml`);
  });
  if (get(obj, 'spec', 'minKubeVersion') === undefined) err('spec.minKubeVersion', 'minKubeVersion is required on OperatorHub');
}

function checkCapabilities(csv: Parsed, out: Finding[]): void {
  const cap = csv.obj.metadata.annotations?.['capabilities'];
  if (cap === undefined || !CAPABILITIES.includes(cap)) {
    out.push({
      level: 'error',
      check: 'capabilities',
      file: csv.file,
      path: 'metadata.annotations.capabilities',
      message: `capabilities ${String(cap)} is not one of ${CAPABILITIES.join(', ')}`,
    });
  }
}

function checkGoodPractices(csv: Parsed, ann: Record<string, string>, out: Finding[]): void {
  const warn = (file: string, path: string, message: string): void =>
    void out.push({ level: 'warning', check: 'good-practices', file, path, message });
  arr(get(csv.obj, 'spec', 'install', 'spec', 'deployments')).forEach((d, i) => {
    arr(get(d, 'spec', 'template', 'spec', 'containers')).forEach((c, j) => {
      if (get(c, 'resources', 'requests') === undefined)
        warn(
          csv.file,
          `spec.install.spec.deployments[${i}].spec.template.spec.containers[${j}].resources.requests`,
          `container ${String(c['name'])} has no resource requests`,
        );
    });
  });
  for (const ch of (ann['operators.operatorframework.io.bundle.channels.v1'] ?? '').split(',').filter(Boolean)) {
    if (!/^(alpha|beta|stable|candidate|fast)(-.+)?$/.test(ch))
      warn(
        'metadata/annotations.yaml',
        'annotations.operators.operatorframework.io.bundle.channels.v1',
        `channel ${ch} does not follow the convention (alpha, beta, stable, candidate, fast, optionally -suffix)`,
      );
  }
  arr(get(csv.obj, 'spec', 'customresourcedefinitions', 'owned')).forEach((o, i) => {
    if (typeof o['description'] !== 'string' || o['description'] === '')
      warn(csv.file, `spec.customresourcedefinitions.owned[${i}].description`, `owned CRD ${String(o['name'])} has no description`);
  });
}

export interface ValidateOptions {
  /** `suite=operatorframework` or `name=<operatorhub|capabilities|good-practices>`. */
  readonly selectOptional?: string;
}

export class SelectorError extends Error {
  override readonly name = 'SelectorError';
}

function optionalSet(sel: string | undefined): Set<(typeof OPTIONAL_NAMES)[number]> {
  if (sel === undefined || sel === '') return new Set();
  const [key, value] = sel.split('=', 2);
  if (key === 'suite' && (OPTIONAL_SUITES as readonly string[]).includes(value ?? '')) return new Set(OPTIONAL_NAMES);
  if (key === 'name' && (OPTIONAL_NAMES as readonly string[]).includes(value ?? ''))
    return new Set([value as (typeof OPTIONAL_NAMES)[number]]);
  throw new SelectorError(`--select-optional ${sel}: expected suite=${OPTIONAL_SUITES.join('|')} or name=${OPTIONAL_NAMES.join('|')}`);
}

export function validateBundle(b: BundleFiles, opts: ValidateOptions = {}): Finding[] {
  const optional = optionalSet(opts.selectOptional);
  const out: Finding[] = [];
  const ann = checkFormat(b, out);
  const parsed = parseManifests(b.files, out);
  const csvs = parsed.filter((p) => p.obj.kind === 'ClusterServiceVersion');
  const crds = parsed.filter((p) => p.obj.kind === 'CustomResourceDefinition');
  checkObjects(parsed, out);
  const csv = csvs[0];
  const extra = csvs[1];
  if (extra !== undefined)
    out.push({ level: 'error', check: 'bundle', file: extra.file, message: 'more than one ClusterServiceVersion in bundle' });
  checkBundle(b, csv, crds, out);
  if (csv !== undefined) checkCsv(csv, crds, out);
  for (const c of crds) checkCrd(c, out);
  if (csv !== undefined) {
    if (optional.has('operatorhub')) checkOperatorHub(csv, out);
    if (optional.has('capabilities')) checkCapabilities(csv, out);
    if (optional.has('good-practices')) checkGoodPractices(csv, ann, out);
    if (optional.has('alpha-deprecated-apis')) out.push(...checkDeprecatedApis(csv, parsed));
  }
  return out;
}

export function formatFindings(findings: readonly Finding[], format: 'text' | 'json'): string {
  const passed = !findings.some((f) => f.level === 'error');
  if (format === 'json') return JSON.stringify({ passed, outputs: findings }, null, 2);
  const lines = findings.map(
    (f) => `${f.level === 'error' ? 'ERROR' : 'WARN '} [${f.check}] ${f.file}${f.path === undefined ? '' : ` ${f.path}`}: ${f.message}`,
  );
  lines.push(
    passed
      ? `bundle is valid${findings.length > 0 ? ` (${findings.length} warning(s))` : ''}`
      : `bundle is invalid: ${findings.filter((f) => f.level === 'error').length} error(s)`,
  );
  return lines.join('\n');
}
