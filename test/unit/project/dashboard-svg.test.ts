/** hack/dashboard-svg.ts's drawing, from samples as Prometheus's query API returns them. */
import { describe, expect, it } from 'vitest';
import { formatValue, legend, panelSvg } from '../../../hack/dashboard-svg.js';

const at = (metric: Record<string, string>, v: string) => ({ metric, value: [0, v] as const });

describe('dashboard picture', () => {
  it('formats values and legends as the dashboard does', () => {
    expect([formatValue('3'), formatValue('0.123456'), formatValue('NaN')]).toEqual(['3', '0.123', 'NaN']);
    expect(legend({ controller: 'web-controller', result: 'error' }, '{{controller}} {{result}}')).toBe('web-controller error');
    expect(legend({ __name__: 'up', job: 'j', instance: 'i', name: 'x' }, undefined)).toBe('name=x');
  });

  it('draws a stat panel with its value, and a time series with a line per series, escaped', () => {
    const stat = panelSvg({ type: 'stat', title: 'Failed releases', gridPos: { x: 0, y: 0, w: 6, h: 4 } }, [[at({}, '1')]]);
    expect(stat).toContain('>Failed releases</text>');
    expect(stat).toContain('>1</text>');
    const series = panelSvg(
      { type: 'timeseries', title: 'a < b', gridPos: { x: 12, y: 4, w: 12, h: 8 }, targets: [{ expr: 'x', legendFormat: '{{kind}}' }] },
      [[at({ kind: 'ConfigMap' }, '2'), at({ kind: 'Secret' }, '0')]],
    );
    expect(series).toContain('>a &lt; b</text>');
    expect(series).toContain('>ConfigMap: 2</text>');
    expect(series).toContain('>Secret: 0</text>');
    expect(panelSvg({ type: 'table', title: 't', gridPos: { x: 0, y: 0, w: 6, h: 4 } }, [[]])).toContain('>No data</text>');
  });
});
