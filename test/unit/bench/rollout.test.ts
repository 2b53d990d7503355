import { describe, expect, it } from 'vitest';
import { meanRate, nextMinor, onChart, ownRequests, rates, requestsIn } from '../../../bench/rollout.js';

describe('rates', () => {
  it('gives each interval its requests per second, less the scrape it holds', () => {
    const samples = [
      { atMs: 0, requests: 100 },
      { atMs: 1_000, requests: 111 },
      { atMs: 3_000, requests: 151 },
    ];
    expect(rates(samples)).toEqual([10, 19.5]);
  });

  it('is empty below two samples, and never negative', () => {
    expect(rates([{ atMs: 0, requests: 5 }])).toEqual([]);
    expect(
      rates([
        { atMs: 0, requests: 5 },
        { atMs: 1_000, requests: 5 },
      ]),
    ).toEqual([0]);
  });
});

describe('requestsIn and meanRate', () => {
  const samples = [
    { atMs: 0, requests: 100 },
    { atMs: 1_000, requests: 111 },
    { atMs: 4_000, requests: 151 },
  ];

  it('count the requests between the first and the last sample, less one scrape per interval', () => {
    expect(requestsIn(samples)).toBe(49);
    expect(meanRate(samples)).toBe(12.25);
  });

  it('have nothing to say about fewer than two samples', () => {
    expect(requestsIn([])).toBe(0);
    expect(meanRate([{ atMs: 0, requests: 5 }])).toBeNaN();
  });
});

describe('onChart', () => {
  const cr = (chartVersion: string, ready: string) => ({
    apiVersion: 'example.com/v1alpha1',
    kind: 'Nginx',
    status: {
      deployedRelease: { chartVersion },
      conditions: [
        { type: 'Deployed', status: 'True' },
        { type: 'Ready', status: ready },
      ],
    },
  });

  it('holds for a CR on the version that is Ready', () => {
    expect(onChart(cr('0.2.0', 'True'), '0.2.0')).toBe(true);
  });

  it('waits for the version and for Ready', () => {
    expect(onChart(cr('0.1.0', 'True'), '0.2.0')).toBe(false);
    expect(onChart(cr('0.2.0', 'False'), '0.2.0')).toBe(false);
    expect(onChart({ apiVersion: 'example.com/v1alpha1', kind: 'Nginx' }, '0.2.0')).toBe(false);
  });
});

describe('nextMinor', () => {
  it('bumps the minor version', () => {
    expect(nextMinor('0.1.0')).toBe('0.2.0');
    expect(nextMinor('1.9.3-rc.1')).toBe('1.10.0');
  });

  it('refuses a version that is not semver', () => {
    expect(() => nextMinor('latest')).toThrow(/not semver/);
  });
});

describe("the operator's own per-CR requests", () => {
  it('counts reads and writes of the CRs (any subresource), release-record LISTs and pause-switch GETs, and nothing else', () => {
    const before = new Map([
      ['GET nginxes', 10],
      ['LIST secrets', 5],
      ['GET leases', 1],
    ]);
    const after = new Map([
      ['GET nginxes', 12],
      ['PATCH nginxes/status', 7],
      ['PATCH nginxes', 1],
      ['LIST secrets', 9],
      ['GET leases', 2],
      ['PUT secrets', 40],
      ['GET secrets', 3],
      ['LIST nginxes', 4],
      ['PUT leases', 6],
    ]);
    expect(ownRequests(before, after, 'nginxes')).toEqual({ total: 2 + 7 + 1 + 4 + 1, recordLists: 4 });
  });
});
