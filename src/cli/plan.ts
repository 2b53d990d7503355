/**
 * `helm-operator plan show|approve <kind>/<name> [-n NS]` (docs/adr/0083): the pending upgrade
 * plan of a CR, read from the cluster (its status and its plan ConfigMap), printed as a diff in
 * the spirit of `kubectl diff`; and the platform's approval of one plan's digest, written in the
 * operator's namespace, where CR authors have no rights.
 */
import { Command, Option } from 'commander';
import { HttpMethod, type KubeConfig } from '../k8s/client-node.js';
import { isNotFound, isStatus } from '../k8s/errors.js';
import { loadKubeConfig } from '../k8s/kubeconfig.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';
import { PLAN_KEY, PlanApprovals } from '../operator/plan-store.js';
import {
  planConfigMapName,
  type PlanStatus,
  readStatus,
  describePlan,
  planCounts,
  planDigest,
  planRisks,
  type PlanObject,
  type UpgradePlan,
} from '../reconciler/index.js';
import { isPlainObject } from '../util/plain-object.js';
import { findKind, RolloutError, type KindRef } from './rollout.js';

export const PLAN_VERBS = ['show', 'approve', 'diff'] as const;
export type PlanVerb = (typeof PLAN_VERBS)[number];

export interface PlanFlags {
  readonly verb: Exclude<PlanVerb, 'diff'>;
  /** `<kind>/<name>`; the kind as `Kind`, `Kind.group`, or its lowercase singular or plural. */
  readonly target: string;
  readonly namespace: string;
  /** approve: the digest approved, as `plan show` and the CR's status name it. */
  readonly digest?: string;
  readonly operatorNamespace?: string;
  readonly kubeconfig?: string;
}

/** `plan diff -f cr.yaml`: the plan of a CR manifest not applied (plan-diff.ts). */
export interface PlanDiffFlags {
  readonly verb: 'diff';
  readonly file: string;
  /** Undefined: the manifest's namespace, else `default` (as kubectl). */
  readonly namespace?: string;
  readonly watchesFile: string;
  readonly helmBinary: string;
  readonly defaultServiceAccount?: string;
  readonly kubeconfig?: string;
  /** Where the operator's fingerprint key is: read when the caller may, so that hidden values seal as the operator seals them. */
  readonly operatorNamespace?: string;
}

/** Input the user fixes: printed alone (a RolloutError, as the rollout command's). */
export class PlanError extends RolloutError {}

/** The command's options as commander hands them over. */
interface RawPlanOptions {
  namespace?: string;
  digest?: string;
  operatorNamespace?: string;
  kubeconfig?: string;
  filename?: string;
  watchesFile: string;
  helmBinary: string;
  defaultServiceAccount?: string;
}

export function definePlanCommand(action: (f: PlanFlags | PlanDiffFlags) => Promise<void>): Command {
  return new Command('plan')
    .description("Show a CR's pending upgrade plan, approve it by its digest, or show what applying a CR manifest would do (docs/plans.md)")
    .addArgument(new Command().createArgument('<verb>', 'show, approve or diff').choices(PLAN_VERBS))
    .argument('[kind/name]', 'show, approve: the CR, as kubectl names it: nginx/web, Nginx.example.com/web')
    .addOption(new Option('-n, --namespace <namespace>', "the CR's namespace (default: default; diff: the manifest's)"))
    .addOption(new Option('--digest <digest>', 'approve: the digest of the plan approved (sha256:…)'))
    .addOption(
      new Option(
        '--operator-namespace <namespace>',
        "the operator's namespace, where platform approvals are (required by approve; diff: its key, if you may read it)",
      ).env('OPERATOR_NAMESPACE'),
    )
    .addOption(new Option('-f, --filename <file>', 'diff: the CR manifest (one YAML document)'))
    .addOption(new Option('--watches-file <path>', 'diff: the watches file, as run reads it').default('./watches.yaml'))
    .addOption(new Option('--helm-binary <path>', 'diff: the helm executable').default(process.env.HELM_BIN ?? 'helm'))
    .addOption(new Option('--default-service-account <name>', "diff: run's --default-service-account, if the operator runs with one"))
    .addOption(new Option('--kubeconfig <file>', 'path to the kubeconfig file to use for CLI requests'))
    .action((verb: PlanVerb, target: string | undefined, o: RawPlanOptions) => action(planFlags(verb, target, o)));
}

