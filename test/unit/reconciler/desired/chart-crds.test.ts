import { describe, expect, it } from 'vitest';
import { chartCrds, type ChartCrd } from '../../../../src/config/chart-crds.js';
import { crdUpgradeSafety } from '../../../../src/config/crd-upgrade-safety.js';
import { applyChartCrds } from '../../../../src/reconciler/actions/chart-crds.js';
import { install } from '../../../../src/reconciler/actions/install.js';
import { upgrade } from '../../../../src/reconciler/actions/upgrade.js';
import { CRD_KIND, crdWriteRefusal, holds, planChartCrds, unsafeCrdMessage } from '../../../../src/reconciler/desired/chart-crds.js';
import { Reason } from '../../../../src/reconciler/status/conditions.js';
import { isEstablished } from '../../../../src/reconciler/objects/crds-client.js';
import type { CrdsPort } from '../../../../src/reconciler/core/ports.js';
import { CHART, desired, harness, record } from '../actions/fakes.js';

type Obj = Record<string, unknown>;
const NAME = 'books.example.com';

/** A Book CRD: each version's spec properties, the storage version the last. */
function crd(versions: Readonly<Record<string, Obj>>, over: { storedVersions?: string[]; scope?: string } = {}): Obj {
  const names = Object.keys(versions);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: NAME },
    spec: {
      group: 'example.com',
      scope: over.scope ?? 'Namespaced',
      names: { kind: 'Book', plural: 'books' },
      versions: names.map((name, i) => ({
        name,
        served: true,
        storage: i === names.length - 1,
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: versions[name] } } } },
      })),
    },
    ...(over.storedVersions === undefined ? {} : { status: { storedVersions: over.storedVersions } }),
  };
}
const chartCrd = (object: Obj): ChartCrd => ({ file: 'crds/books.yaml', name: NAME, object });
/** As the API server returns it: defaults added, status set. */
const live = (object: Obj, storedVersions: string[]): Obj => ({
  ...object,
  spec: { ...(object.spec as Obj), conversion: { strategy: 'None' } },
  status: { storedVersions, conditions: [{ type: 'Established', status: 'True' }] },
});

const V1 = { title: { type: 'string' } };
const V1_PAGES = { title: { type: 'string' }, pages: { type: 'integer' } };

