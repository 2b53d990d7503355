/**
 * The OLM tier's last suite: `olm uninstall` of the one installation the suites before it shared
 * (cli.suite.ts installs it) removes OLM's CRDs and stops its operators' processes; `olm status`
 * then finds nothing, and a second uninstall has nothing to do.
 */
import { describe, expect, it } from 'vitest';
import { clusterStateDir, runningPid } from '../../src/olm/local-processes.js';
import { testKubeConfig } from '../support/kube.js';
import { exited, helmOperator, helmOperatorOk, olmCrds } from '../support/olm.js';

describe('helm-operator olm uninstall', () => {
  const kc = testKubeConfig();
  const stateDir = clusterStateDir(kc.getCurrentCluster()?.server ?? '');

  it('olm uninstall removes the CRDs and stops the operators; status then finds nothing', async () => {
    const pids = [await runningPid(stateDir, 'olm-operator'), await runningPid(stateDir, 'catalog-operator')];
    expect(await helmOperatorOk(['olm', 'uninstall'], 300_000)).toContain('OLM is uninstalled');
    expect(await olmCrds(kc)).toEqual([]);
    for (const pid of pids) expect(exited(pid!)).toBe(true);
    expect((await helmOperator(['olm', 'status'])).stderr).toMatch(/no existing OLM installation found/);
    expect((await helmOperator(['olm', 'uninstall'])).stderr).toMatch(
      /no existing OLM installation found in this cluster: nothing to uninstall/,
    );
  }, 300_000);
});
