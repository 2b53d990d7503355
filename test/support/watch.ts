/** A watches.yaml entry as the parser gives it, with every optional key at its default. */
import type { ChartInfo } from '../../src/config/chart.js';
import type { Watch } from '../../src/config/watch.js';

export function watchOf(chart: ChartInfo, o: Partial<Watch> = {}): Watch {
  return {
    group: 'example.com',
    version: 'v1',
    kind: 'Nginx',
    chart,
    watchDependentResources: true,
    overrideValues: {},
    labelSelector: '',
    dryRunOption: 'client',
    confineToNamespace: false,
    allowClusterScoped: [],
    sensitiveValues: [],
    allowSchemaRefs: false,
    source: { file: 'watches.yaml', index: 0, line: 1 },
    ...o,
  };
}
