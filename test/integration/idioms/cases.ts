/**
 * The idiom charts (test/fixtures/charts/idioms) and what each must show on the cluster at every
 * step of its life under the operator: installed, idle, upgraded, hand-edited, deleted. The
 * lifecycle test drives the steps; each case says what its chart's idioms must look like after each.
 */
import { createHash, X509Certificate } from 'node:crypto';
import path from 'node:path';
import {
  AdmissionregistrationV1Api,
  ApiextensionsV1Api,
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type KubeConfig,
  type V1PodSpec,
} from '@kubernetes/client-node';
import { expect } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { PRIMARY_RESOURCE } from '../../../src/reconciler/objects/ownership.js';
import { exists, waitFor } from '../../support/kube.js';
import { ROOT, type TestKind } from '../../support/operator.js';
import type { Cluster } from './harness.js';

export const IDIOM_CHARTS = path.join(ROOT, 'test/fixtures/charts/idioms');

const GROUP = 'idioms.example.com';
const kindOf = (kind: string): TestKind => ({ group: GROUP, version: 'v1', kind, plural: `${kind.toLowerCase()}s` });

/** What a case's checks get: the cluster, and where its release lives. */
export interface Ctx {
  readonly kc: KubeConfig;
  readonly cluster: Cluster;
  readonly namespace: string;
  /** The CR's name, which is the release's. */
  readonly release: string;
}

export interface Edit {
  /** What a person did by hand, for the report. */
  readonly what: string;
  apply(c: Ctx): Promise<void>;
  /** Whether the chart's state is back. */
  repaired(c: Ctx): Promise<boolean>;
  /** What must hold once repaired: fields other managers own, file modes. */
  verify?(c: Ctx): Promise<void>;
}

export interface IdiomCase {
  readonly id: string;
  readonly kind: TestKind;
  readonly chart: string;
  readonly release: string;
  readonly spec: Record<string, unknown>;
  /** Ready as the operator must report it on this cluster (kwok: pods run; no volumes, no load balancers). */
  readonly ready: { readonly status: 'True' | 'False'; readonly message: RegExp };
  /** The idioms' effects right after install (and anything a controller other than helm writes next). */
  installed(c: Ctx): Promise<void>;
  /** What must still hold after the idle periods. */
  idle?(c: Ctx): Promise<void>;
  readonly upgrade: { readonly spec: Record<string, unknown>; updated(c: Ctx): Promise<boolean>; verify?(c: Ctx): Promise<void> };
  readonly edits: readonly Edit[];
  /** Inventory objects (`Kind/name`) that outlive the uninstall by design. */
  readonly kept: readonly string[];
  /** Checks once the CR is gone (hooks that ran, what stayed). */
  deleted?(c: Ctx): Promise<void>;
  /** Removes what outlives the namespace (cluster-scoped leftovers by design). */
  cleanup?(kc: KubeConfig): Promise<void>;
}

/** A hand edit as `kubectl edit` makes it: its own field manager. */
const BY_HAND = 'kubectl-edit';

/** A workload as read: Deployment, StatefulSet, DaemonSet or any object with a pod template. */
interface Workload {
  readonly spec?: { readonly template?: { readonly spec?: V1PodSpec } };
}
const podSpec = (w: Workload): V1PodSpec => w.spec?.template?.spec as V1PodSpec;
const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Every object of the release ready. */
const ALL_READY = { status: 'True', message: /^\d+\/\d+ ready$/ } as const;

/** The fields every case has: its chart under IDIOM_CHARTS, its CR kind, an empty spec, all ready. */
const basics = (id: string, kind: string, release: string) =>
  ({ id, kind: kindOf(kind), chart: path.join(IDIOM_CHARTS, id), release, spec: {}, ready: ALL_READY }) as const;

/** A hand edit of a workload's first container image; repaired once the chart's image is back. */
function imageEdit(o: { kind: 'Deployment' | 'StatefulSet'; name: string; chartImage: string; verify: (c: Ctx) => Promise<void> }): Edit {
  const ref = (c: Ctx) => ({ apiVersion: 'apps/v1', kind: o.kind, namespace: c.namespace, name: o.name });
  return {
    what: `image of the ${o.kind} changed`,
    apply: async (c) => {
      const ops = [{ op: 'replace' as const, path: '/spec/template/spec/containers/0/image', value: 'registry.example.com/hand-edited:1' }];
      expect(await c.cluster.objects.jsonPatch(ref(c), ops, BY_HAND)).toBeDefined();
    },
    repaired: async (c) => podSpec((await c.cluster.get(ref(c))) as Workload).containers[0]?.image === o.chartImage,
    verify: o.verify,
  };
}

