import { describe, expect, it } from 'vitest';
import { groupNewKinds, MAX_TOGGLES, optionalKinds, type Render } from '../../../src/scaffold/optional-kinds.js';
import type { RenderedObject } from '../../../src/scaffold/rbac.js';
import { falseToggles, formatPath, switchedOn } from '../../../src/scaffold/value-toggles.js';

describe("a chart's switches (false booleans of values.yaml)", () => {
  const values = {
    replicaCount: 1,
    serviceAccount: { create: true, automount: false },
    ingress: { enabled: false, hosts: [{ host: 'x', tls: false }] },
    metrics: { serviceMonitor: { enabled: false } },
    'dotted.key': { enabled: false },
  };

  it('lists every false boolean outside lists, in document order', () => {
    expect(falseToggles(values).map(formatPath)).toEqual([
      'serviceAccount.automount',
      'ingress.enabled',
      'metrics.serviceMonitor.enabled',
      '"dotted.key".enabled',
    ]);
    expect(falseToggles(values, 2)).toHaveLength(2);
    expect(falseToggles(null)).toEqual([]);
  });

  it('switches paths on as nested values (keys with dots stay one key)', () => {
    expect(
      switchedOn([
        ['ingress', 'enabled'],
        ['ingress', 'tls'],
        ['dotted.key', 'enabled'],
      ]),
    ).toEqual({ ingress: { enabled: true, tls: true }, 'dotted.key': { enabled: true } });
  });
});

const obj = (apiVersion: string, kind: string, name = 'x'): RenderedObject => ({ apiVersion, kind, name });
const BASE = [obj('v1', 'ConfigMap'), obj('apps/v1', 'Deployment')];

/** A chart: an Ingress with ingress.enabled, an HPA with autoscaling.enabled, tls.enabled fails alone. */
function fakeChart(): { render: Render; calls: Record<string, unknown>[] } {
  const calls: Record<string, unknown>[] = [];
  const render: Render = (v) => {
    calls.push(v);
    const on = (k: string): boolean => (v[k] as { enabled?: boolean } | undefined)?.enabled === true;
    if (on('tls') && !on('ingress')) return Promise.reject(new Error('tls needs an ingress'));
    return Promise.resolve([
      ...BASE,
      ...(on('ingress') ? [obj('networking.k8s.io/v1', 'Ingress', 'web')] : []),
      ...(on('autoscaling') ? [obj('autoscaling/v2', 'HorizontalPodAutoscaler')] : []),
    ]);
  };
  return { render, calls };
}

describe('kinds a chart renders only with other values', () => {
  it('names the value that switches each new kind on, and the switches that cannot render alone', async () => {
    const { render } = fakeChart();
    const r = await optionalKinds(render, { ingress: { enabled: false }, autoscaling: { enabled: false }, tls: { enabled: false } }, BASE);
    expect(r.groups).toEqual([
      { when: 'ingress.enabled=true', objects: [obj('networking.k8s.io/v1', 'Ingress', 'web')] },
      { when: 'autoscaling.enabled=true', objects: [obj('autoscaling/v2', 'HorizontalPodAutoscaler')] },
    ]);
    expect(r.unrenderable).toEqual(['tls.enabled']);
  });

  it('renders once when switching everything on adds no kind', async () => {
    const { render, calls } = fakeChart();
    const r = await optionalKinds(render, { serviceAccount: { automount: false } }, BASE);
    expect(r.groups).toEqual([]);
    expect(calls).toHaveLength(1);
  });

  it('renders nothing for a chart without switches', async () => {
    const { render, calls } = fakeChart();
    expect((await optionalKinds(render, { replicaCount: 1 }, BASE)).groups).toEqual([]);
    expect(calls).toEqual([]);
  });

  it(`tries at most ${MAX_TOGGLES} switches and says how many there were`, async () => {
    const many = Object.fromEntries(Array.from({ length: MAX_TOGGLES + 5 }, (_, i) => [`f${i}`, false]));
    const r = await optionalKinds(() => Promise.reject(new Error('fails')), many, BASE);
    expect(r).toMatchObject({ tried: MAX_TOGGLES, found: MAX_TOGGLES + 5 });
    expect(r.unrenderable).toHaveLength(MAX_TOGGLES);
  });

  it('groups a kind two switches render alone under both, and one only all together render under all of them', () => {
    const ingress = obj('networking.k8s.io/v1', 'Ingress');
    const pdb = obj('policy/v1', 'PodDisruptionBudget');
    const groups = groupNewKinds(
      BASE,
      [
        { toggle: 'a', objects: [...BASE, ingress] },
        { toggle: 'b', objects: [ingress] },
        { toggle: 'c', objects: undefined },
      ],
      [...BASE, ingress, pdb],
      ['a', 'b', 'c'],
    );
    expect(groups).toEqual([
      { when: 'a=true or b=true', objects: [ingress] },
      { when: 'several switches together (a=true, b=true, c=true)', objects: [pdb] },
    ]);
  });
});
