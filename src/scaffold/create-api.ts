/**
 * `helm-operator create api`: fetch (or create) the chart, derive the CRD, sample and RBAC, and
 * apply the plan. The I/O edge around the pure {@link apiPlan}.
 */
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { readHelmYaml } from '../config/helm-yaml.js';
import type { ChartHelm } from '../helm/chart-helm.js';
import { HelmError } from '../helm/errors.js';
import { allowKinds, type AllowKinds } from './allow-kinds.js';
import { apiPlan, type ApiPlanInputs } from './api-plan.js';
import { readChartFiles } from './chart-files.js';
import { renderedObjects, renderWith, resolveKinds } from './chart-kinds.js';
import { classifyChartSource, fetchChart, type FetchedChart } from './chart-source.js';
import { applyPlan, formatPlan, markerText, type FileResult, type Plan } from '../machinery/index.js';
import { apiNames, kindFromChartName, type ApiNames } from './names.js';
import { optionalKinds } from './optional-kinds.js';
import type { RbacMode } from './rbac-modes.js';
import type { PolicyRule, RenderedObject, ScaffoldLibrary, SchemaConversion } from './ports.js';
import { readProject, watchedChart, type ProjectConfig } from '../machinery/project.js';
import { apiVersionOf, crdFileName, watchEntry } from './templates/api.js';
import { checkCrdUpdate, removeStaleChartFiles, staleChartFiles, unsafeCrdChanges, type StaleChartFiles } from './chart-update.js';
import { updateWatchEntry } from './watch-entry-update.js';
import { KIND_ROLES_MARKER, kindRoleFileName } from './templates/kind-roles.js';
import { tenancySentences, tenantValues, type TemplateText } from './tenant-values.js';
import type { ChartFile } from '../config/chart.js';

export interface CreateApiOptions {
  readonly root: string;
  readonly group?: string;
  readonly version?: string;
  readonly kind?: string;
  readonly helmChart?: string;
  readonly helmChartRepo?: string;
  readonly helmChartVersion?: string;
  /** `inferred` (default): from values.schema.json, else from values.yaml; `open`: operator-sdk's preserve-unknown-fields. */
  readonly crdSchema?: 'inferred' | 'open';
  readonly shortNames?: readonly string[];
  /** Extra values files to render the chart with, for RBAC of what they switch on. */
  readonly valuesFiles?: readonly string[];
  /**
   * RBAC for kinds the chart renders only with other values (its `false` switches turned on):
   * `default-values` writes them as commented rules naming the value, `all-values` grants them.
   */
  readonly rbac?: RbacMode;
  readonly plainHttp?: boolean;
  readonly force?: boolean;
  /** With --force over an existing kind: write a CRD that OLM v1's upgrade-safety checks refuse. */
  readonly allowBreaking?: boolean;
  readonly dryRun?: boolean;
}

export interface CreateApiDeps {
  readonly helm: ChartHelm;
  readonly library: ScaffoldLibrary;
  /** The cluster for discovery; undefined maps kinds with the built-in table only. */
  readonly kubeConfig?: KubeConfig;
}

export interface CreateApiResult {
  readonly names: ApiNames;
  readonly chartName: string;
  readonly results: readonly FileResult[];
  readonly plan: Plan;
  /** Schema conversion warnings, unresolved kinds, how kinds were mapped. */
  readonly notes: readonly string[];
}

export class CreateApiError extends Error {
  override readonly name = 'CreateApiError';
}

const kindOnDisk = (p: string): 'directory' | 'file' | undefined => {
  if (!existsSync(p)) return undefined;
  return statSync(p).isDirectory() ? 'directory' : 'file';
};

async function obtainChart(o: CreateApiOptions, helm: ChartHelm, workDir: string): Promise<FetchedChart> {
  if (o.helmChart === undefined) {
    if (o.helmChartRepo !== undefined || o.helmChartVersion !== undefined)
      throw new CreateApiError('--helm-chart-repo and --helm-chart-version need --helm-chart (the chart to fetch)');
    if (o.kind === undefined) throw new CreateApiError('--kind is required without --helm-chart (it names the starter chart)');
    const dir = path.join(workDir, 'starter', o.kind.toLowerCase());
    await mkdir(path.dirname(dir), { recursive: true });
    try {
      await helm.create(dir);
    } catch (err) {
      if (err instanceof HelmError) throw new CreateApiError(`helm create failed: ${err.summary}`);
      throw err;
    }
    return fetchChart(helm, { kind: 'directory', path: dir }, { workDir: path.join(workDir, 'copy') });
  }
  const source = classifyChartSource(
    {
      helmChart: o.helmChart,
      ...(o.helmChartRepo === undefined ? {} : { helmChartRepo: o.helmChartRepo }),
      ...(o.helmChartVersion === undefined ? {} : { helmChartVersion: o.helmChartVersion }),
    },
    (p) => kindOnDisk(path.resolve(p)),
  );
  return fetchChart(helm, source, { workDir, ...(o.plainHttp === true ? { plainHttp: true } : {}) });
}

