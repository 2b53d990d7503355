import { AppsV1Api, PatchStrategy, setHeaderOptions, type V1Deployment } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { activity, CRs, ensureCrd, fixtureChart, startOperator, waitForReconciles, type RunningOperator, type TestKind } from '../../support/operator.js';

const READER: TestKind = { group: 'yaml11.example.com', version: 'v1', kind: 'Reader', plural: 'readers' };
const PERIOD = { 'helm.sdk.operatorframework.io/reconcile-period': '1s' };
/** `mode`: only `defaultMode: 0400` is YAML 1.1 (read as YAML 1.2: 400, a valid, group-writable mode); `yaml11`: every value it can be. */
const RELEASES = [
  { name: 'modes', spec: { spelling: 'mode' } },
  { name: 'every', spec: { spelling: 'yaml11' } },
] as const;
const HELM_MODES = { config: 256, item: 420, secret: 493, links: false };

/**
 * A release whose chart mounts a ConfigMap with `defaultMode: 0400` (YAML 1.1 octal: 256, a
 * read-only mount) keeps mode 256 through install, idle reconciles, a hand edit of another field
 * and its repair. Read as YAML 1.2 the operator took the mode for decimal 400 (octal 0620) and
 * "repaired" the mount group-writable, and could restore nothing of a chart spelling booleans
 * `no`/`yes`. The repair's event names only the field that changed.
 */
describe('drift repair of a chart written in YAML 1.1', () => {
  const kc = testKubeConfig();
  const readers = new CRs(kc, READER);
  const apps = kc.makeApiClient(AppsV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  const deployment = (release: string): Promise<V1Deployment> => apps.readNamespacedDeployment({ namespace: ns.name, name: `${release}-app` });
  const modes = (d: V1Deployment) => {
    const pod = d.spec?.template.spec;
    const [config, secret] = pod?.volumes ?? [];
    const configMap = config?.configMap;
    return { config: configMap?.defaultMode, item: configMap?.items?.[0]?.mode, secret: secret?.secret?.defaultMode, links: pod?.enableServiceLinks };
  };
  /** DriftCorrected and DriftRepairFailed alike. */
  const driftEvents = async (release: string) =>
    (await readers.events(ns.name, release)).filter((e) => e.reason?.startsWith('Drift') === true).map((e) => `${e.reason ?? ''}: ${e.message ?? ''}`);

  beforeAll(async () => {
    await ensureCrd(kc, READER);
    ns = await createNamespace(kc, 'yaml11');
    op = await startOperator({
      watches: `- {group: ${READER.group}, version: ${READER.version}, kind: ${READER.kind}, chart: ${fixtureChart('yaml11')}}\n`,
      namespaces: [ns.name],
      // Its CRs ask for 1s resyncs; the default floor (30s) would raise them.
      annotationPeriodFloorMs: 1_000,
    });
    for (const r of RELEASES) await readers.create(ns.name, r.name, r.spec, PERIOD);
    for (const r of RELEASES) await readers.waitForCondition(ns.name, r.name, { type: 'Ready', status: 'True' });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('installs with the modes helm sent and leaves them alone over three reconcile periods', async () => {
    for (const r of RELEASES) expect(modes(await deployment(r.name))).toEqual(HELM_MODES);
    // Ownership stamping right after the install is a (legitimate) write: settle first.
    await waitForReconciles(op, 'reader-controller', await activity(op), 2 * RELEASES.length);
    const before = await Promise.all(RELEASES.map(async (r) => (await deployment(r.name)).metadata?.resourceVersion));
    // Three periods of each CR (all on the same period).
    await waitForReconciles(op, 'reader-controller', await activity(op), 3 * RELEASES.length);
    const idle = await Promise.all(RELEASES.map((r) => deployment(r.name)));
    expect(idle.map((d) => d.metadata?.resourceVersion)).toEqual(before);
    expect(idle.map(modes)).toEqual(RELEASES.map(() => HELM_MODES));
    expect(await Promise.all(RELEASES.map((r) => driftEvents(r.name)))).toEqual(RELEASES.map(() => []));
  });

  it.each(RELEASES)('$name: repairs a hand-edited image, keeps the modes, and names only the image in its event', async ({ name }) => {
    await apps.patchNamespacedDeployment(
      { namespace: ns.name, name: `${name}-app`, body: [{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'nginx:evil' }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    const repaired = await waitFor('the image to be put back', async () => {
      const d = await deployment(name);
      return d.spec?.template.spec?.containers[0]?.image === 'nginx:1.27.3' ? d : undefined;
    });
    expect(modes(repaired)).toEqual(HELM_MODES);
    const events = await waitFor('the DriftCorrected event', async () => {
      const got = await driftEvents(name);
      return got.length > 0 ? got : undefined;
    });
    expect(events).toEqual([`DriftCorrected: Restored .spec.template.spec.containers[0].image of Deployment ${ns.name}/${name}-app to the release manifest`]);
  });
});