/** bitnami nginx / grafana: a library chart, a lookup-kept password, octal modes, YAML 1.1 booleans, a test hook, kubeVersion. */
function web(): IdiomCase {
  const release = 'site';
  const name = `${release}-idiom-web`;
  let password = '';
  const deployment = (c: Ctx) => c.kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: c.namespace, name });
  const readPassword = async (c: Ctx): Promise<string> => {
    const s = await c.kc.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace: c.namespace, name: `${name}-auth` });
    return Buffer.from(s.data?.password ?? '', 'base64').toString('utf8');
  };
  /** The pod spec exactly as helm read the chart: octal 0400 is 256, `no`/`yes`/`off` are booleans. */
  const yaml11 = async (c: Ctx): Promise<void> => {
    const spec = podSpec(await deployment(c));
    expect(spec.volumes?.[0]?.configMap?.defaultMode).toBe(0o400);
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.enableServiceLinks).toBe(false);
    expect(spec.hostNetwork ?? false).toBe(false);
    expect(spec.securityContext?.runAsNonRoot).toBe(true);
    expect(spec.containers[0]?.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    expect(spec.containers[0]?.volumeMounts?.[0]?.readOnly).toBe(true);
  };
  return {
    ...basics('web', 'IdiomWeb', release),
    spec: { replicaCount: 1 },
    installed: async (c) => {
      await yaml11(c);
      const sa = await c.kc.makeApiClient(CoreV1Api).readNamespacedServiceAccount({ namespace: c.namespace, name });
      expect(sa.automountServiceAccountToken).toBe(false);
      // The library chart's helpers rendered the labels.
      expect((await deployment(c)).metadata?.labels).toMatchObject({
        'helm.sh/chart': 'idiom-web-1.2.0',
        'app.kubernetes.io/managed-by': 'Helm',
      });
      password = await readPassword(c);
      expect(password).toMatch(/^[A-Za-z0-9]{16}$/);
      // The test hook is stored with the release, never run by install, and is no release object.
      const [stored] = await c.cluster.releaseSecrets(c.namespace, release);
      const hook = stored?.record().hooks?.find((h) => h.name === `${name}-test-connection`);
      expect(hook).toMatchObject({ kind: 'Pod', events: ['test'] });
      expect(hook?.last_run?.phase ?? '').toBe('');
      expect(
        await exists(() => c.kc.makeApiClient(CoreV1Api).readNamespacedPod({ namespace: c.namespace, name: `${name}-test-connection` })),
      ).toBe(false);
    },
    idle: yaml11,
    upgrade: {
      spec: { image: { tag: '1.27.4' } },
      updated: async (c) => podSpec(await deployment(c)).containers[0]?.image === 'nginx:1.27.4',
      verify: async (c) => {
        // lookup found the Secret: the upgrade kept its password instead of drawing a new one.
        expect(await readPassword(c)).toBe(password);
        await yaml11(c);
      },
    },
    edits: [
      // The repair writes the chart's values as helm reads them: mode 256, not 400.
      imageEdit({ kind: 'Deployment', name, chartImage: 'nginx:1.27.4', verify: yaml11 }),
      {
        what: 'server-block ConfigMap deleted',
        apply: async (c) => {
          await c.kc.makeApiClient(CoreV1Api).deleteNamespacedConfigMap({ namespace: c.namespace, name: `${name}-server-block` });
        },
        repaired: async (c) => {
          try {
            const cm = await c.kc
              .makeApiClient(CoreV1Api)
              .readNamespacedConfigMap({ namespace: c.namespace, name: `${name}-server-block` });
            return cm.data?.['server-block.conf']?.includes('listen 8080;') === true;
          } catch (err) {
            if (isStatus(err, 404)) return false;
            throw err;
          }
        },
      },
    ],
    kept: [],
  };
}

