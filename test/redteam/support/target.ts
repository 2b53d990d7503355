/**
 * The operator under attack: the real `helm-operator run` as its own process (the production
 * tests' runner), in one of two configurations, over two tenants' namespaces. Every attack checks
 * afterwards that the same process still runs and answers /healthz: a tenant that crashes or
 * freezes the operator has won whatever else the test asserts.
 */
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type KubeConfig,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { spawnOperator, watchesFile, type OperatorProcess } from '../../integration/production/support.js';
import { createNamespace, exists, waitFor, type WaitOptions } from '../../support/kube.js';
import { CRs, ensureCrd, fixtureChart, type CR, type TestKind } from '../../support/operator.js';
import { recordAttack, type Expectation } from './report.js';
import { scaffoldedFields, scaffoldedWatch } from './scaffolded.js';
import { DEPLOYER, GROUP, Tenancy } from './tenancy.js';

export const EXTRAS_CHART = fixtureChart('tenant-extras');
export const CRDS_CHART = fixtureChart('tenant-crds');

export interface Configuration {
  readonly name: 'recommended' | 'default' | 'scaffolded' | 'planned' | 'rolled';
  /** What docs/multi-tenancy.md says about it. */
  readonly description: string;
  /** Fields of each watch entry of this configuration (flow-mapping syntax), given the entry's chart. */
  readonly watchFields: readonly string[] | ((chart: string) => Promise<readonly string[]>);
  readonly args: readonly string[];
  /** The kind whose chart is tenant-extras (bitnami-style `extraDeploy` through `tpl`). */
  readonly extras: TestKind;
  /** The kind whose chart ships a CRD in `crds/`. */
  readonly gadgets: TestKind;
  /**
   * The operator gets a namespace of its own (`--leader-election-namespace`), where platform
   * approvals of plans are kept (docs/adr/0084); no tenant has rights there.
   */
  readonly operatorNamespace?: true;
  /** The operator reloads its watches file when it changes (`--watch-config`): {@link Target.reconfigure} moves the fleet revision. */
  readonly reloads?: true;
}

/**
 * Flags appended to every operator under attack, to switch a protection off and see its attacks
 * fail (a break-check): `REDTEAM_OPERATOR_ARGS='--max-concurrent-reconciles-per-namespace 2'`.
 */
const BREAK_ARGS = (process.env.REDTEAM_OPERATOR_ARGS ?? '').split(/\s+/).filter((a) => a !== '');

/** The operator's V8 heap limit, MiB. */
const HEAP_MB = 768;

const kind = (name: string): TestKind => ({ group: GROUP, version: 'v1', kind: name, plural: `${name.toLowerCase()}s` });

/**
 * docs/multi-tenancy.md, "Lock-down" (the multi-tenant recommendation): every watch acts as
 * the ServiceAccount `deployer` of the CR's namespace (`--default-service-account`), with the helm
 * gateway's defense in depth: `confineToNamespace`, and `allowKinds` listing the kinds a
 * bitnami-style chart renders (its ConfigMap, its password Secret, a hook Job). `sensitiveValues` is
 * the chart author's, in both configurations.
 */
export const RECOMMENDED: Configuration = {
  name: 'recommended',
  description: `--default-service-account ${DEPLOYER} + confineToNamespace + allowKinds (docs/multi-tenancy.md)`,
  watchFields: ['confineToNamespace: true', 'allowKinds: [ConfigMap, Secret, Job.batch]', 'sensitiveValues: [auth]'],
  args: ['--default-service-account', DEPLOYER],
  extras: kind('LockedExtras'),
  gadgets: kind('LockedGadgets'),
};

/** No tenancy option: CR authors get the operator's rights, as docs/multi-tenancy.md says (and operator-sdk does). */
export const DEFAULT: Configuration = {
  name: 'default',
  description: 'no tenancy options',
  watchFields: ['sensitiveValues: [auth]'],
  args: [],
  extras: kind('OpenExtras'),
  gadgets: kind('OpenGadgets'),
};

/**
 * What `create api` writes for each chart and nothing else: `allowKinds`, the kinds the chart
 * renders with its defaults (the extras chart: its ConfigMap; the gadgets chart: its CRD too).
 */
export const SCAFFOLDED: Configuration = {
  name: 'scaffolded',
  description: "create api's watch entry: allowKinds (the chart's kinds), no other tenancy option",
  watchFields: async (chart) => [...scaffoldedFields(await scaffoldedWatch(chart)), 'sensitiveValues: [auth]'],
  args: [],
  extras: kind('ScaffoldedExtras'),
  gadgets: kind('ScaffoldedGadgets'),
};

