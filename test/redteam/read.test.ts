/**
 * Issue 32 item 3 and variants: the tenant copies, through `lookup` in a `tpl`'d `extraDeploy`, a
 * Secret it may not read into a ConfigMap it may read: another namespace's, an unlabelled one of
 * its own namespace, all of the cluster's, a ServiceAccount token its release had the token
 * controller write; and through the values-from annotation. Asserted on what the tenant can read:
 * its ConfigMaps, CRs with their status, and Events hold no canary, and no token found there reads a Secret.
 */
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { VALUES_FROM_ANNOTATION } from '../../src/reconciler/desired/values-from.js';
import { waitFor } from '../support/kube.js';
import { againstEachConfiguration, attack } from './support/target.js';
import { DEPLOYER } from './support/tenancy.js';

/** A ConfigMap `name` of the release's namespace holding what `lookup` of Secret(s) `namespace`/`secret` returned, as JSON. */
const loot = (name: string, namespace: string, secret: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata:\n  loot: {{ (lookup "v1" "Secret" "${namespace}" "${secret}") | toJson | quote }}`;

/** A kubeconfig for the same API server authenticated by a bearer token alone. */
function withToken(admin: KubeConfig, token: string): KubeConfig {
  const kc = new KubeConfig();
  const cluster = admin.getCurrentCluster();
  if (cluster === null) throw new Error('no current cluster');
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'stolen', token }],
    contexts: [{ name: 'stolen', cluster: cluster.name, user: 'stolen' }],
    currentContext: 'stolen',
  });
  return kc;
}

againstEachConfiguration('reads', (target, config) => {
  const a = (): string => target.tenancy.a;
  const readable = (): Promise<string> => target.tenancy.tenantReadable([config.extras]);

  /** Creates CR `name` with `extraDeploy` as the tenant and waits until the operator is done with it. */
  const steal = async (name: string, extraDeploy: string[], annotations?: Record<string, string>): Promise<string> => {
    await target.crs().create(a(), name, { extraDeploy }, annotations);
    return (await target.settle(name)).outcome;
  };

  attack(target, { id: '3a', title: "lookup through tpl of another namespace's Secret", kind: 'read' }, async () => {
    await steal('reader', [loot('loot-victim', target.tenancy.victim, 'db')]);
    expect(target.tenancy.leaked(await readable(), ['victim'])).toEqual([]);
  });

  attack(
    target,
    { id: '3b', title: "lookup through tpl of an unlabelled Secret of the tenant's own namespace", kind: 'read' },
    async () => {
      const outcome = await steal('inside', [loot('loot-internal', a(), 'internal'), loot('loot-shared', a(), 'shared')]);
      expect(outcome).toMatch(/^Deployed\//);
      const text = await readable();
      // Not vacuous: the same template copied the Secret its owner opted in (values-source label).
      expect(target.tenancy.leaked(text, ['shared']), 'the opted-in Secret was copied (the attack ran)').toEqual(['shared']);
      expect(target.tenancy.leaked(text, ['internal'])).toEqual([]);
    },
  );

  attack(
    target,
    { id: 'v7', title: 'lookup through tpl of every Secret of the cluster (a list across namespaces)', kind: 'read' },
    async () => {
      await steal('lister', [loot('loot-all', '', '')]);
      expect(target.tenancy.leaked(await readable(), ['victim', 'internal'])).toEqual([]);
    },
  );

  attack(
    target,
    { id: 'v8', title: `a ${DEPLOYER} token Secret the release creates, read back by lookup on the next upgrade`, kind: 'read' },
    async () => {
      const tokenSecret = `apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-token\n  annotations: {kubernetes.io/service-account.name: ${DEPLOYER}}\ntype: kubernetes.io/service-account-token`;
      const outcome = await steal('minter', [tokenSecret]);
      if (!outcome.startsWith('Deployed/')) return; // the token Secret was refused: nothing to read back
      // The token controller fills it in (the attack needs it there; it is not the operator's doing).
      const core = target.tenancy.admin.makeApiClient(CoreV1Api);
      await waitFor(
        'the token controller to fill minter-token',
        async () => (await core.readNamespacedSecret({ namespace: a(), name: 'minter-token' })).data?.token !== undefined,
        { timeoutMs: 60_000 },
      );
      await target.crs().patch(a(), 'minter', { spec: { extraDeploy: [tokenSecret, loot('loot-token', a(), 'minter-token')] } });
      await target.settle('minter');
      const cm = await target.tenancy.tenant
        .makeApiClient(CoreV1Api)
        .readNamespacedConfigMap({ namespace: a(), name: 'loot-token' })
        .catch(() => undefined);
      const stolen = JSON.parse(cm?.data?.loot ?? '{}') as { data?: { token?: string } };
      const token = stolen.data?.token === undefined ? undefined : Buffer.from(stolen.data.token, 'base64').toString();
      const readsSecrets = token !== undefined && (await target.tenancy.canReadSecret(withToken(target.tenancy.admin, token)));
      expect(
        { token: token !== undefined, readsSecrets },
        'a ServiceAccount token in a ConfigMap the tenant reads, and whether it reads Secret internal',
      ).toEqual({ token: false, readsSecrets: false });
    },
  );

  attack(
    target,
    { id: 'v9', title: "values-from of an unlabelled Secret of the tenant's namespace into a ConfigMap it reads", kind: 'read' },
    async () => {
      await target
        .crs()
        .create(a(), 'routed', {}, { [VALUES_FROM_ANNOTATION]: '- {kind: Secret, name: internal, key: token, targetPath: greeting}' });
      await target.settle('routed');
      expect(target.tenancy.leaked(await readable(), ['internal'])).toEqual([]);
    },
  );
});
