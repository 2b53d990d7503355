import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { toHelmError } from '../../../src/helm/error-mapping.js';
import { REDACTED, Redactor } from '../../../src/reconciler/status/redaction.js';
import { workDirPerTest, writeFakeHelm } from './helpers.js';

let work = '';
workDirPerTest('helm-errmap-test-', (dir) => (work = dir));

describe('execa failures as HelmErrors: deadline, text and redaction', () => {
  it('our own process deadline is a Timeout (real execa error from a hanging process)', async () => {
    const err: unknown = await execa(await writeFakeHelm(work), ['install'], { timeout: 200, killSignal: 'SIGTERM' }).catch(
      (e: unknown) => e,
    );
    const helmErr = toHelmError('install', err, 200);
    expect(helmErr.reason).toBe('Timeout');
    expect(helmErr.timedOut).toBe(true);
    expect(helmErr.summary).toBe('timed out after 200 ms');
  });

  const TOKEN = Array.from({ length: 150 }, (_, i) => `t${String(i).padStart(9, '0')}`).join('');
  const SPACED = 'db  pass\tphrase  x';

  /** A real execa failure whose stderr is `stderr`, as helm's would be. */
  const failure = (stderr: string): Promise<unknown> =>
    execa('sh', ['-c', 'printf "%s" "$MSG" >&2; exit 1'], { env: { MSG: stderr } }).catch((e: unknown) => e);

  it("masks sensitive values in helm's raw stderr, before its summary collapses whitespace and cuts it to length", async () => {
    const stderr = `Error: INSTALLATION FAILED: ConfigMap "x" is invalid: [metadata.labels: Invalid value: "${SPACED}": a valid label, metadata.labels: Invalid value: "${TOKEN}": must be no more than 63 characters]\n`;
    const redactor = new Redactor([TOKEN, SPACED]);
    const err = toHelmError('install', await failure(stderr), 1000, (t) => redactor.text(t));
    expect(err.summary).toBe(
      `ConfigMap "x" is invalid: [metadata.labels: Invalid value: "${REDACTED}": a valid label, metadata.labels: Invalid value: "${REDACTED}": must be no more than 63 characters]`,
    );
    expect(err.message).not.toContain('t000000001');
    // Without it, the summary holds what the redaction of a finished text must find in pieces.
    const raw = toHelmError('install', await failure(stderr), 1000);
    expect(raw.summary).toContain('db pass phrase x');
    expect(raw.summary).toHaveLength(1000);
    expect(raw.summary).toContain('t000000001');
  });
});