export const CONFIGURATIONS: readonly Configuration[] = [RECOMMENDED, DEFAULT];

/** The recommended lock-down, with every upgrade held for the platform's approval of its plan (docs/plans.md). */
export const PLANNED: Configuration = {
  ...RECOMMENDED,
  name: 'planned',
  description: `${RECOMMENDED.description} + approval: always, approvedBy: platform (docs/plans.md)`,
  watchFields: [...(RECOMMENDED.watchFields as readonly string[]), 'approval: always', 'approvedBy: platform'],
  extras: kind('PlannedExtras'),
  gadgets: kind('PlannedGadgets'),
  operatorNamespace: true,
};

/**
 * The recommended lock-down with a waved rollout (one canary, then waves of one; a CR is healthy
 * after 60 s Ready) and risky plans held for the platform (docs/rollouts.md, docs/plans.md). The
 * operator reloads its watches file, so an attack moves the fleet revision without a restart.
 */
export const ROLLED: Configuration = {
  ...RECOMMENDED,
  name: 'rolled',
  description: `${RECOMMENDED.description} + rollout (canary 1, waves of 1, stableFor 20s) + approval: risky, approvedBy: platform`,
  watchFields: [
    ...(RECOMMENDED.watchFields as readonly string[]),
    'rollout: {canary: 1, waveSize: 1, stableFor: 20s, healthTimeout: 10m}',
    'approval: risky',
    'approvedBy: platform',
  ],
  extras: kind('RolledExtras'),
  gadgets: kind('RolledGadgets'),
  operatorNamespace: true,
  reloads: true,
};

/** The fields of configuration `c`'s watch entry for `chart`. */
export const watchFieldsOf = async (c: Configuration, chart: string): Promise<readonly string[]> =>
  typeof c.watchFields === 'function' ? c.watchFields(chart) : c.watchFields;

/** `extra`: more fields of the extras kind's entry (a reconfiguration). */
async function watches(c: Configuration, extra: readonly string[] = []): Promise<string> {
  const entry = async (k: TestKind, chart: string, more: readonly string[] = []): Promise<string> =>
    `- {group: ${k.group}, version: ${k.version}, kind: ${k.kind}, chart: ${chart}, ${[...(await watchFieldsOf(c, chart)), ...more].join(', ')}}`;
  return `${await entry(c.extras, EXTRAS_CHART, extra)}\n${await entry(c.gadgets, CRDS_CHART)}\n`;
}

/** Why a probe of /healthz failed, or undefined when it answered 200 within 2 s. */
async function healthProblem(url: string): Promise<string | undefined> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
    return res.status === 200 ? undefined : `/healthz answered ${res.status}`;
  } catch (err) {
    return `/healthz did not answer within 2 s: ${(err as Error).message}`;
  }
}

interface Created {
  readonly kind: TestKind;
  readonly namespace: string;
  readonly name: string;
}

/** CRs that remembers what it created. */
class TrackedCRs extends CRs {
  constructor(
    kc: KubeConfig,
    k: TestKind,
    private readonly created: Created[],
  ) {
    super(kc, k);
  }

  override async create(namespace: string, name: string, spec: Record<string, unknown>, annotations?: Record<string, string>): Promise<CR> {
    this.created.push({ kind: this.kind, namespace, name });
    return super.create(namespace, name, spec, annotations);
  }
}

export class Target {
  /** Operator processes started after one ended: each is a crash or a kill some attack caused. */
  restarts = 0;
  /** How the operator ended each CR the current attack waited for (`name: Type/Reason`), for the report. */
  outcomes: string[] = [];
  #tenancy: Tenancy | undefined;
  #proc: OperatorProcess | undefined;
  #health = '';
  #watches: Awaited<ReturnType<typeof watchesFile>> | undefined;
  #operatorNamespace: Awaited<ReturnType<typeof createNamespace>> | undefined;
  readonly #created: Created[] = [];

  constructor(readonly config: Configuration) {}

