/** `helm-operator init` and `helm-operator create api`: flags → src/scaffold/commands. */
import { Command, InvalidArgumentError, Option } from 'commander';
import type { CreateApiFlags, InitFlags } from '../scaffold/commands.js';
import { RBAC_MODES, type RbacMode } from '../scaffold/rbac-modes.js';

interface RawFlags {
  domain?: string;
  projectName?: string;
  group?: string;
  version?: string;
  kind?: string;
  helmChart?: string;
  helmChartRepo?: string;
  helmChartVersion?: string;
  crdSchema: 'inferred' | 'open';
  shortNames?: string;
  values: string[];
  rbac: RbacMode;
  plainHttp: boolean;
  helmBinary?: string;
  force: boolean;
  allowBreaking: boolean;
  dryRun: boolean;
}

/** The entries whose value is set (the options types are exact about absent keys). */
function defined<T extends Record<string, string | undefined>>(o: T): { [K in keyof T]?: string } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: string };
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];

/**
 * operator-sdk's `--plugins` keys that name what this CLI scaffolds: its helm plugin (short name,
 * versioned and full key) and the plugins its helm bundle is made of, which every project here
 * gets anyway (kustomize config/, OLM manifests, scorecard).
 */
const HELM_PLUGIN_KEYS: ReadonlySet<string> = new Set([
  'helm',
  'helm/v1',
  'helm.sdk.operatorframework.io',
  'helm.sdk.operatorframework.io/v1',
  'base.helm.sdk.operatorframework.io/v1',
  'kustomize/v2',
  'kustomize.common.kubebuilder.io/v2',
  'manifests.sdk.operatorframework.io/v2',
  'scorecard.sdk.operatorframework.io/v2',
]);

/**
 * Accepts `--plugins` as operator-sdk users type it (`helm`, `helm.sdk.operatorframework.io/v1`,
 * comma-separated) and refuses any other plugin by name: a Go or Ansible layout is not something
 * this CLI can write, and silently writing a Helm project instead would be worse.
 *
 * @throws {InvalidArgumentError} naming the plugins this CLI does not have.
 */
export function parsePlugins(raw: string): string[] {
  const keys = raw
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  const foreign = keys.filter((k) => !HELM_PLUGIN_KEYS.has(k));
  if (keys.length === 0 || foreign.length > 0) {
    throw new InvalidArgumentError(
      `${foreign.length > 0 ? `plugin ${foreign.join(', ')} is not available` : 'no plugin named'}: helm-operator scaffolds Helm-based operators only, what operator-sdk's --plugins=helm (helm.sdk.operatorframework.io/v1) does; use --plugins=helm or leave --plugins out (for Go or Ansible operators use operator-sdk)`,
    );
  }
  return keys;
}

function apiOptions(cmd: Command): Command {
  return cmd
    .option('--group <group>', 'API group of the kind, prefixed to --domain (default: charts)')
    .option('--version <version>', 'API version of the kind, e.g. v1alpha1 (default: v1alpha1)')
    .option('--kind <Kind>', "the kind (CamelCase); default: the chart's name in CamelCase")
    .option(
      '--helm-chart <chart>',
      'chart directory, .tgz, repo/name, https://…/x.tgz or oci://host/ns/name[:tag]; none: a starter chart (helm create)',
    )
    .option('--helm-chart-repo <url>', 'chart repository URL for a bare --helm-chart name')
    .option('--helm-chart-version <version>', 'chart version (default: latest)')
    .addOption(new Option('--crd-schema <mode>', 'spec schema of the CRD').choices(['inferred', 'open']).default('inferred'))
    .option('--short-names <names>', 'comma-separated short names of the CRD')
    .option('--values <file>', 'also render the chart with this values file for its RBAC rules (repeatable)', collect, [])
    .addOption(
      new Option(
        '--rbac <mode>',
        'kinds the chart renders only with other values (its false switches on): default-values writes them as commented rules naming the value, all-values grants them',
      )
        .choices(RBAC_MODES)
        .default('default-values'),
    )
    .option('--plain-http', 'fetch from an OCI registry or repository over plain HTTP', false)
    .option(
      '--helm-binary <path>',
      "helm executable (default: $HELM_BIN, else helm on PATH, else the runtime's pinned helm, fetched into its tool cache)",
    )
    .option(
      '--plugins <keys>',
      "operator-sdk's plugin keys, accepted for its helm plugin only: helm, helm.sdk.operatorframework.io/v1",
      parsePlugins,
    )
    .option(
      '--force',
      'overwrite files you edited, regenerate an existing API (a chart update: the new chart, CRD, sample, RBAC, watch)',
      false,
    )
    .option(
      '--allow-breaking',
      "with --force: write a CRD schema that OLM v1's upgrade-safety checks refuse (removed fields, changed types, ...)",
      false,
    )
    .option('--dry-run', 'print the plan and what would change; write nothing', false);
}

function common(raw: RawFlags): CreateApiFlags {
  const shortNames = raw.shortNames
    ?.split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (shortNames?.some((s) => !/^[a-z][a-z0-9]*$/.test(s)) === true)
    throw new InvalidArgumentError('--short-names must be lower-case alphanumeric names');
  return {
    root: process.cwd(),
    ...(raw.helmBinary === undefined ? {} : { helmBinary: raw.helmBinary }),
    force: raw.force,
    allowBreaking: raw.allowBreaking,
    dryRun: raw.dryRun,
    crdSchema: raw.crdSchema,
    valuesFiles: raw.values,
    rbac: raw.rbac,
    plainHttp: raw.plainHttp,
    ...(shortNames === undefined ? {} : { shortNames }),
    ...defined({
      group: raw.group,
      version: raw.version,
      kind: raw.kind,
      helmChart: raw.helmChart,
      helmChartRepo: raw.helmChartRepo,
      helmChartVersion: raw.helmChartVersion,
    }),
  };
}

export function defineInitCommand(action: (f: InitFlags) => Promise<void>): Command {
  return apiOptions(
    new Command('init')
      .description('Write a new operator project into the current (empty) directory; with --kind or --helm-chart also create its first API')
      .option('--domain <domain>', 'domain of the API groups', 'my.domain')
      .option('--project-name <name>', 'project name (default: the directory name)'),
  ).action(async (raw: RawFlags) => {
    await action({
      ...common(raw),
      domain: raw.domain ?? 'my.domain',
      ...(raw.projectName === undefined ? {} : { projectName: raw.projectName }),
    });
  });
}

export function defineCreateCommand(action: (f: CreateApiFlags) => Promise<void>): Command {
  const create = new Command('create').description('Add to the project');
  create.addCommand(
    apiOptions(
      new Command('api').description('Add a kind served by a Helm chart: the chart, its watch, a typed CRD, a sample and RBAC rules'),
    ).action(async (raw: RawFlags) => {
      await action(common(raw));
    }),
  );
  return create;
}
