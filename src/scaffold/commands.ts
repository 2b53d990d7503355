/**
 * The scaffolding commands as the CLI calls them: build the helm client and the cluster connection,
 * run `init` / `create api`, and return what to print.
 */
import { KubeConfig } from '../k8s/client-node.js';
import { HelmClient } from '../helm/index.js';
import { loadKubeConfig } from '../k8s/kubeconfig.js';
import { createApi, type CreateApiOptions } from './create-api.js';
import { initProject } from './init-project.js';
import { scaffoldLibrary } from './library.js';
import { formatPlan, formatResults } from './machinery/index.js';
import { readProject } from './project.js';
import type { RuntimeIdentity } from './runtime-identity.js';


export interface CommonScaffoldFlags {
  readonly root: string;
  readonly helmBinary: string;
  readonly force: boolean;
  readonly dryRun: boolean;
}

export type CreateApiFlags = CommonScaffoldFlags & Omit<CreateApiOptions, 'root' | 'force' | 'dryRun'>;

export interface InitFlags extends CreateApiFlags {
  readonly domain: string;
  readonly projectName?: string;
}

function discoveryConfig(): KubeConfig | undefined {
  try {
    return loadKubeConfig();
  } catch {
    return undefined;
  }
}

const helmFor = (f: CommonScaffoldFlags): HelmClient => new HelmClient({ binary: f.helmBinary, userHelmHome: true });

async function createApiReport(f: CreateApiFlags): Promise<string> {
  const kc = discoveryConfig();
  const r = await createApi({ ...f }, { helm: helmFor(f), library: scaffoldLibrary, ...(kc === undefined ? {} : { kubeConfig: kc }) });
  const lines = [
    ...(f.dryRun ? ['plan:', formatPlan(r.plan), ''] : []),
    formatResults(r.results, f.dryRun),
    ...r.notes.map((n) => `note: ${n}`),
    ...(f.dryRun ? [] : [`${r.names.kind} (${r.names.fullGroup}/${r.names.version}) served by helm-charts/${r.chartName}: make install run, then kubectl apply -k config/samples`]),
  ];
  return lines.join('\n');
}

export async function runInit(f: InitFlags, runtime: RuntimeIdentity): Promise<string> {
  const { results, plan, source } = await initProject(
    { root: f.root, domain: f.domain, force: f.force, dryRun: f.dryRun, ...(f.projectName === undefined ? {} : { projectName: f.projectName }) },
    runtime,
  );
  const out = [...(f.dryRun ? ['plan:', formatPlan(plan), ''] : []), formatResults(results, f.dryRun), `runtime: ${source.dependency} (${source.reason})`];
  const wantsApi = f.kind !== undefined || f.helmChart !== undefined || f.group !== undefined || f.version !== undefined;
  if (wantsApi && !f.dryRun) out.push(await createApiReport(f));
  if (!wantsApi && !f.dryRun) {
    const project = await readProject(f.root);
    out.push(`project ${project.projectName} (domain ${project.domain}) created; next: helm-operator create api --group <g> --version v1alpha1 --kind <Kind> --helm-chart <chart>`);
  }
  return out.join('\n');
}

export const runCreateApi = (f: CreateApiFlags): Promise<string> => createApiReport(f);