/** The GVK, defaulted like operator-sdk from the chart (group `charts`, `v1alpha1`, CamelCase chart name). */
function namesFor(o: CreateApiOptions, project: ProjectConfig, chartName: string): ApiNames {
  const kind = o.kind ?? kindFromChartName(chartName);
  return apiNames({ group: o.group ?? 'charts', version: o.version ?? 'v1alpha1', kind }, project.domain);
}

const exists = (project: ProjectConfig, n: ApiNames): boolean =>
  project.resources.some((r) => r.group === n.group && r.version === n.version && r.kind === n.kind);

/**
 * An API that exists already may be scaffolded again only when that changes nothing (a re-run)
 * or with --force: a different chart, values or schema mode would silently replace its files.
 */
async function checkExisting(o: CreateApiOptions, n: ApiNames, plan: Plan): Promise<void> {
  if (o.force === true) return;
  const changes = (await applyPlan(o.root, plan, { dryRun: true })).filter((r) => r.action === 'created' || r.action === 'updated');
  if (changes.length === 0) return;
  const chart = await watchedChart(o.root, { group: n.fullGroup, version: n.version, kind: n.kind });
  throw new CreateApiError(
    `${n.kind} (${apiVersionOf(n)}) already exists${chart === undefined ? '' : ` (served by ${chart})`}; scaffolding it again would change ${changes.length} file(s), e.g. ${changes[0]?.path ?? ''}: use another --kind or --version, or --force to regenerate it`,
  );
}

