import { describe, expect, it } from 'vitest';
import { REDACTED, Redactor, spellings, valuesAt } from '../../../../src/reconciler/status/redaction.js';
import { leafStrings } from '../../../../src/util/value-leaves.js';

describe('spellings', () => {
  it('covers the value as is, quoted as helm and the API server quote it, base64, and each line', () => {
    expect(spellings('pa"ss\\word')).toEqual(['pa"ss\\word', 'pa\\"ss\\\\word', Buffer.from('pa"ss\\word').toString('base64')]);
    expect(spellings('line-one\nline-two')).toEqual([
      'line-one\nline-two',
      'line-one\\nline-two',
      Buffer.from('line-one\nline-two').toString('base64'),
      'line-one',
      'line-two',
    ]);
  });

  it('leaves values too short to redact alone', () => {
    expect(spellings('abc')).toEqual([]);
    expect(spellings('abcd')).toHaveLength(2);
  });
});

describe('leafStrings', () => {
  it('lists every scalar of a values tree as text', () => {
    expect(leafStrings({ a: { b: 'x', c: [1, true, null, 'y'] }, d: 2 })).toEqual(['x', '1', 'y', '2']);
  });
});

describe('Redactor', () => {
  const CANARY = 'cnry-0123:s3cr3t';

  it('hides the value in API server error text while the message still says what failed', () => {
    const r = new Redactor([CANARY]);
    const message = `ConfigMap "web-settings" is invalid: metadata.labels: Invalid value: "${CANARY}": a valid label must be an empty string`;
    expect(r.text(message)).toBe(
      `ConfigMap "web-settings" is invalid: metadata.labels: Invalid value: "${REDACTED}": a valid label must be an empty string`,
    );
  });

  it('hides a value quoted with escapes, and in base64', () => {
    const r = new Redactor(['say "hi"']);
    expect(r.text('Invalid value: "say \\"hi\\""')).toBe(`Invalid value: "${REDACTED}"`);
    expect(r.text(`data: ${Buffer.from('say "hi"').toString('base64')}`)).toBe(`data: ${REDACTED}`);
  });

  it('replaces a longer value whole before a shorter one it contains', () => {
    const r = new Redactor(['abcd', 'abcdefgh']);
    expect(r.text('x abcdefgh y abcd')).toBe(`x ${REDACTED} y ${REDACTED}`);
  });

  it('learns values as a reconcile reads them, and is empty before', () => {
    const r = new Redactor();
    expect(r.empty).toBe(true);
    expect(r.text(CANARY)).toBe(CANARY);
    r.add([CANARY, 'no']);
    expect(r.empty).toBe(false);
    expect(r.text(`a ${CANARY} no`)).toBe(`a ${REDACTED} no`);
  });

  it('redacts every string of a status patch, keys included, leaving other values alone', () => {
    const r = new Redactor([CANARY]);
    const patch = { conditions: [{ type: 'ReleaseFailed', message: `bad ${CANARY}` }], failedAttempts: { count: 2 }, [CANARY]: true };
    expect(r.deep(patch)).toEqual({
      conditions: [{ type: 'ReleaseFailed', message: `bad ${REDACTED}` }],
      failedAttempts: { count: 2 },
      [REDACTED]: true,
    });
  });
});

describe('Redactor on text that was collapsed or cut (helm summaries, conditions, events)', () => {
  const SPACED = 'pass  word\tof  the-tenant';
  const TOKEN = Array.from({ length: 150 }, (_, i) => `tok${String(i).padStart(7, '0')}`).join('');

  it('hides a value with runs of spaces and tabs, whether the text kept or collapsed them', () => {
    const r = new Redactor([SPACED]);
    expect(r.text(`kept: ${SPACED}.`)).toBe(`kept: ${REDACTED}.`);
    expect(r.text('collapsed: pass word of the-tenant.')).toBe(`collapsed: ${REDACTED}.`);
    expect(r.text('rewrapped: pass\n  word of\tthe-tenant.')).toBe(`rewrapped: ${REDACTED}.`);
    // Quoted as Go's %q quotes it (the tab escaped), then collapsed by helm's summary.
    expect(r.text('Invalid value: "pass word\\tof the-tenant": bad')).toBe(`Invalid value: "${REDACTED}": bad`);
  });

  it('hides the prefix of a value that a shortened text ends with, before an ellipsis or at its very end', () => {
    const r = new Redactor([TOKEN]);
    expect(TOKEN).toHaveLength(1500);
    const cut = `Invalid value: "${TOKEN}"`.slice(0, 1000);
    expect(r.text(`${cut}…`)).toBe(`Invalid value: "${REDACTED}…`);
    expect(r.text(cut)).toBe(`Invalid value: "${REDACTED}`);
    expect(r.text(`${cut} …(truncated)`)).toBe(`Invalid value: "${REDACTED} …(truncated)`);
    expect(r.text(`${cut}...`)).toBe(`Invalid value: "${REDACTED}...`);
    // A cut inside a whitespace run of a value, and after the text collapsed it.
    expect(new Redactor([SPACED]).text('refused: pass word of…')).toBe(`refused: ${REDACTED}…`);
  });

  it('keeps text that merely ends like the start of a value when that start is too short to tell', () => {
    const r = new Redactor(['abc-secret']);
    expect(r.text('code ab')).toBe('code ab');
    expect(r.text('look: abc-')).toBe(`look: ${REDACTED}`);
  });

  it('masks overlapping finds once', () => {
    const r = new Redactor(['abcdef', 'defghi']);
    expect(r.text('x abcdefghi y')).toBe(`x ${REDACTED} y`);
  });
});

describe('valuesAt', () => {
  const values = {
    auth: { password: 'hunter22', users: ['alice', { token: 'tok-123456' }] },
    port: 8080,
    tls: { key: 'KEY', enabled: true },
  };

  it('takes the scalars at each path, everything below a map or list included', () => {
    expect(valuesAt(values, ['auth.password'])).toEqual(['hunter22']);
    expect(valuesAt(values, ['auth.users'])).toEqual(['alice', 'tok-123456']);
    expect(valuesAt(values, ['auth', 'port'])).toEqual(['hunter22', 'alice', 'tok-123456', '8080']);
  });

  it('finds nothing where a path does not lead', () => {
    expect(valuesAt(values, ['auth.password.more', 'missing', 'auth.users.0', 'tls.enabled'])).toEqual([]);
  });
});
