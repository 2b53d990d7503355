import { describe, expect, it } from 'vitest';
import { Reason } from '../../../../src/reconciler/status/conditions.js';
import { invalidInput } from '../../../../src/reconciler/desired/desired.js';
import { bracketDepth, VALUES_LIMITS, valuesProblem } from '../../../../src/reconciler/decide/limits.js';
import type { CustomResource } from '../../../../src/k8s/custom-resources.js';

/** `{a: {a: … {a: leaf}}}` with `depth` maps, built without recursion. */
function nested(depth: number, leaf: unknown = 1): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? { a: v } : [v];
  return v;
}

describe('valuesProblem', () => {
  it('accepts values up to the depth limit and real-sized values', () => {
    expect(valuesProblem(nested(VALUES_LIMITS.maxDepth))).toBeUndefined();
    expect(
      valuesProblem({
        image: { repository: 'nginx', tag: '1.27' },
        replicas: 3,
        tolerations: [{ key: 'a', operator: 'Exists' }],
        on: true,
        off: null,
      }),
    ).toBeUndefined();
    expect(valuesProblem(undefined)).toBeUndefined();
    expect(valuesProblem('scalar')).toBeUndefined();
  });

  it('refuses one level more, naming where, at any depth beyond without recursing', () => {
    expect(valuesProblem(nested(VALUES_LIMITS.maxDepth + 1))).toBe(
      'nests maps and lists more than 100 deep (at a[0].a[0].a[0]…); real chart values stay far below that',
    );
    expect(valuesProblem(nested(100_000))).toMatch(/more than 100 deep/);
  });

  it('refuses a cycle (a YAML alias to its own collection) as too deep', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(valuesProblem(cyclic)).toMatch(/more than 100 deep \(at self\.self/);
  });

  it('bounds the size, holes of sparse lists counted as null, and stops early', () => {
    const limits = { maxDepth: 100, maxBytes: 1000 };
    expect(valuesProblem({ s: 'x'.repeat(900) }, limits)).toBeUndefined();
    expect(valuesProblem({ s: 'x'.repeat(1000) }, limits)).toBe('is larger than 1000 bytes as JSON');
    const sparse: unknown[] = [];
    sparse[4_000_000_000] = 'x';
    expect(valuesProblem({ sparse })).toBe('is larger than 4 MiB as JSON');
    expect(
      valuesProblem(
        Array.from({ length: 300 }, () => ({ k: 'v' })),
        limits,
      ),
    ).toMatch(/larger/);
  });

  it('counts a shared subtree (YAML aliases) each time it appears, as helm would see it', () => {
    const big = { s: 'x'.repeat(400) };
    expect(valuesProblem({ a: big, b: big, c: big }, { maxDepth: 100, maxBytes: 1000 })).toMatch(/larger/);
  });
});

describe('bracketDepth', () => {
  it('counts brackets and braces open at once, stopping past the limit', () => {
    expect(bracketDepth('- {kind: Secret, targetPath: "a[0][1]"}', 16)).toBe(2);
    expect(bracketDepth('[{"a": [1, {"b": 2}]}]', 16)).toBe(4);
    expect(bracketDepth(']]]}}}[', 16)).toBe(1);
    expect(bracketDepth('['.repeat(1_000_000), 16)).toBe(17);
  });
});

describe('invalidInput', () => {
  const cr = (spec: unknown): CustomResource => ({
    apiVersion: 'x.example.com/v1',
    kind: 'App',
    metadata: { name: 'app', namespace: 'ns' },
    spec,
  });

  it('refuses a spec nested too deep or too large as InvalidSpec, once (no retry), with an event', () => {
    const refused = invalidInput(cr(nested(2001)), 'app');
    expect(refused).toMatchObject({ kind: 'refused', reason: Reason.InvalidSpec, retry: false, event: true, stage: 'input' });
    expect(refused?.message).toMatch(/^spec nests maps and lists more than 100 deep \(at a\[0\]/);
    expect(invalidInput(cr({ s: 'x'.repeat(VALUES_LIMITS.maxBytes) }), 'app')?.message).toBe('spec is larger than 4 MiB as JSON');
  });

  it('lets an ordinary spec through', () => {
    expect(invalidInput(cr({ replicas: 2, image: { tag: 'x' } }), 'app')).toBeUndefined();
    expect(invalidInput(cr(undefined), 'app')).toBeUndefined();
  });
});