/** The flags of one verb; what a verb needs and was not given is a PlanError. */
function planFlags(verb: PlanVerb, target: string | undefined, o: RawPlanOptions): PlanFlags | PlanDiffFlags {
  const kubeconfig = o.kubeconfig === undefined ? {} : { kubeconfig: o.kubeconfig };
  if (verb === 'diff') {
    if (o.filename === undefined) throw new PlanError('plan diff needs -f <file>: the CR manifest to plan');
    if (target !== undefined) throw new PlanError(`plan diff takes the CR from -f ${o.filename}, not "${target}"`);
    return {
      verb,
      file: o.filename,
      watchesFile: o.watchesFile,
      helmBinary: o.helmBinary,
      ...(o.namespace === undefined ? {} : { namespace: o.namespace }),
      ...(o.defaultServiceAccount === undefined ? {} : { defaultServiceAccount: o.defaultServiceAccount }),
      ...(o.operatorNamespace === undefined ? {} : { operatorNamespace: o.operatorNamespace }),
      ...kubeconfig,
    };
  }
  if (target === undefined) throw new PlanError(`plan ${verb} needs <kind>/<name>`);
  return {
    verb,
    target,
    namespace: o.namespace ?? 'default',
    ...(o.digest === undefined ? {} : { digest: o.digest }),
    ...(o.operatorNamespace === undefined ? {} : { operatorNamespace: o.operatorNamespace }),
    ...kubeconfig,
  };
}

export async function planCommand(f: PlanFlags): Promise<string> {
  const slash = f.target.indexOf('/');
  if (slash <= 0 || slash === f.target.length - 1) throw new PlanError(`expected <kind>/<name>, got "${f.target}"`);
  const kc = loadKubeConfig(f.kubeconfig);
  const ref = await kindOf(kc, f.target.slice(0, slash));
  const name = f.target.slice(slash + 1);
  const pending = await pendingPlan(kc, ref, f.namespace, name);
  if (f.verb === 'show') return planText(pending.plan, pending.status, { kind: ref.kind, namespace: f.namespace, name });
  if (f.operatorNamespace === undefined)
    throw new PlanError('plan approve needs --operator-namespace (or OPERATOR_NAMESPACE): approvals are kept there');
  if (f.digest === undefined)
    throw new PlanError(
      `plan approve needs --digest: the digest of the plan you read (plan show ${f.target} -n ${f.namespace}); the pending one is ${pending.status.digest}`,
    );
  if (f.digest !== pending.status.digest)
    throw new PlanError(
      `${f.digest} is not the pending plan of ${ref.kind} ${f.namespace}/${name}: it is ${pending.status.digest} (plan show ${f.target} -n ${f.namespace})`,
    );
  await new PlanApprovals(kc, f.operatorNamespace, ref).approve(f.namespace, name, f.digest);
  return `plan ${f.digest} of ${ref.kind} ${f.namespace}/${name} approved`;
}

/**
 * The kind, from the CRDs; a CR's editor (`edit` in a namespace) may not list CRDs, so with a group
 * given it is found by API discovery instead, which every authenticated user may read.
 */
async function kindOf(kc: KubeConfig, spec: string): Promise<KindRef> {
  try {
    return await findKind(kc, spec);
  } catch (err) {
    if (!isStatus(err, 403)) throw err;
    const dot = spec.indexOf('.');
    if (dot < 0)
      throw new PlanError(
        `you may not list CustomResourceDefinitions to find kind ${spec}: name it with its group, as <Kind.group>/<name>`,
      );
    return discoveredKind(kc, spec.slice(0, dot), spec.slice(dot + 1));
  }
}

async function discoveredKind(kc: KubeConfig, kind: string, group: string): Promise<KindRef> {
  const raw = kc.makeApiClient(RawClient);
  const served = (await raw.request(HttpMethod.GET, `/apis/${encodeURIComponent(group)}`).catch((err: unknown) => {
    if (isNotFound(err)) throw new PlanError(`no API group ${group} in the cluster`);
    throw err;
  })) as { preferredVersion?: { version?: string } };
  const version = served.preferredVersion?.version ?? '';
  const list = (await raw.request(HttpMethod.GET, `/apis/${encodeURIComponent(group)}/${encodeURIComponent(version)}`)) as {
    resources?: { name: string; kind: string; singularName?: string }[];
  };
  const found = (list.resources ?? []).find(
    (r) => !r.name.includes('/') && [r.kind, r.name, r.singularName, r.kind.toLowerCase()].includes(kind),
  );
  if (found === undefined) throw new PlanError(`no kind ${kind} in API group ${group}/${version}`);
  return { kind: found.kind, group, version, plural: found.name };
}

/**
 * The CR's last plan, from its ConfigMap, checked against the digest in the CR's status: the
 * ConfigMap is writable by whoever may write ConfigMaps in the namespace, the status is not.
 */