describe('planChartCrds: which of the chart CRDs change, and whether safely', () => {
  it('creates a CRD the cluster lacks, leaves one it holds as written (server defaults aside), replaces one that gained an optional field', () => {
    const v1 = crd({ v1: V1 });
    expect(planChartCrds([chartCrd(v1)], new Map([[NAME, undefined]]))).toEqual({
      kind: 'apply',
      applies: [{ kind: 'create', crd: chartCrd(v1) }],
    });
    expect(planChartCrds([chartCrd(v1)], new Map([[NAME, live(v1, ['v1'])]]))).toEqual({ kind: 'apply', applies: [] });
    const grown = crd({ v1: V1_PAGES });
    expect(planChartCrds([chartCrd(grown)], new Map([[NAME, live(v1, ['v1'])]]))).toEqual({
      kind: 'apply',
      applies: [{ kind: 'replace', crd: chartCrd(grown) }],
    });
    // An annotation the chart changes is the chart's too; one someone else added is not a change.
    const annotated = { ...v1, metadata: { name: NAME, annotations: { 'controller-gen.kubebuilder.io/version': 'v0.17.0' } } };
    expect(planChartCrds([chartCrd(annotated)], new Map([[NAME, live(v1, ['v1'])]]))).toEqual({
      kind: 'apply',
      applies: [{ kind: 'replace', crd: chartCrd(annotated) }],
    });
    const othersAdded = { ...v1, metadata: { name: NAME, annotations: { 'example.com/owner': 'team' } } };
    expect(planChartCrds([chartCrd(v1)], new Map([[NAME, live(othersAdded, ['v1'])]]))).toEqual({ kind: 'apply', applies: [] });
  });

  it('refuses removing a version the cluster still stores objects in, though it is no longer the storage version', () => {
    const both = crd({ v1: V1, v2: V1 });
    const onlyV2 = crd({ v2: V1 });
    const plan = planChartCrds([chartCrd(onlyV2)], new Map([[NAME, live(both, ['v1', 'v2'])]]));
    expect(plan).toEqual({
      kind: 'unsafe',
      refusals: [
        {
          crd: chartCrd(onlyV2),
          changes: [{ version: 'v1', path: '.', check: 'NoStoredVersionRemoved', message: 'stored version v1 removed' }],
        },
      ],
    });
    // Once nothing is stored in v1 any more (storedVersions migrated), dropping it is safe.
    expect(planChartCrds([chartCrd(onlyV2)], new Map([[NAME, live(both, ['v2'])]])).kind).toBe('apply');
  });

  it('refuses every CRD when one is unsafe, naming the CRD, its file, the version, the field and the rule', () => {
    const narrowed = crd({ v1: { title: { type: 'integer' } } });
    const plan = planChartCrds([chartCrd(narrowed)], new Map([[NAME, live(crd({ v1: V1 }), ['v1'])]]));
    expect(plan.kind).toBe('unsafe');
    const message = unsafeCrdMessage(plan.kind === 'unsafe' ? plan.refusals : []);
    expect(message).toContain('CRD books.example.com (crds/books.yaml): v1 .spec.title: type changed from string to integer (Type)');
    expect(message).toMatch(/^the chart's CRDs were not applied and the release was not upgraded/);
  });

  it('holds: the desired fields, with their values, are in the live object; arrays element by element', () => {
    expect(holds({ a: 1, b: [{ c: 2, d: 3 }] }, { b: [{ c: 2 }] })).toBe(true);
    expect(holds({ a: 1, b: [{ c: 2 }] }, { b: [{ c: 3 }] })).toBe(false);
    expect(holds({ b: [1, 2] }, { b: [1] })).toBe(false);
    expect(holds(undefined, { a: 1 })).toBe(false);
  });

  it('crdUpgradeSafety: a stored version the old CRD no longer lists is still refused when the new one drops it', () => {
    expect(crdUpgradeSafety(crd({ v2: V1 }), crd({ v3: V1 }), ['v1', 'v2']).map((c) => `${c.version ?? ''} ${c.check}`)).toEqual([
      'v2 NoStoredVersionRemoved',
      'v1 NoStoredVersionRemoved',
    ]);
  });
});

describe('crdWriteRefusal: confinement and allowKinds refuse CRDs as they refuse helm writing them', () => {
  const books = [chartCrd(crd({ v1: V1 }))];
  it('refuses a confined watch unless allowClusterScoped lists CRDs, and an allowKinds without them', () => {
    expect(crdWriteRefusal({ confineToNamespace: true, allowClusterScoped: [] }, books)?.reason).toBe('confinement');
    expect(crdWriteRefusal({ confineToNamespace: true, allowClusterScoped: [CRD_KIND] }, books)).toBeUndefined();
    expect(crdWriteRefusal({ confineToNamespace: false, allowClusterScoped: [], allowKinds: ['ConfigMap'] }, books)?.message).toContain(
      `add ${CRD_KIND}, or set crds: Skip`,
    );
    expect(
      crdWriteRefusal({ confineToNamespace: false, allowClusterScoped: [], allowKinds: ['ConfigMap', CRD_KIND] }, books),
    ).toBeUndefined();
    expect(crdWriteRefusal({ confineToNamespace: false, allowClusterScoped: [] }, books)).toBeUndefined();
  });
});

describe('chartCrds: the CRDs of crds/ as helm reads them', () => {
  it("reads every document of crds/ and subcharts' crds/, skips templates and non-CRD documents, and names a file that is not YAML", () => {
    const doc = (name: string): string =>
      `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: ${name}\n`;
    const found = chartCrds([
      { path: 'crds/b.yaml', text: `${doc('b.example.com')}---\n${doc('c.example.com')}---\nkind: ConfigMap\n` },
      { path: 'charts/db/crds/db.json', text: JSON.stringify({ kind: 'CustomResourceDefinition', metadata: { name: 'db.example.com' } }) },
      { path: 'templates/crd.yaml', text: doc('templated.example.com') },
      { path: 'crds/README.md', text: doc('md.example.com') },
    ]);
    expect(found.map((c) => `${c.file} ${c.name}`)).toEqual([
      'charts/db/crds/db.json db.example.com',
      'crds/b.yaml b.example.com',
      'crds/b.yaml c.example.com',
    ]);
    expect(() => chartCrds([{ path: 'crds/bad.yaml', text: 'a: [' }])).toThrow(/^crds\/bad\.yaml: /);
  });
});

/** A CrdsPort on a map of CRDs, noting what is applied. */
function fakeCrds(cluster: Map<string, Obj>, o: { established?: boolean } = {}): CrdsPort & { applied: string[] } {
  const applied: string[] = [];
  return {
    applied,
    get: (name) => Promise.resolve(cluster.get(name)),
    apply: (_identity, body) => {
      applied.push(String((body.metadata as Obj).name));
      return Promise.resolve();
    },
    established: () => Promise.resolve(o.established ?? true),
  };
}

describe('applyChartCrds and the upgrade', () => {
  const v1 = crd({ v1: V1 });
  const withCrds = (object: Obj, crds: 'Create' | 'CreateReplace' = 'CreateReplace') => ({
    chart: { ...CHART, crds: [chartCrd(object)] },
    crds,
  });

  it('under CreateReplace, applies a safe change before helm upgrades, and says so with an event', async () => {
    const h = harness({ watch: withCrds(crd({ v1: V1_PAGES })) });
    const port = fakeCrds(new Map([[NAME, live(v1, ['v1'])]]));
    const outcome = await upgrade({ ...h.ctx, crds: port }, desired(), record(1, 'deployed'));
    expect(port.applied).toEqual([NAME]);
    expect(outcome.kind).toBe('upgraded');
    expect(h.helm.callsOf('upgrade')).toHaveLength(1);
    expect(outcome.events?.find((e) => e.reason === 'CRDsApplied')?.message).toBe(
      `the chart's CRDs were applied before the upgrade: ${NAME} (replaced)`,
    );
  });

  it('refuses an unsafe change with nothing applied and helm never run, counted against the desired state', async () => {
    const h = harness({ watch: withCrds(crd({ v2: V1 })) });
    const port = fakeCrds(new Map([[NAME, live(v1, ['v1'])]]));
    const d = desired();
    const outcome = await upgrade({ ...h.ctx, crds: port }, d, record(1, 'deployed'));
    expect(port.applied).toEqual([]);
    expect(h.helm.callsOf('upgrade')).toHaveLength(0);
    expect(outcome).toMatchObject({
      kind: 'helm-failed',
      reason: Reason.CRDUpgradeUnsafe,
      fingerprint: d.keyedFingerprint,
      failure: { retryable: false },
    });
    expect(outcome.kind === 'helm-failed' ? outcome.failure.summary : '').toContain(
      'v1 .: stored version v1 removed (NoStoredVersionRemoved)',
    );
  });

  it('stops before helm when an applied CRD is never Established', async () => {
    const h = harness({ watch: withCrds(crd({ v1: V1_PAGES })) });
    const outcome = await applyChartCrds(
      { ...h.ctx, crds: fakeCrds(new Map([[NAME, live(v1, ['v1'])]]), { established: false }) },
      desired(),
    );
    expect(outcome.kind === 'stop' ? outcome.outcome : undefined).toMatchObject({ kind: 'helm-failed', reason: Reason.CRDNotEstablished });
  });

  it('leaves CRDs to helm under Create (the default): nothing read, nothing applied', async () => {
    const h = harness({ watch: withCrds(crd({ v2: V1 }), 'Create') });
    const port = fakeCrds(new Map([[NAME, live(v1, ['v1'])]]));
    expect(await applyChartCrds({ ...h.ctx, crds: port }, desired())).toEqual({ kind: 'go', events: [] });
    expect(port.applied).toEqual([]);
  });

  it('refuses a watch whose allowKinds lacks CRDs before reading any', async () => {
    const h = harness({ watch: { ...withCrds(crd({ v1: V1_PAGES })), allowKinds: ['ConfigMap'] } });
    const outcome = await applyChartCrds({ ...h.ctx, crds: fakeCrds(new Map()) }, desired());
    expect(outcome.kind === 'stop' ? outcome.outcome : undefined).toMatchObject({ kind: 'helm-failed', reason: Reason.KindNotAllowed });
  });

  it('installs with --skip-crds under Skip, and leaves crds/ to helm otherwise', async () => {
    const skip = harness({ watch: { crds: 'Skip' } });
    await install(skip.ctx, desired(), { leftovers: false });
    expect(skip.helm.callsOf('install')[0]).toMatchObject({ skipCrds: true });
    const plain = harness();
    await install(plain.ctx, desired(), { leftovers: false });
    expect(plain.helm.callsOf('install')[0]).not.toHaveProperty('skipCrds');
  });

  it('isEstablished reads the Established condition', () => {
    expect(isEstablished(live(v1, ['v1']))).toBe(true);
    expect(isEstablished({ status: { conditions: [{ type: 'Established', status: 'False' }] } })).toBe(false);
    expect(isEstablished(undefined)).toBe(false);
  });
});
