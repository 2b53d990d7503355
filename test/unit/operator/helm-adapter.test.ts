import { describe, expect, it } from 'vitest';
import { HelmError, type HelmErrorReason } from '../../../src/helm/index.js';
import { describeHelmError } from '../../../src/operator/helm-adapter.js';

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