/** cert-manager / ingress-nginx admission: render-time certificate, an injected caBundle, hook Jobs. */
function webhook(): IdiomCase {
  const release = 'admission';
  const name = `${release}-idiom-webhook`;
  let caBundle = '';
  const config = (c: Ctx) =>
    c.kc.makeApiClient(AdmissionregistrationV1Api).readValidatingWebhookConfiguration({ name: `${name}-${c.namespace}` });
  const configRef = (c: Ctx) => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    namespace: '',
    name: `${name}-${c.namespace}`,
  });
  const injectedCaBundleKept = async (c: Ctx): Promise<void> => {
    const live = await config(c);
    expect(live.webhooks?.[0]?.clientConfig.caBundle).toBe(caBundle);
    // Still the injector's field: nobody took it over.
    const injector = live.metadata?.managedFields?.find((f) => f.manager === 'cainjector');
    expect(JSON.stringify(injector?.fieldsV1 ?? {})).toContain('caBundle');
  };
  /** 0440 read as helm reads it: 288 (r--r-----); read as decimal 440 it is 0670, group-writable. */
  const certsMode = async (c: Ctx): Promise<void> => {
    const d = await c.kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: c.namespace, name });
    expect(podSpec(d).volumes?.[0]?.secret?.defaultMode).toBe(0o440);
  };
  const hookLeftovers = async (c: Ctx): Promise<string[]> => {
    const left: string[] = [];
    const batch = c.kc.makeApiClient(BatchV1Api);
    for (const phase of ['pre-install', 'post-install', 'pre-delete']) {
      if (await exists(() => batch.readNamespacedJob({ namespace: c.namespace, name: `${name}-${phase}` })))
        left.push(`Job/${name}-${phase}`);
    }
    if (await exists(() => c.kc.makeApiClient(CoreV1Api).readNamespacedServiceAccount({ namespace: c.namespace, name: `${name}-hooks` })))
      left.push('ServiceAccount hooks');
    if (
      await exists(() => c.kc.makeApiClient(RbacAuthorizationV1Api).readNamespacedRole({ namespace: c.namespace, name: `${name}-hooks` }))
    )
      left.push('Role hooks');
    return left;
  };
  return {
    ...basics('webhook', 'IdiomWebhook', release),
    installed: async (c) => {
      // helm ran both hook Jobs to completion and then deleted them, their RBAC with them.
      await c.cluster.waitForCompletedJobs(c.namespace, `${name}-pre-install`, 1);
      await c.cluster.waitForCompletedJobs(c.namespace, `${name}-post-install`, 1);
      expect(await hookLeftovers(c)).toEqual([]);
      const [stored] = await c.cluster.releaseSecrets(c.namespace, release);
      const phases = Object.fromEntries(
        (stored?.record().hooks ?? []).filter((h) => h.kind === 'Job').map((h) => [h.name, h.last_run?.phase]),
      );
      expect(phases).toEqual({ [`${name}-pre-install`]: 'Succeeded', [`${name}-post-install`]: 'Succeeded', [`${name}-pre-delete`]: '' });

      // The certificate made at render time: signed by the CA made with it, for the Service's name.
      const tls = await c.kc.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace: c.namespace, name: `${name}-tls` });
      const pem = (k: string) => Buffer.from(tls.data?.[k] ?? '', 'base64');
      const ca = new X509Certificate(pem('ca.crt'));
      const cert = new X509Certificate(pem('tls.crt'));
      expect(cert.checkIssued(ca)).toBe(true);
      expect(cert.verify(ca.publicKey)).toBe(true);
      expect(cert.subjectAltName).toContain(`DNS:${name}.${c.namespace}.svc`);

      // The injector (cert-manager's cainjector, ingress-nginx's patch Job) writes the CA after install.
      caBundle = tls.data?.['ca.crt'] ?? '';
      const patched = await c.cluster.objects.jsonPatch(
        configRef(c),
        [{ op: 'add', path: '/webhooks/0/clientConfig/caBundle', value: caBundle }],
        'cainjector',
      );
      expect(patched).toBeDefined();
      await injectedCaBundleKept(c);
      await certsMode(c);
    },
    idle: async (c) => {
      await injectedCaBundleKept(c);
      await certsMode(c);
    },
    upgrade: {
      spec: { webhook: { timeoutSeconds: 5 } },
      updated: async (c) => (await config(c)).webhooks?.[0]?.timeoutSeconds === 5,
      verify: async (c) => {
        await injectedCaBundleKept(c);
        // pre-upgrade and post-upgrade ran the same Jobs again (helm made new ones).
        await c.cluster.waitForCompletedJobs(c.namespace, `${name}-pre-install`, 2);
        await c.cluster.waitForCompletedJobs(c.namespace, `${name}-post-install`, 2);
        expect(await hookLeftovers(c)).toEqual([]);
      },
    },
    edits: [
      {
        what: 'failurePolicy of the webhook set to Fail',
        apply: async (c) => {
          expect(
            await c.cluster.objects.jsonPatch(configRef(c), [{ op: 'replace', path: '/webhooks/0/failurePolicy', value: 'Fail' }], BY_HAND),
          ).toBeDefined();
        },
        repaired: async (c) => (await config(c)).webhooks?.[0]?.failurePolicy === 'Ignore',
        verify: async (c) => {
          await injectedCaBundleKept(c);
          await certsMode(c);
        },
      },
    ],
    kept: [],
    deleted: async (c) => {
      // helm ran the pre-delete Job before removing the release, then deleted it.
      await c.cluster.waitForCompletedJobs(c.namespace, `${name}-pre-delete`, 1);
      expect(await hookLeftovers(c)).toEqual([]);
    },
  };
}

