/**
 * Issue 32 item 7: a release someone installed by hand with the same chart is not the tenant's to
 * take. A CR named after it must neither overwrite its values nor, when deleted, uninstall it.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, inject } from 'vitest';
import { againstEachConfiguration, attack, EXTRAS_CHART, releaseConfigMaps } from './support/target.js';

const run = promisify(execFile);

againstEachConfiguration('takeover', (target) => {
  attack(target, { id: '7', title: 'a CR named after a hand-installed release of the same chart', kind: 'takeover' }, async () => {
    const a = target.tenancy.a;
    const helm = (...args: string[]): Promise<{ stdout: string }> =>
      run(inject('helmBin'), [...args, '--namespace', a, '--kubeconfig', inject('kubeconfigPath')], { timeout: 60_000 });
    await helm('install', 'legacy', EXTRAS_CHART, '--set', 'greeting=original');
    // The chart's ConfigMap holding the greeting, whatever the chart calls it.
    const greeting = async (): Promise<string | undefined> =>
      (await releaseConfigMaps(target, 'legacy')).find((c) => c.data?.greeting !== undefined)?.data?.greeting;
    expect(await greeting()).toBe('original');

    await target.crs().create(a, 'legacy', { greeting: 'pwned' });
    await target.settle('legacy');
    expect(await greeting(), "the hand-installed release's values").toBe('original');

    await target.crs().delete(a, 'legacy');
    await target.adminCrs().waitForGone(a, 'legacy', { timeoutMs: 120_000 });
    const status = await helm('status', 'legacy', '-o', 'json').then(
      ({ stdout }) => (JSON.parse(stdout) as { info?: { status?: string } }).info?.status,
      () => 'gone',
    );
    expect(status, 'the hand-installed release after the CR was deleted').toBe('deployed');
  });
});