function parseValues(valuesYaml: string): unknown {
  try {
    // Typed as helm types the values it reads: `yes` is a boolean, `0400` the integer 256.
    return readHelmYaml(valuesYaml) ?? {};
  } catch (err) {
    throw new CreateApiError(
      `the chart's values.yaml is not valid YAML: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    );
  }
}

function specSchema(
  o: CreateApiOptions,
  lib: ScaffoldLibrary,
  valuesSchema: string | undefined,
  valuesYaml: string,
): { conv: SchemaConversion; source: string } {
  if (o.crdSchema === 'open')
    return { conv: { schema: lib.openSpecSchema(), warnings: [] }, source: 'open (x-kubernetes-preserve-unknown-fields)' };
  if (valuesSchema !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(valuesSchema);
    } catch (err) {
      throw new CreateApiError(
        `values.schema.json of the chart is not valid JSON (${err instanceof Error ? err.message : String(err)}); fix it or use --crd-schema=open`,
      );
    }
    return { conv: lib.specSchemaFromValuesSchema(parsed, { values: parseValues(valuesYaml) }), source: "the chart's values.schema.json" };
  }
  return { conv: lib.specSchemaFromValues(parseValues(valuesYaml)), source: "inferred from the chart's values.yaml" };
}

const readOptional = (p: string): Promise<string | undefined> => readFile(p, 'utf8').catch(() => undefined);

export interface ChartRbac {
  readonly rules: ApiPlanInputs['rbac'];
  readonly allowKinds: AllowKinds;
  /** Lines for the CLI's report. */
  readonly notes: readonly string[];
}

/** The rules for `objects` and the kinds `resolve` does not know. */
type Rbac = ReturnType<ScaffoldLibrary['rulesForObjects']>;

/**
 * The chart's RBAC rules and the watch's `allowKinds`: render it (defaults, then each values file),
 * then with its `false` switches turned on for what CRs could switch on; map the kinds, derive the
 * rules. `values`: its values.yaml, parsed.
 */
export async function chartRbac(
  o: Pick<CreateApiOptions, 'valuesFiles' | 'rbac'>,
  deps: CreateApiDeps,
  chartDir: string,
  values: unknown,
): Promise<ChartRbac> {
  const valuesFiles = o.valuesFiles ?? [];
  const objects = await renderedObjects(deps.helm, chartDir, valuesFiles);
  const optional = await optionalKinds((v) => renderWith(deps.helm, chartDir, v), values, objects);
  const kinds = await resolveKinds([...objects, ...optional.groups.flatMap((g) => g.objects)], deps.kubeConfig, (a, k) =>
    deps.library.builtinResourceInfo(a, k),
  );
  const rulesFor = (objs: readonly RenderedObject[]): Rbac => deps.library.rulesForObjects(objs, kinds.resolve);
  const rbac = rulesFor(objects);
  const extra = optional.groups.map((g) => ({ when: g.when, ...rulesFor(g.objects) }));
  const grant = o.rbac === 'all-values';
  const withValues =
    valuesFiles.length === 0 ? 'its default values' : `its default values and ${valuesFiles.map((f) => path.basename(f)).join(', ')}`;
  const explored = optional.found > optional.tried ? ` (the first ${optional.tried} of its ${optional.found} false switches tried)` : '';
  const allow = allowKinds(objects, optional.groups, grant);
  return {
    allowKinds: allow,
    rules: {
      rules: rbac.rules,
      unresolved: rbac.unresolved,
      notes: rbac.notes,
      provenance: withValues,
      optional: extra.map((e) => ({ when: e.when, rules: e.rules, unresolved: e.unresolved })),
      grantOptional: grant,
      unrenderable: optional.unrenderable,
    },
    notes: [
      `RBAC: ${objects.length} rendered objects; kinds mapped by ${kinds.via}`,
      ...rbac.notes.map((n) => `RBAC: ${n}`),
      ...rbac.unresolved.map((u) => `RBAC: could not resolve ${u}: add its rule to config/rbac/role.yaml by hand`),
      ...extra.map(
        (e) =>
          `RBAC: with ${e.when} it also renders ${kindList(e.rules)}: ${grant ? 'granted (--rbac=all-values)' : 'commented rules in config/rbac/role.yaml (--rbac=all-values grants them)'}`,
      ),
      `allowKinds: ${allow.kinds.length === 0 ? 'none written (the chart rendered no object)' : allow.kinds.join(', ')}${allow.optional.length === 0 ? '' : ` (other values' kinds commented: ${allow.optional.flatMap((g) => g.kinds).join(', ')})`}`,
      ...(optional.unrenderable.length === 0
        ? []
        : [`RBAC: could not render with ${optional.unrenderable.map((t) => `${t}=true`).join(', ')} alone${explored}`]),
    ],
  };
}

const RBAC_KUSTOMIZATION = 'config/rbac/kustomization.yaml';

/**
 * Whether config/rbac/kustomization.yaml has the marker the kind's roles are listed at. A project
 * scaffolded before it has none: the roles are written all the same, and a note says how to list them.
 */
async function kindRolesListed(root: string, n: ApiNames): Promise<{ list: boolean; notes: string[] }> {
  const list = (await readOptional(path.join(root, RBAC_KUSTOMIZATION)))?.includes(markerText(KIND_ROLES_MARKER)) === true;
  if (list) return { list, notes: [] };
  const files = `${kindRoleFileName(n, 'editor')} and ${kindRoleFileName(n, 'viewer')}`;
  return {
    list,
    notes: [
      `RBAC: ${RBAC_KUSTOMIZATION} has no "# ${markerText(KIND_ROLES_MARKER)}" line (a project scaffolded before it): add ${files} to its resources to deploy the kind's editor and viewer roles (aggregated into edit and view), and the marker line after them for the next kinds`,
    ],
  };
}

/** `resource` or `resource.group` for each resource the rules name. */
const grantedResources = (rules: readonly PolicyRule[]): string[] =>
  rules.flatMap((r) => r.resources.map((res) => (r.apiGroups[0] === '' ? res : `${res}.${r.apiGroups[0] ?? ''}`)));
const kindList = (rules: readonly PolicyRule[]): string => grantedResources(rules).join(', ');

/** The chart's own templates as text (its subcharts' values are theirs, under their name: not scanned). */
const chartTemplates = (files: readonly ChartFile[]): TemplateText[] =>
  files
    .filter((f) => f.path.startsWith('templates/') && /\.(ya?ml|tpl|txt|json)$/.test(f.path))
    .map((f) => ({ path: f.path, text: Buffer.from(f.data).toString('utf8') }));