async function pendingPlan(
  kc: KubeConfig,
  ref: KindRef,
  namespace: string,
  name: string,
): Promise<{ plan: UpgradePlan; status: PlanStatus }> {
  const raw = kc.makeApiClient(RawClient);
  const crPath = `${resourcePath({ group: ref.group, version: ref.version, plural: ref.plural, namespace })}/${encodeURIComponent(name)}`;
  const cr = (await raw.request(HttpMethod.GET, crPath).catch((err: unknown) => {
    if (isNotFound(err)) throw new PlanError(`${ref.kind} ${namespace}/${name} not found`);
    throw err;
  })) as { status?: unknown };
  const status = readStatus(cr.status).plan;
  if (status === undefined)
    throw new PlanError(
      `${ref.kind} ${namespace}/${name} has no plan: its watch holds no upgrades for approval, or no upgrade was pending since`,
    );
  const cmPath = `${resourcePath({ group: '', version: 'v1', plural: 'configmaps', namespace })}/${encodeURIComponent(planConfigMapName(ref.kind, name))}`;
  const cm = (await raw.request(HttpMethod.GET, cmPath).catch((err: unknown) => {
    if (isNotFound(err))
      throw new PlanError(
        `the plan's ConfigMap ${status.configMap} is gone; the operator writes it again at the CR's next upgrade attempt`,
      );
    throw err;
  })) as { data?: Record<string, string> };
  const plan = readPlan(cm.data?.[PLAN_KEY]);
  if (plan === undefined || planDigest(plan) !== plan.digest || plan.digest !== status.digest) {
    throw new PlanError(
      `the plan in ConfigMap ${status.configMap} is not the plan ${status.digest} the CR's status names (changed by hand, or a newer plan is being written): not shown`,
    );
  }
  return { plan, status };
}

function readPlan(text: string | undefined): UpgradePlan | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return isPlainObject(parsed) &&
      typeof parsed.digest === 'string' &&
      Array.isArray(parsed.objects) &&
      Array.isArray(parsed.hooks) &&
      Array.isArray(parsed.crds)
      ? (parsed as unknown as UpgradePlan)
      : undefined;
  } catch {
    return undefined;
  }
}

const show = (v: unknown): string => (v === undefined ? '(none)' : JSON.stringify(v));
const where = (o: PlanObject): string => `${o.kind} ${o.namespace === '' ? '' : `${o.namespace}/`}${o.name}`;

/** Pure: an object's lines: `+` created, `~` changed (each field, before and after), `-` deleted, `!` refused. */
function objectLines(o: PlanObject): string[] {
  const conflicts =
    'conflicts' in o ? (o.conflicts ?? []).map((c) => `    conflict: ${c.field} is owned by field manager "${c.manager}"`) : [];
  switch (o.action) {
    case 'create':
      return [`+ ${where(o)}`];
    case 'change':
      return [
        `~ ${where(o)}${o.volumeTemplates === true ? ' (volume claim templates change)' : ''}`,
        ...o.fields.map((f) => `    ${f.path}: ${show(f.before)} -> ${show(f.after)}`),
        ...conflicts,
      ];
    case 'delete':
      return [`- ${where(o)}${o.kept === true ? ' (kept: helm.sh/resource-policy: keep)' : ''}`];
    case 'refuse':
      return [
        `! ${where(o)}: refused by the API server${o.recreate ? ', would have to be deleted and recreated' : ''}: ${o.message}`,
        ...conflicts,
      ];
  }
}

/** Pure: what `plan show` prints. */
export function planText(
  plan: UpgradePlan,
  status: PlanStatus,
  cr: { readonly kind: string; readonly namespace: string; readonly name: string },
): string {
  const state = status.state === 'AwaitingApproval' ? 'waits for approval' : 'applied';
  return [`plan ${plan.digest} of ${cr.kind} ${cr.namespace}/${cr.name} (${state})`, ...planLines(plan)].join('\n');
}

/** Pure: the plan under its first line, as `plan show` and `plan diff` print it: what it does, then each object, hook and CRD. */
export function planLines(plan: UpgradePlan): string[] {
  const what =
    plan.fromRevision === 0
      ? `install of release ${plan.release} with chart ${plan.chart.name} ${plan.chart.version}`
      : `upgrade of release ${plan.release} from revision ${plan.fromRevision} to chart ${plan.chart.name} ${plan.chart.version}`;
  return [
    `${what}: ${describePlan(planCounts(plan), planRisks(plan))}`,
    '',
    ...plan.objects.flatMap(objectLines),
    ...plan.hooks.map((h) => `hook ${h.kind} ${h.name} runs (${h.events.join(', ')})`),
    ...plan.crds.map((c) => `CRD ${c.name}: ${c.change}${c.findings === undefined ? '' : `: ${c.findings.join('; ')}`}`),
  ];
}
