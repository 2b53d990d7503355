import { describe, expect, it } from 'vitest';
import { changedOutside } from '../../../../src/reconciler/decide/outside-change.js';

const DESIRED = { valuesDigest: 'abc', chart: { name: 'nginx', version: '1.2.3' } };
const chart = { name: 'nginx', version: '1.2.3', appVersion: '1.27' };

describe('changedOutside', () => {
  it('is undefined for a revision made from the desired values and chart', () => {
    expect(changedOutside({ chart, valuesDigest: 'abc' }, DESIRED)).toBeUndefined();
  });

  it('names the chart when its name or version is not the watch’s', () => {
    expect(changedOutside({ chart: { ...chart, version: '1.2.4' }, valuesDigest: 'abc' }, DESIRED)).toBe(
      'its chart is nginx 1.2.4, not nginx 1.2.3',
    );
    expect(changedOutside({ chart: { ...chart, name: 'other' }, valuesDigest: 'abc' }, DESIRED)).toBe(
      'its chart is other 1.2.3, not nginx 1.2.3',
    );
  });

  it('says the values differ, without saying what they are', () => {
    expect(changedOutside({ chart, valuesDigest: 'def' }, DESIRED)).toBe('its values are not the ones this resource gives');
  });

  it('acts only on a difference seen: values helm did not report are taken as the desired ones', () => {
    expect(changedOutside({ chart }, DESIRED)).toBeUndefined();
  });
});