  get tenancy(): Tenancy {
    if (this.#tenancy === undefined) throw new Error('the target is not set up (beforeAll)');
    return this.#tenancy;
  }

  get process(): OperatorProcess {
    if (this.#proc === undefined) throw new Error('the operator is not running');
    return this.#proc;
  }

  /** Waits until the operator has finished with CR `name` of the attacker's namespace (as {@link settle}), noting the outcome. */
  async settle(name: string, k: TestKind = this.config.extras, o: WaitOptions = {}): Promise<{ cr: CR; outcome: string }> {
    const p = this.process;
    const died = p.exited.then(({ code, signal }) => {
      throw new Error(
        `the operator died (${String(code ?? signal)}) before it finished with ${name}; its output ends:\n${p.dump().slice(-2000)}`,
      );
    });
    const done = await Promise.race([settle(this.adminCrs(k), this.tenancy.a, name, o), died]);
    this.outcomes.push(`${name}: ${done.outcome}`);
    return done;
  }

  /** The attacker's view of the CRs of `k` (the extras kind by default); what it creates is removed after the attack. */
  crs(k: TestKind = this.config.extras): CRs {
    return new TrackedCRs(this.tenancy.tenant, k, this.#created);
  }

  /**
   * Removes the CRs the attack created, finalizers and all (a dead operator would never remove
   * them): a CR that crashes the operator must not crash the next one started for the next attack.
   * Their releases stay behind; the namespace goes at the end of the file.
   */
  async removeCreated(): Promise<void> {
    const created = this.#created.splice(0);
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const custom = this.tenancy.admin.makeApiClient(CustomObjectsApi);
    await Promise.all(
      created.map(async ({ kind: k, namespace, name }) => {
        const ref = { group: k.group, version: k.version, plural: k.plural, namespace, name };
        await custom.deleteNamespacedCustomObject(ref).catch(() => undefined);
        await custom.patchNamespacedCustomObject({ ...ref, body: { metadata: { finalizers: null } } }, merge).catch(() => undefined);
      }),
    );
  }

  /** The cluster admin's view, for another tenant's CRs the attack creates: removed after the attack as the attacker's are. */
  trackedAdminCrs(k: TestKind = this.config.extras): CRs {
    return new TrackedCRs(this.tenancy.admin, k, this.#created);
  }

  /** The cluster admin's view: for CRs of other tenants and for reading status without the attacker's limits. */
  adminCrs(k: TestKind = this.config.extras): CRs {
    return new CRs(this.tenancy.admin, k);
  }

  async setUp(): Promise<void> {
    this.#tenancy = await Tenancy.create();
    await ensureCrd(this.#tenancy.admin, this.config.extras);
    await ensureCrd(this.#tenancy.admin, this.config.gadgets);
    this.#watches = await watchesFile(await watches(this.config));
    if (this.config.operatorNamespace === true) this.#operatorNamespace = await createNamespace(this.tenancy.admin, 'redteam-operator');
    await this.#start();
  }

  /**
   * Rewrites the watches file with `extra` fields in the extras kind's entry (an `overrideValues`:
   * a new fleet revision); the operator of a configuration that {@link Configuration.reloads} picks it up.
   */
  async reconfigure(extra: readonly string[]): Promise<void> {
    if (this.config.reloads !== true) throw new Error(`the ${this.config.name} configuration does not reload its watches`);
    await this.#watches?.write(await watches(this.config, extra));
  }

  /** The operator's own namespace (configurations with {@link Configuration.operatorNamespace}). */
  get operatorNamespace(): string {
    if (this.#operatorNamespace === undefined) throw new Error(`the ${this.config.name} configuration has no operator namespace`);
    return this.#operatorNamespace.name;
  }

  async #start(): Promise<void> {
    const p = spawnOperator({
      watchesFile: this.#watches?.file ?? '',
      namespace: `${this.tenancy.a},${this.tenancy.b}`,
      args: [
        ...this.config.args,
        // The operator's own namespace, where it reads the platform's approvals (the flag alone
        // names it, src/cli/flags.ts); with leader election, as a production operator runs.
        ...(this.#operatorNamespace === undefined
          ? []
          : [
              '--leader-elect',
              '--leader-election-id',
              `redteam-${this.config.name}`,
              '--leader-election-namespace',
              this.#operatorNamespace.name,
            ]),
        ...(this.config.reloads === true ? ['--watch-config'] : []),
        ...BREAK_ARGS,
      ],
      // As in a container with a memory limit: an attack that allocates without bound ends the
      // process within seconds instead of taking the shared test machine's memory.
      env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}` },
    });
    this.#proc = p;
    const exited = p.exited.then(({ code, signal }) => {
      throw new Error(`the operator exited (${String(code ?? signal)}) before its controllers started:\n${p.dump().slice(-2000)}`);
    });
    await Promise.race([p.waitForLog('the controllers to start', (l) => l.msg === 'All controllers started and synced', 90_000), exited]);
    this.#health = await p.healthUrl();
  }

  /** Starts the operator again when an attack left it dead (counted in `restarts`). */
  async ensureRunning(): Promise<void> {
    const p = this.#proc;
    if (p !== undefined && p.child.exitCode === null && p.child.signalCode === null && (await healthProblem(this.#health)) === undefined)
      return;
    if (p !== undefined) {
      p.child.kill('SIGKILL');
      await p.exited;
    }
    this.restarts++;
    await this.#start();
  }

  /** The same process as before the attack, alive, and answering /healthz. */
  async expectAlive(pid: number, restarts: number): Promise<void> {
    const p = this.process;
    const ended =
      p.child.exitCode !== null || p.child.signalCode !== null ? `exited (${String(p.child.exitCode ?? p.child.signalCode)})` : undefined;
    expect(ended, `the operator process ${pid}; its output ends:\n${p.dump().slice(-3000)}`).toBeUndefined();
    expect(p.pid).toBe(pid);
    expect(this.restarts).toBe(restarts);
    expect(await healthProblem(this.#health)).toBeUndefined();
  }

  async tearDown(): Promise<void> {
    await this.#proc?.stop(30_000);
    await this.#tenancy?.remove();
    await this.#operatorNamespace?.remove();
    await this.#watches?.remove();
  }
}

/**
 * One describe per configuration, `topic` and the configuration in its title, with its own
 * tenants and operator process (set up before, torn down after); `attacks` registers the tests.
 */
export function againstEachConfiguration(
  topic: string,
  attacks: (target: Target, config: Configuration) => void,
  configurations: readonly Configuration[] = CONFIGURATIONS,
): void {
  for (const config of configurations) {
    describe(`${topic}, ${config.name} configuration (${config.description})`, () => {
      const target = new Target(config);
      beforeAll(() => target.setUp(), 240_000);
      afterAll(() => target.tearDown(), 240_000);
      beforeEach(() => target.ensureRunning(), 120_000);
      attacks(target, config);
    });
  }
}

/**
 * What an attack tries: to crash or freeze the operator, starve other tenants, escalate beyond the
 * tenant's rights, read what the tenant may not, leak a secret into status, events or the log, take
 * over a release, hide what helm created from the CR's inventory, or (the operator author's
 * mistake) load an unsafe chart.
 */
export type AttackKind = 'crash' | 'starve' | 'escalate' | 'read' | 'leak' | 'takeover' | 'load' | 'hide';

export interface AttackOptions {
  /** The item (`1a`, `2c`, …) or `v<n>` for a variant of ours. */
  readonly id: string;
  readonly title: string;
  readonly kind: AttackKind;
  /**
   * The protection this attack needs that has not landed yet: the test is `it.fails` (it passes
   * while the attack succeeds, and fails the day the protection lands, to be turned into `it`).
   */
  readonly missing?: string;
  readonly timeoutMs?: number;
  /**
   * The attack writes only kinds the chart renders itself (a ConfigMap elsewhere, the chart's own
   * CRD): an allow-list of the chart's kinds cannot tell it from the chart's objects.
   */
  readonly chartKindsOnly?: boolean;
}

/**
 * docs/multi-tenancy.md says the default configuration gives CR authors the operator's rights: escalation and
 * reads succeed there by design; the scaffolded one stops only the escalations that need a kind the
 * chart does not render.
 */
export function expectationOf(config: Configuration, o: Pick<AttackOptions, 'kind' | 'chartKindsOnly'>): Expectation {
  if (config.name === 'default') return o.kind === 'escalate' || o.kind === 'read' ? 'by-design' : 'holds';
  if (config.name === 'scaffolded')
    return o.kind === 'read' || (o.kind === 'escalate' && o.chartKindsOnly === true) ? 'by-design' : 'holds';
  return 'holds';
}

const isAssertion = (err: unknown): boolean => err instanceof Error && err.name === 'AssertionError';
const firstLine = (err: unknown): string => (err instanceof Error ? err.message : String(err)).split('\n')[0]?.slice(0, 300) ?? '';

/**
 * One attack as one test. `perform` fails (an assertion) when the attack succeeded. Afterwards the
 * operator must be the same live process. In the default configuration an escalation or read is
 * run, its outcome recorded as "by design", and only the operator's survival asserted.
 */
export function attack(target: Target, o: AttackOptions, perform: () => Promise<void>): void {
  const { id, title } = o;
  const expectation = expectationOf(target.config, o);
  // Only an attack that must hold waits for a protection; a by-design run passes either way.
  const missing = expectation === 'holds' ? o.missing : undefined;
  const test = missing === undefined ? it : it.fails;
  const label = expectation === 'by-design' ? `${id} ${title} (not protected by design here)` : `${id} ${title}`;
  test(label, { timeout: o.timeoutMs ?? 180_000 }, async () => {
    const { pid } = target.process;
    const restarts = target.restarts;
    target.outcomes = [];
    const record = (held: boolean, err?: unknown): void => {
      recordAttack({
        id,
        title,
        config: target.config.name,
        expectation,
        held,
        outcomes: target.outcomes,
        ...(missing === undefined ? {} : { missing }),
        ...(err === undefined ? {} : { why: firstLine(err) }),
      });
    };
    let succeeded: unknown;
    try {
      try {
        await perform();
      } catch (err) {
        if (expectation === 'holds' || !isAssertion(err)) throw err;
        succeeded = err;
      }
      await target.expectAlive(pid, restarts);
    } catch (err) {
      record(false, err);
      throw err;
    } finally {
      await target.removeCreated();
    }
    record(succeeded === undefined, succeeded);
  });
}

/**
 * Whether the operator has finished with the current generation of `cr`, and how: `Type/Reason`
 * (and the message's start, for a failure). A success sets status.observedGeneration, and so does
 * a terminal failure; a failure that is retried does not, so a failure condition that is True is
 * taken as this generation's (the attacks change a CR's spec only once it is deployed, when both
 * failure conditions are False).
 */
export function settledOutcome(cr: CR | undefined): string | undefined {
  if (cr === undefined) return undefined;
  const generation = cr.metadata.generation ?? 1;
  const observed = cr.status?.observedGeneration;
  const conditions = cr.status?.conditions ?? [];
  const isTrue = (type: string) => conditions.find((c) => c.type === type && c.status === 'True');
  for (const type of ['Irreconcilable', 'ReleaseFailed']) {
    const c = isTrue(type);
    if (c !== undefined) return `${c.type}/${c.reason} (${c.message.slice(0, 240)})`;
  }
  const deployed = isTrue('Deployed');
  return deployed !== undefined && observed === generation ? `${deployed.type}/${deployed.reason}` : undefined;
}

/** Waits until the operator has finished with the CR's current generation; returns it and its outcome. */
export async function settle(crs: CRs, namespace: string, name: string, o: WaitOptions = {}): Promise<{ cr: CR; outcome: string }> {
  return waitFor(
    `${crs.kind.kind} ${namespace}/${name} to be deployed, failed or irreconcilable for its generation`,
    async () => {
      const cr = await crs.get(namespace, name);
      const outcome = settledOutcome(cr);
      return outcome === undefined || cr === undefined ? undefined : { cr, outcome };
    },
    { timeoutMs: 120_000, intervalMs: 500, ...o },
  );
}

/** The ConfigMaps of the attacker's namespace that helm made for release `release` (by helm's ownership annotation). */
export async function releaseConfigMaps(target: Target, release: string): Promise<V1ConfigMap[]> {
  const list = await target.tenancy.admin.makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: target.tenancy.a });
  return list.items.filter((c) => c.metadata?.annotations?.['meta.helm.sh/release-name'] === release);
}

/** Deletes CR `name` (uninstalling its release) and waits until it is gone; gives up quietly after `timeoutMs`. */
export async function discard(crs: CRs, namespace: string, name: string, timeoutMs = 90_000): Promise<void> {
  await crs.delete(namespace, name).catch(() => undefined);
  await crs.waitForGone(namespace, name, { timeoutMs }).catch(() => undefined);
}

/**
 * Whether ClusterRoleBinding `name` exists. A successful attack must not outlive its test (the
 * tenant would be cluster-admin for every later one): then CR `cr`, whose release holds the binding,
 * is deleted, and the binding with it.
 */
export async function clusterRoleBindingCreated(target: Target, name: string, cr: { crs: CRs; name: string }): Promise<boolean> {
  const rbac = target.tenancy.admin.makeApiClient(RbacAuthorizationV1Api);
  if (!(await exists(() => rbac.readClusterRoleBinding({ name })))) return false;
  await discard(cr.crs, target.tenancy.a, cr.name);
  await rbac.deleteClusterRoleBinding({ name }).catch(() => undefined);
  return true;
}
