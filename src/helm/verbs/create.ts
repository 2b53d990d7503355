import { createArgs } from '../args.js';
import { offlineContext, type CallOptions } from '../call.js';
import type { HelmRunner } from '../runner.js';

/** `helm create`: helm's starter chart (an nginx Deployment, Service, optional Ingress/HPA) at `chartDir`. */
export async function create(runner: HelmRunner, chartDir: string, opts: CallOptions = {}): Promise<void> {
  await runner.run('create', createArgs(chartDir), offlineContext(opts));
}