/** A chart update regenerates the kind's watch entry in place: its chart and allowKinds change, the author's keys stay. */
async function regeneratedWatch(root: string, n: ApiNames, chartName: string, allow: AllowKinds): Promise<string | undefined> {
  return updateWatchEntry((await readOptional(path.join(root, 'watches.yaml'))) ?? '', n, watchEntry(n, chartName, allow));
}

/**
 * `create api` over a kind the project has (a chart update), before anything is written: --force
 * or no change, a CRD that OLM v1's upgrade-safety checks accept (or --allow-breaking), and the old
 * chart's files the new one lacks.
 */
async function chartUpdate(
  o: CreateApiOptions,
  n: ApiNames,
  plan: Plan,
  chart: FetchedChart,
): Promise<{ notes: string[]; stale: StaleChartFiles }> {
  await checkExisting(o, n, plan);
  const crdFile = `config/crd/bases/${crdFileName(n)}`;
  const notes = checkCrdUpdate(await unsafeCrdChanges(o.root, plan, crdFile), {
    crdFile,
    chart: `${chart.name} ${chart.version}`,
    allowBreaking: o.allowBreaking === true,
  });
  return { notes, stale: await staleChartFiles(o.root, plan, `helm-charts/${chart.name}`) };
}

export async function createApi(o: CreateApiOptions, deps: CreateApiDeps): Promise<CreateApiResult> {
  const project = await readProject(o.root);
  if (o.kind !== undefined || o.helmChart === undefined) namesFor(o, project, o.kind?.toLowerCase() ?? 'x'); // flags first, before any fetch
  const workDir = await mkdtemp(path.join(tmpdir(), 'helm-operator-create-api-'));
  try {
    const chart = await obtainChart(o, deps.helm, workDir);
    const n = namesFor(o, project, chart.name);
    const valuesYaml = (await readOptional(path.join(chart.dir, 'values.yaml'))) ?? '';
    const { conv, source } = specSchema(o, deps.library, await readOptional(path.join(chart.dir, 'values.schema.json')), valuesYaml);
    const rbac = await chartRbac(o, deps, chart.dir, parseValues(valuesYaml));
    const warnings = conv.warnings.map((w) => `${w.path}: ${w.message}`);
    const chartFiles = await readChartFiles(chart.dir);
    const tenancy = tenancySentences(
      chart.name,
      tenantValues(chartTemplates(chartFiles), parseValues(valuesYaml)),
      grantedResources(rbac.rules.rules),
      rbac.allowKinds.kinds,
    );
    const readme = await readOptional(path.join(o.root, 'README.md'));
    const kindRoles = await kindRolesListed(o.root, n);
    const existing = exists(project, n);
    const watches = existing ? await regeneratedWatch(o.root, n, chart.name, rbac.allowKinds) : undefined;
    const plan = apiPlan({
      names: n,
      projectName: project.projectName,
      listKindRoles: kindRoles.list,
      chartName: chart.name,
      chartFiles,
      crd: { spec: conv.schema, status: deps.library.statusSchema(), schemaSource: source, warnings, shortNames: o.shortNames ?? [] },
      sample: deps.library.sampleCustomResource(
        valuesYaml,
        { apiVersion: apiVersionOf(n), kind: n.kind, name: `${n.singular}-sample` },
        { header: `Sample ${n.kind}: its spec is the values of helm-charts/${chart.name} (its values.yaml, comments kept).` },
      ),
      rbac: rbac.rules,
      allowKinds: rbac.allowKinds,
      ...(readme?.includes(markerText('tenancy')) === true ? { tenancy } : {}),
      ...(watches === undefined ? {} : { watches }),
    });
    const update = existing ? await chartUpdate(o, n, plan, chart) : { notes: [], stale: { remove: [], keep: [] } };
    const results = await applyPlan(o.root, plan, { force: o.force === true, dryRun: o.dryRun === true });
    const removed = await removeStaleChartFiles(o.root, update.stale, o.dryRun === true);
    return {
      names: n,
      chartName: chart.name,
      results,
      plan,
      notes: [
        ...warnings.map((w) => `CRD schema: ${w}`),
        ...rbac.notes,
        ...tenancy.map((t) => `Tenancy: ${t}`),
        ...kindRoles.notes,
        ...update.notes,
        ...removed,
      ],
    };
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

export { formatPlan };
