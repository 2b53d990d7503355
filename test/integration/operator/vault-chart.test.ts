/**
 * Issue 49, "Done when": hashicorp's public vault chart 0.34.1 (vendored unchanged in
 * test/fixtures/charts/vault-0.34.1, from github.com/hashicorp/vault-helm tag v0.34.1) with the
 * ignore rule its documentation gives for the injector's webhook
 * (`/webhooks/0/clientConfig/caBundle` on MutatingWebhookConfiguration). The chart renders
 * `caBundle: ""`; vault-k8s's injector fills it at run time as its own field manager. Before
 * ADR 0072 a spec change after that write gave revisions 2 `failed` (ResourceConflict),
 * 3 `Rollback to 1`, 4 `Upgrade complete`, and the CA back to ''. Now: one `deployed` revision,
 * server-side, and the CA stays.
 *
 * Kept light on the fake node: the injector only (`server.enabled: false`, an external Vault
 * address), its webhook narrowed to this test's namespace and a label no pod carries, so no other
 * test's pod creation is ever sent to it.
 */
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1MutatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { helmByHand } from '../../support/helm.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, startOperator, type RunningOperator, type TestKind } from '../../support/operator.js';

const CHART = fixtureChart('vault-0.34.1');
const VAULT: TestKind = { group: 'vaultchart.example.com', version: 'v1', kind: 'Vault', plural: 'vaults' };
/** The rule vault's documentation gives for the injector's CA. */
const POINTER = '/webhooks/0/clientConfig/caBundle';
const WATCHES = [
  `- group: ${VAULT.group}`,
  '  version: v1',
  `  kind: ${VAULT.kind}`,
  `  chart: ${CHART}`,
  '  driftIgnore:',
  `    - paths: [${POINTER}]`,
  '      target: {kind: MutatingWebhookConfiguration}',
].join('\n');
const CA = Buffer.from('-----BEGIN CERTIFICATE-----\nvault-chart test CA\n-----END CERTIFICATE-----\n').toString('base64');
/** vault-k8s's injector writes the CA under this manager name. */
const INJECTOR = 'vault-k8s';
const WAIT = { timeoutMs: 180_000 };
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

describe('the public vault chart 0.34.1 with its documented ignore rule', () => {
  const kc = testKubeConfig();
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;
  /** The release (the CR's name) contains "vault", so the chart's fullname is the release name. */
  let release: string;

  const cfgName = (): string => `${release}-agent-injector-cfg`;
  const webhook = async (): Promise<V1MutatingWebhookConfiguration | undefined> => {
    try {
      return await admission.readMutatingWebhookConfiguration({ name: cfgName() });
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  };
  const caBundle = async (): Promise<string> => (await webhook())?.webhooks?.[0]?.clientConfig.caBundle ?? '';
  const caManagers = async (): Promise<string[]> =>
    ((await webhook())?.metadata?.managedFields ?? [])
      .filter((e) => JSON.stringify(e.fieldsV1).includes('f:caBundle'))
      .map((e) => e.manager ?? '');
  const injectorLogLevel = async (): Promise<string | undefined> => {
    const deployment = await apps.readNamespacedDeployment({ namespace: ns.name, name: `${release}-agent-injector` });
    return (deployment.spec?.template.spec?.containers[0]?.env ?? []).find((e) => e.name === 'AGENT_INJECT_LOG_LEVEL')?.value;
  };
  const values = (logLevel: string): Record<string, unknown> => ({
    server: { enabled: false },
    injector: {
      logLevel,
      externalVaultAddr: 'http://vault.example.com:8200',
      webhook: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns.name } },
        objectSelector: { matchLabels: { 'vaultchart.example.com/inject': ns.name } },
      },
    },
  });
  const history = async () =>
    (JSON.parse(await helmByHand('history', release, '-n', ns.name, '-o', 'json')) as { revision: number; status: string }[]).map(
      ({ revision, status }) => ({ revision, status }),
    );
  const applyMethod = async (): Promise<string | undefined> =>
    (JSON.parse(await helmByHand('status', release, '-n', ns.name, '-o', 'json')) as { apply_method?: string }).apply_method;

  beforeAll(async () => {
    await ensureCrd(kc, VAULT);
    ns = await createNamespace(kc, 'vault-chart');
    release = ns.name;
    op = await startOperator({ watches: WATCHES, namespaces: [ns.name] });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
    // Cluster-scoped objects of the release that the namespace's removal does not take.
    await admission.deleteMutatingWebhookConfiguration({ name: cfgName() }).catch(() => undefined);
  });

  it('a spec change after the injector wrote its CA is one deployed revision, server-side, and the CA stays', async () => {
    const vaults = new CRs(kc, VAULT);
    await vaults.create(ns.name, release, values('info'));
    await vaults.waitForCondition(ns.name, release, { type: 'Deployed', status: 'True' }, WAIT);
    expect(await caBundle()).toBe('');

    // The injector at start-up: its CA into the webhook, as its own field manager.
    await admission.patchMutatingWebhookConfiguration(
      { name: cfgName(), body: [{ op: 'add', path: POINTER, value: CA }], fieldManager: INJECTOR },
      jsonPatch,
    );
    expect(await caBundle()).toBe(CA);

    await vaults.patch(ns.name, release, { spec: values('debug') });
    await waitFor(
      'the vault release to deploy revision 2',
      async () => {
        const cr = await vaults.get(ns.name, release);
        return (
          cr?.status?.deployedRelease?.revision === 2 &&
          condition(cr, 'Deployed')?.status === 'True' &&
          cr.status.observedGeneration === cr.metadata.generation
        );
      },
      WAIT,
    );
    expect(await injectorLogLevel()).toBe('debug');
    expect(await caBundle()).toBe(CA);
    expect(await history()).toStrictEqual([
      { revision: 1, status: 'superseded' },
      { revision: 2, status: 'deployed' },
    ]);
    expect(await applyMethod()).toBe('ssa');
    const cr = await vaults.get(ns.name, release);
    expect(condition(cr, 'ReleaseFailed')?.status).toBe('False');
    const reasons = (await vaults.events(ns.name, release)).map((e) => e.reason);
    expect(reasons).not.toContain('RollbackSuccessful');
    expect(reasons).not.toContain('UpgradeFailed');
    // The CA is the injector's alone: helm's manager never took it.
    expect(await caManagers()).toStrictEqual([INJECTOR]);
  });
});