/** prometheus-operator / cert-manager: CRDs in crds/, an instance of one, a Secret helm keeps. */
function crds(): IdiomCase {
  const release = 'widgets';
  const name = `${release}-idiom-crds`;
  const crd = 'widgets.idioms.example.com';
  let key = '';
  const widgetRef = (c: Ctx) => ({ group: GROUP, version: 'v1', plural: 'widgets', namespace: c.namespace, name: `${name}-default` });
  const widget = async (c: Ctx): Promise<{ metadata: { uid: string }; spec: Record<string, unknown> } | undefined> => {
    try {
      return (await c.kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject(widgetRef(c))) as {
        metadata: { uid: string };
        spec: Record<string, unknown>;
      };
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  };
  const readKey = async (c: Ctx): Promise<string> =>
    (await c.kc.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace: c.namespace, name: `${name}-encryption-key` })).data?.key ?? '';
  let widgetUid = '';
  return {
    ...basics('crds', 'IdiomCrds', release),
    installed: async (c) => {
      const def = await c.kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: crd });
      expect(def.status?.conditions?.find((x) => x.type === 'Established')?.status).toBe('True');
      // The API server defaulted what the chart left out; that is not drift.
      expect((await widget(c))?.spec).toEqual({ size: 3, color: 'blue', paused: false });
      key = await readKey(c);
      expect(Buffer.from(key, 'base64').toString()).toMatch(/^[A-Za-z0-9]{32}$/);
    },
    upgrade: {
      spec: { defaultWidget: { size: 5 } },
      updated: async (c) => (await widget(c))?.spec.size === 5,
      verify: async (c) => {
        expect(await readKey(c)).toBe(key);
      },
    },
    edits: [
      {
        what: 'Widget (a CR of the chart’s own CRD) deleted',
        apply: async (c) => {
          widgetUid = (await widget(c))?.metadata.uid ?? '';
          await c.kc.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject(widgetRef(c));
        },
        repaired: async (c) => {
          const w = await widget(c);
          return w !== undefined && w.metadata.uid !== widgetUid && w.spec.size === 5;
        },
      },
    ],
    kept: [`Secret/${name}-encryption-key`],
    deleted: async (c) => {
      // `keep` kept the key, unchanged; helm never deletes what crds/ installed.
      expect(await readKey(c)).toBe(key);
      expect(await exists(() => c.kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: crd }))).toBe(true);
      expect(await widget(c)).toBeUndefined();
    },
    cleanup: async (kc) => {
      await kc
        .makeApiClient(ApiextensionsV1Api)
        .deleteCustomResourceDefinition({ name: crd })
        .catch(() => undefined);
    },
  };
}

