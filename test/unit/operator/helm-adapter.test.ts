import { describe, expect, it } from 'vitest';
import { HelmError, type HelmClient, type HelmErrorReason } from '../../../src/helm/index.js';
import { describeHelmError, helmPort } from '../../../src/operator/helm-adapter.js';

const failure = (reason: HelmErrorReason) => describeHelmError(new HelmError({ reason, verb: 'install', summary: `${reason} happened` }));

describe('describeHelmError', () => {
  it('does not retry what only a new spec or chart can fix', () => {
    for (const reason of ['ValuesSchemaInvalid', 'ChartInvalid', 'RenderFailed', 'InvalidReleaseName', 'ReleaseTooLarge'] as const) {
      expect(failure(reason)).toEqual({ summary: `${reason} happened`, retryable: false });
    }
  });

  it('retries what may pass on its own', () => {
    for (const reason of ['KubernetesAPIError', 'Timeout', 'AnotherOperationInProgress', 'ResourceConflict', 'Unknown'] as const) {
      expect(failure(reason).retryable).toBe(true);
    }
    expect(describeHelmError(new Error('socket hang up'))).toEqual({ summary: 'socket hang up', retryable: true });
  });
});

describe('helmPort.render', () => {
  /** A client that records which render ran, and as whom. */
  function recordingClient(calls: string[]): HelmClient {
    const fake = {
      template: () => {
        calls.push('template');
        return Promise.resolve('offline');
      },
      serverDryRun: (r: { impersonate?: string }) => {
        calls.push(`server dry run as ${r.impersonate ?? 'the operator'}`);
        return Promise.resolve('server');
      },
    };
    return fake as unknown as HelmClient;
  }
  const request = { release: 'web', namespace: 'demo', chart: '/charts/web', values: {}, labels: {} };

  it('renders offline unless asked for the server dry run, which acts as the impersonated user', async () => {
    const calls: string[] = [];
    const port = helmPort(recordingClient(calls));
    expect(await port.render(request)).toBe('offline');
    expect(await port.render({ ...request, dryRun: 'client', impersonate: 'system:serviceaccount:demo:deployer' })).toBe('offline');
    expect(await port.render({ ...request, dryRun: 'server' })).toBe('server');
    expect(await port.render({ ...request, dryRun: 'server', impersonate: 'system:serviceaccount:demo:deployer' })).toBe('server');
    expect(calls).toEqual([
      'template',
      'template',
      'server dry run as the operator',
      'server dry run as system:serviceaccount:demo:deployer',
    ]);
  });
});
