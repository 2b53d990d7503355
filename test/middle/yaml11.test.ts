/**
 * Moved from the operator-level test/integration/operator/yaml11.test.ts (which waited on 1 s resyncs): the
 * same decisions, reconcile by reconcile. A release whose chart mounts a ConfigMap with
 * `defaultMode: 0400` (YAML 1.1 octal: 256, a read-only mount) keeps mode 256 through install, idle
 * reconciles, a hand edit of another field and its repair. Read as YAML 1.2 the operator took the
 * mode for decimal 400 (octal 0620) and "repaired" the mount group-writable, and could restore
 * nothing of a chart spelling booleans `no`/`yes`. The repair's event names only the field that changed.
 */
import { AppsV1Api, PatchStrategy, setHeaderOptions, type V1Deployment } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testKubeConfig } from '../support/kube.js';
import { CRs, ensureCrd, fixtureChart, type TestKind } from '../support/operator.js';
import { caseNamespaces, startReconcilers, type CaseNamespaces, type ReconcilerHarness } from '../support/reconciler-harness.js';

const READER: TestKind = { group: 'yaml11.example.com', version: 'v1', kind: 'Reader', plural: 'readers' };
/** `mode`: only `defaultMode: 0400` is YAML 1.1 (read as YAML 1.2: 400, a valid, group-writable mode); `yaml11`: every value it can be. */
const RELEASES = [
  { name: 'modes', spec: { spelling: 'mode' } },
  { name: 'every', spec: { spelling: 'yaml11' } },
] as const;
const HELM_MODES = { config: 256, item: 420, secret: 493, links: false };
const WATCHES = `- {group: ${READER.group}, version: ${READER.version}, kind: ${READER.kind}, chart: ${fixtureChart('yaml11')}}\n`;

const kc = testKubeConfig();
const readers = new CRs(kc, READER);
const apps = kc.makeApiClient(AppsV1Api);

const modes = (d: V1Deployment) => {
  const pod = d.spec?.template.spec;
  const [config, secret] = pod?.volumes ?? [];
  const configMap = config?.configMap;
  return {
    config: configMap?.defaultMode,
    item: configMap?.items?.[0]?.mode,
    secret: secret?.secret?.defaultMode,
    links: pod?.enableServiceLinks,
  };
};

describe.concurrent('drift repair of a chart written in YAML 1.1', () => {
  // One harness for the file (one helm version probe); each case in a namespace of its own.
  let h: ReconcilerHarness;
  let spaces: CaseNamespaces<'yaml11-modes' | 'yaml11-every'>;
  beforeAll(async () => {
    await ensureCrd(kc, READER);
    spaces = await caseNamespaces(RELEASES.map(({ name }) => `yaml11-${name}` as const));
    h = await startReconcilers({ watches: WATCHES, namespaces: spaces.names });
  });
  afterAll(async () => {
    await h.stop();
    await spaces.remove();
  });

  it.each(RELEASES)(
    '$name: installs with the modes helm sent, leaves them alone over three resyncs, then repairs a hand-edited image, keeps the modes, and names only the image in its event',
    async ({ name, spec }) => {
      const ns = { name: spaces.of[`yaml11-${name}`] };
      const key = `${ns.name}/${name}`;
      const deployment = (): Promise<V1Deployment> => apps.readNamespacedDeployment({ namespace: ns.name, name: `${name}-app` });
      const driftEvents = async () =>
        (await readers.events(ns.name, name))
          .filter((e) => e.reason?.startsWith('Drift') === true)
          .map((e) => `${e.reason ?? ''}: ${e.message ?? ''}`);

      await readers.create(ns.name, name, spec);
      const installed = await h.reconcileUntilSettled(key);
      expect(installed.cr?.status?.conditions?.find((c) => c.type === 'Deployed')?.status).toBe('True');
      expect(modes(await deployment())).toEqual(HELM_MODES);
      // Ownership stamping right after the install is a (legitimate) write: settle first.
      await h.reconcileUntilSettled(key);
      const before = (await deployment()).metadata?.resourceVersion;
      for (let i = 0; i < 3; i++) await h.reconcileUntilSettled(key);
      const idle = await deployment();
      expect(idle.metadata?.resourceVersion).toBe(before);
      expect(modes(idle)).toEqual(HELM_MODES);
      expect(await driftEvents()).toEqual([]);

      await apps.patchNamespacedDeployment(
        {
          namespace: ns.name,
          name: `${name}-app`,
          body: [{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'nginx:evil' }],
        },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      );
      await h.reconcileUntilSettled(key);
      const repaired = await deployment();
      expect(repaired.spec?.template.spec?.containers[0]?.image).toBe('nginx:1.27.3');
      expect(modes(repaired)).toEqual(HELM_MODES);
      await readers.waitForEvent(ns.name, name, 'DriftCorrected');
      expect(await driftEvents()).toEqual([
        `DriftCorrected: Restored .spec.template.spec.containers[0].image of Deployment ${ns.name}/${name}-app to the release manifest`,
      ]);
    },
  );
});
