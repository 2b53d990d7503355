/** The watch's healthChecks as readiness: Flux's order, and an evaluation error reported, never thrown. */
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { healthRules } from '../../../../src/reconciler/objects/health-rules.js';
import { objectReadiness } from '../../../../src/reconciler/objects/readiness.js';

const entry = { apiVersion: 'db.example.com/v1', kind: 'Database', namespace: 'ns', name: 'main' };
const rules = healthRules([
  {
    apiVersion: 'db.example.com/v1',
    kind: 'Database',
    current: "status.phase == 'Ready'",
    failed: "status.phase == 'Failed'",
    inProgress: 'has(status.observedGeneration) && status.observedGeneration < metadata.generation',
  },
]);
const db = (status: Record<string, unknown>) => ({
  apiVersion: entry.apiVersion,
  kind: entry.kind,
  metadata: { name: 'main', generation: 2 },
  status,
});

describe('healthRules', () => {
  it('judges the kind it names: inProgress, then failed, then current; none true is not ready yet', () => {
    expect(objectReadiness(entry, db({ phase: 'Ready', observedGeneration: 2 }), rules)).toEqual({
      ready: true,
      message: 'Database main current',
    });
    expect(objectReadiness(entry, db({ phase: 'Ready', observedGeneration: 1 }), rules)).toEqual({
      ready: false,
      message: 'Database main in progress (health check inProgress)',
    });
    expect(objectReadiness(entry, db({ phase: 'Failed' }), rules)).toEqual({
      ready: false,
      message: 'Database main failed (health check failed)',
    });
    expect(objectReadiness(entry, db({ phase: 'Pending' }), rules)).toEqual({
      ready: false,
      message: 'Database main in progress (health check current is false)',
    });
    // A field the object lacks is an evaluation error, as in Flux: not ready, and it says which.
    expect(objectReadiness(entry, db({}), rules)).toEqual({
      ready: false,
      message: 'Database main health check failed could not be evaluated: field not found: phase',
    });
  });

  it('leaves other kinds to the built-in rules (a Ready condition here)', () => {
    const other = { ...entry, kind: 'Cache' };
    expect(objectReadiness(other, { apiVersion: other.apiVersion, kind: 'Cache', metadata: { name: 'main' } }, rules)).toEqual({
      ready: true,
      message: 'Cache main ready',
    });
    // Without the rule, a Database with no Ready condition would pass as ready.
    expect(objectReadiness(entry, db({ phase: 'Failed' })).ready).toBe(true);
  });

  it('reports an expression that fails at evaluation as not ready, with the error', () => {
    const odd = { ...db({ phase: 'Ready' }), metadata: { name: 'main', generation: 'two' } } as unknown as KubernetesObject;
    const r = objectReadiness(
      entry,
      odd,
      healthRules([{ apiVersion: entry.apiVersion, kind: 'Database', current: 'metadata.generation > 1' }]),
    );
    expect(r.ready).toBe(false);
    expect(r.message).toMatch(/^Database main health check current could not be evaluated: /);
  });
});
