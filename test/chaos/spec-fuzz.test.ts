/**
 * Property-based fuzzing of CR specs against the sample chart's values schema, on the real cluster
 * with the real helm (seeded, bounded, no shrinking: each input costs a helm run). Every outcome is
 * Deployed=True with the spec in the Deployment, or Deployed=False with a reason and a message;
 * never a crash, a pending release or a hot loop. Values that look like templates are data: the
 * sample chart calls no `tpl`, so `{{ … }}` must reach the Deployment verbatim.
 */
import { AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, type OperatorProcess } from '../integration/production/support.js';
import { testKubeConfig, waitFor, uniqueName } from '../support/kube.js';
import { condition, CRs, NGINX, type CR } from '../support/operator.js';
import { createNamespaces, operatorUnderTest, type OperatorUnderTest } from './support/harness.js';
import { alive } from './support/processes.js';
import { recordFuzz } from './support/report.js';
import { deploymentName, expectIdle, helmListAll } from './support/verdict.js';

const NS = uniqueName('chaos-fuzz');
const SLOTS = 6;
const ROUNDS = Number(process.env.CHAOS_FUZZ_ROUNDS ?? 4);
const SEED = Number(process.env.CHAOS_SEED ?? 13);

const templateLooking = fc.constantFrom(
  '{{ .Release.Name }}',
  '{{ fail "boom" }}',
  '{{ include "nginx.fullname" . }}',
  '{{- /* comment */ -}}',
  '{{ .Values.image.repository | upper }}',
  '{{{{raw}}}}',
  '}} {{',
  '{{ lookup "v1" "Secret" "kube-system" "" }}',
);
const annotationValue = fc.oneof(templateLooking, fc.string({ maxLength: 20 }), fc.constantFrom('', 'true', '0', 'null', '~', '- a', 'a: b'));
const annotationKey = fc.constantFrom('chaos.example.com/a', 'chaos.example.com/b', 'x', 'bad key!', 'UPPER/x');

/** Mostly schema-valid specs, with schema violations and API-invalid values mixed in. */
const spec = fc.record(
  {
    replicaCount: fc.oneof(fc.integer({ min: 0, max: 2 }), fc.constantFrom(-1, 101, 1.5, '2', null)),
    podAnnotations: fc.dictionary(annotationKey, annotationValue, { maxKeys: 3 }),
    image: fc.oneof(fc.record({ repository: fc.constant('nginx'), tag: fc.oneof(fc.constantFrom('1.27', '', '{{ .Chart.AppVersion }}'), fc.string({ maxLength: 8 })) }), fc.constant({ tag: 'x' })),
    service: fc.record({ type: fc.constantFrom('ClusterIP', 'NodePort', 'Bogus'), port: fc.oneof(fc.integer({ min: 1, max: 65535 }), fc.constantFrom(0, 70000)) }),
    nameOverride: fc.constantFrom('', 'web', 'Not_A_Name'),
    unknownKey: fc.constant('rejected by additionalProperties: false'),
  },
  { requiredKeys: ['podAnnotations'] },
);

type Spec = Record<string, unknown> & { podAnnotations: Record<string, string> };

/** The CR's outcome for its current generation, once it has one. */
function outcome(cr: CR | undefined): 'deployed' | 'failed' | undefined {
  if (cr === undefined || cr.status?.observedGeneration !== cr.metadata.generation) return undefined;
  const c = condition(cr, 'Deployed');
  if (c?.status === 'True') return 'deployed';
  const clear = c?.status === 'False' && c.reason !== '' && c.message.trim() !== '';
  return clear ? 'failed' : undefined;
}

describe('CR specs fuzzed against the sample chart', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, NGINX);
  const apps = kc.makeApiClient(AppsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  let out: OperatorUnderTest;
  let op: OperatorProcess;
  let inputs = 0;
  const outcomes = { deployed: 0, failed: 0 };

  beforeAll(async () => {
    await createNamespaces(kc, [NS]);
    out = await operatorUnderTest(kc, [NS]);
    op = await out.start();
    for (let i = 0; i < SLOTS; i++) await crs.create(NS, `fuzz-${i}`, { replicaCount: 0 });
  });
  afterAll(async () => {
    await killAll();
    await out.remove();
  });

  it(`${ROUNDS} rounds of ${SLOTS} specs: Deployed or a clear condition, no pending release, no hot loop`, { timeout: 300_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(spec, { minLength: SLOTS, maxLength: SLOTS }), async (specs) => {
        await Promise.all(
          specs.map(async (s, i) => {
            const name = `fuzz-${i}`;
            const cr = await crs.get(NS, name);
            await custom.replaceNamespacedCustomObject({ group: NGINX.group, version: NGINX.version, plural: NGINX.plural, namespace: NS, name, body: { ...cr, spec: s } });
          }),
        );
        inputs += specs.length;
        const settled = await waitFor(
          'every fuzzed CR to settle',
          async () => {
            const all = await Promise.all(specs.map(async (_, i) => crs.get(NS, `fuzz-${i}`)));
            return all.every((cr) => outcome(cr) !== undefined) ? all : undefined;
          },
          { timeoutMs: 90_000, intervalMs: 500 },
        );
        expect(alive(op.pid), 'the operator is still running').toBe(true);
        for (const [i, cr] of settled.entries()) {
          const o = outcome(cr)!;
          outcomes[o]++;
          if (o !== 'deployed') continue;
          const d = await apps.readNamespacedDeployment({ namespace: NS, name: deploymentName(`fuzz-${i}`) }).catch(() => undefined);
          const annotations = d?.spec?.template.metadata?.annotations ?? {};
          for (const [k, v] of Object.entries((specs[i] as Spec).podAnnotations)) expect(annotations[k], `annotation ${k} of fuzz-${i} is data`).toBe(v);
        }
        const pending = (await helmListAll()).filter((r) => r.namespace === NS && r.status.startsWith('pending-'));
        expect(pending).toEqual([]);
      }),
      { seed: SEED, numRuns: ROUNDS, endOnFailure: true },
    );
    recordFuzz('CR specs vs the sample chart (real helm)', inputs);
    console.log(`fuzzed specs: ${outcomes.deployed} deployed, ${outcomes.failed} refused with a condition`);
    expect(outcomes.deployed).toBeGreaterThan(0);
    await expectIdle(op.pid);
  });
});
