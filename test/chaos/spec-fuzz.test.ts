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
import type { Condition } from '../../src/reconciler/status/conditions.js';
import { condition, CRs, NGINX, type CR } from '../support/operator.js';
import { createNamespaces, operatorUnderTest, replaceSpec, type OperatorUnderTest } from './support/harness.js';
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
const annotationValue = fc.oneof(
  templateLooking,
  fc.string({ maxLength: 20 }),
  fc.constantFrom('', 'true', '0', 'null', '~', '- a', 'a: b'),
);
const annotationKey = fc.constantFrom('chaos.example.com/a', 'chaos.example.com/b', 'x');

/** Specs the schema accepts: template-looking strings included, they are data. */
const validSpec = fc.record(
  {
    replicaCount: fc.integer({ min: 0, max: 2 }),
    podAnnotations: fc.dictionary(annotationKey, annotationValue, { maxKeys: 3 }),
    image: fc.record({ repository: fc.constant('nginx'), tag: fc.constantFrom('1.27', '', '{{ .Chart.AppVersion }}', 'latest') }),
    service: fc.record({ type: fc.constantFrom('ClusterIP', 'NodePort'), port: fc.integer({ min: 1, max: 65535 }) }),
    nameOverride: fc.constantFrom('', 'web'),
  },
  { requiredKeys: ['podAnnotations'] },
);

/** One violation each: of the values schema (helm refuses) or of the API (the apiserver refuses). */
const violation = fc.constantFrom<Record<string, unknown>>(
  { replicaCount: -1 },
  { replicaCount: 101 },
  { replicaCount: 1.5 },
  { replicaCount: '2' },
  { unknownKey: 'rejected by additionalProperties: false' },
  { image: { tag: 'x' } },
  { service: { type: 'Bogus', port: 80 } },
  { service: { type: 'ClusterIP', port: 70000 } },
  { nameOverride: 'Not_A_Name' },
  { podAnnotations: { 'bad key!': 'v' } },
  { podLabels: { 'chaos-label': '{{ .Release.Name }}' } },
  { podAnnotations: 'not a map' },
);

/** Mostly valid specs, a quarter with one violation. */
const spec = fc.oneof(
  { arbitrary: validSpec, weight: 3 },
  { arbitrary: fc.tuple(validSpec, violation).map(([v, bad]) => ({ ...v, ...bad })), weight: 1 },
);

type Spec = Record<string, unknown> & { podAnnotations?: unknown; nameOverride?: unknown };

/**
 * The CR's outcome for its current generation, once it has one: deployed, or refused with a reason
 * and a message (Deployed=False, or ReleaseFailed=True while the previous release keeps serving).
 */
function outcome(cr: CR | undefined): 'deployed' | 'failed' | undefined {
  if (cr === undefined || cr.status?.observedGeneration !== cr.metadata.generation) return undefined;
  const clear = (c: Condition | undefined): boolean => c !== undefined && c.reason !== '' && c.message.trim() !== '';
  const failed = condition(cr, 'ReleaseFailed');
  if (failed?.status === 'True') return clear(failed) ? 'failed' : undefined;
  const deployed = condition(cr, 'Deployed');
  if (deployed?.status === 'True') return 'deployed';
  return deployed?.status === 'False' && clear(deployed) ? 'failed' : undefined;
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

  it(
    `${ROUNDS} rounds of ${SLOTS} specs: Deployed or a clear condition, no pending release, no hot loop`,
    { timeout: 300_000 },
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(spec, { minLength: SLOTS, maxLength: SLOTS }), async (specs) => {
          await Promise.all(
            specs.map(async (s, i) => {
              await replaceSpec(custom, NS, `fuzz-${i}`, s);
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
            const d = await apps.readNamespacedDeployment({
              namespace: NS,
              name: deploymentName(`fuzz-${i}`, (specs[i] as Spec).nameOverride),
            });
            const annotations = d.spec?.template.metadata?.annotations ?? {};
            for (const [k, v] of Object.entries((specs[i] as Spec).podAnnotations as Record<string, string>))
              expect(annotations[k], `annotation ${k} of fuzz-${i} is data`).toBe(v);
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
    },
  );
});