/** bitnami redis, node-exporter, kube-state-metrics, ingress-nginx: StatefulSet with claims, DaemonSet, LoadBalancer, ClusterRole. */
function data(): IdiomCase {
  const release = 'cache';
  const name = `${release}-idiom-data`;
  const claim = `data-${name}-0`;
  const statefulSet = (c: Ctx) => c.kc.makeApiClient(AppsV1Api).readNamespacedStatefulSet({ namespace: c.namespace, name });
  /** 0755 read as helm reads it: 493. Read as decimal 755 the API server refuses it. */
  const scriptsMode = async (c: Ctx): Promise<void> => {
    const spec = podSpec(await statefulSet(c));
    expect(spec.volumes?.find((v) => v.name === 'scripts')?.configMap?.defaultMode).toBe(0o755);
    expect(spec.enableServiceLinks).toBe(false);
    expect(spec.automountServiceAccountToken).toBe(false);
  };
  return {
    ...basics('data', 'IdiomData', release),
    // Honest on this cluster: no provisioner binds the claim (so the pod stays Pending) and no load balancer assigns an address.
    ready: {
      status: 'False',
      message: new RegExp(
        `^\\d+/\\d+ ready: Service ${name}-gateway waiting for a load balancer address; StatefulSet ${name} 0/1 ready(, 0/1 updated)?$`,
      ),
    },
    installed: async (c) => {
      await scriptsMode(c);
      const pvc = await c.kc.makeApiClient(CoreV1Api).readNamespacedPersistentVolumeClaim({ namespace: c.namespace, name: claim });
      expect(pvc.status?.phase).toBe('Pending');
      const ds = await c.kc.makeApiClient(AppsV1Api).readNamespacedDaemonSet({ namespace: c.namespace, name: `${name}-agent` });
      expect(ds.status?.numberAvailable).toBe(1);
      expect(podSpec(ds).hostPID).toBe(true);
      const role = await c.kc.makeApiClient(RbacAuthorizationV1Api).readClusterRole({ name: `${name}-${c.namespace}-agent` });
      // A cluster-scoped object cannot have a namespaced owner: operator-sdk's annotations stand in.
      expect(role.metadata?.annotations?.[PRIMARY_RESOURCE]).toBe(`${c.namespace}/${release}`);
    },
    idle: scriptsMode,
    upgrade: {
      spec: { image: { tag: '7.4.3' } },
      updated: async (c) => podSpec(await statefulSet(c)).containers[0]?.image === 'registry.example.com/idioms/redis:7.4.3',
      verify: scriptsMode,
    },
    edits: [imageEdit({ kind: 'StatefulSet', name, chartImage: 'registry.example.com/idioms/redis:7.4.3', verify: scriptsMode })],
    kept: [],
    deleted: async (c) => {
      // The chart's retention policy hands the claim to the garbage collector with its StatefulSet.
      const core = c.kc.makeApiClient(CoreV1Api);
      await waitFor(
        `PVC ${claim} to be deleted with its StatefulSet`,
        async () => !(await exists(() => core.readNamespacedPersistentVolumeClaim({ namespace: c.namespace, name: claim }))),
      );
    },
  };
}

/** grafana / kube-prometheus-stack dashboards: a release whose stored record nears helm's 1 MiB limit. */
function big(): IdiomCase {
  const release = 'dash';
  const cm = (i: number) => `${release}-dashboards-${i}`;
  let content = '';
  let uid = '';
  const read = (c: Ctx, i: number) => c.kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: c.namespace, name: cm(i) });
  const sizes = async (c: Ctx): Promise<number[]> => (await c.cluster.releaseSecrets(c.namespace, release)).map((s) => s.bytes);
  return {
    ...basics('big', 'IdiomBig', release),
    ready: { status: 'True', message: /^2\/2 ready$/ },
    installed: async (c) => {
      const [bytes] = await sizes(c);
      expect(bytes).toBeGreaterThan(0.8 * 2 ** 20);
      expect(bytes).toBeLessThan(2 ** 20);
      for (const i of [0, 1]) expect((await read(c, i)).data?.[`dashboard-${i}.json`]).toHaveLength(440_000);
    },
    upgrade: {
      spec: { release: 'beta' },
      updated: async (c) =>
        (await read(c, 0)).metadata?.labels?.['idioms.example.com/channel'] === 'beta' &&
        (await read(c, 1)).metadata?.labels?.['idioms.example.com/channel'] === 'beta',
      verify: async (c) => {
        // Both revisions are stored, each below the limit.
        const stored = await sizes(c);
        expect(stored).toHaveLength(2);
        for (const bytes of stored) expect(bytes).toBeLessThan(2 ** 20);
      },
    },
    edits: [
      {
        what: 'a 440 kB dashboards ConfigMap deleted',
        apply: async (c) => {
          const live = await read(c, 1);
          content = sha(live.data?.['dashboard-1.json'] ?? '');
          uid = live.metadata?.uid ?? '';
          await c.kc.makeApiClient(CoreV1Api).deleteNamespacedConfigMap({ namespace: c.namespace, name: cm(1) });
        },
        repaired: async (c) => {
          try {
            const live = await read(c, 1);
            return live.metadata?.uid !== uid && sha(live.data?.['dashboard-1.json'] ?? '') === content;
          } catch (err) {
            if (isStatus(err, 404)) return false;
            throw err;
          }
        },
      },
    ],
    kept: [],
  };
}

/** A fresh set of cases (each keeps what it read at install to compare later). */
export const idiomCases = (): IdiomCase[] => [web(), webhook(), crds(), data(), big()];
