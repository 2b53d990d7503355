/**
 * The scaffolding commands as the CLI calls them: build the helm client and the cluster connection,
 * run `init` / `create api`, and return what to print.
 */
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '../k8s/client-node.js';
import { ChartHelm } from '../helm/chart-helm.js';
import { locateHelm } from '../helm/locate.js';
import { loadKubeConfig } from '../k8s/kubeconfig.js';
import { createApi, type CreateApiOptions } from './create-api.js';
import { initProject } from './init-project.js';
import { scaffoldLibrary } from './library.js';
import { formatPlan, formatResults } from '../machinery/index.js';
import { readProject } from '../machinery/project.js';
import type { RuntimeIdentity } from './runtime-identity.js';

export interface CommonScaffoldFlags {
  readonly root: string;
  /** `--helm-binary`; otherwise $HELM_BIN, helm on PATH, then the pinned helm (src/helm/locate.ts). */
  readonly helmBinary?: string;
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

/** The package's tool bootstrap, which pins and fetches helm (shipped in the npm package). */
const TOOLS_SCRIPT = fileURLToPath(new URL('../../hack/tools.sh', import.meta.url));

async function helmFor(f: CommonScaffoldFlags): Promise<{ helm: ChartHelm; notes: string[] }> {
  const located = await locateHelm({
    ...(f.helmBinary === undefined ? {} : { flag: f.helmBinary }),
    env: process.env,
    toolsScript: TOOLS_SCRIPT,
    progress: process.stderr,
  });
  const notes =
    located.source === 'pinned' ? [`helm: none on PATH and HELM_BIN unset; using the runtime's pinned helm ${located.binary}`] : [];
  return { helm: new ChartHelm({ binary: located.binary, userHelmHome: true }), notes };
}

async function createApiReport(f: CreateApiFlags): Promise<string> {
  const kc = discoveryConfig();
  const { helm, notes } = await helmFor(f);
  const r = await createApi({ ...f }, { helm, library: scaffoldLibrary, ...(kc === undefined ? {} : { kubeConfig: kc }) });
  const lines = [
    ...(f.dryRun ? ['plan:', formatPlan(r.plan), ''] : []),
    formatResults(r.results, f.dryRun),
    ...[...notes, ...r.notes].map((n) => `note: ${n}`),
    ...(f.dryRun
      ? []
      : [
          `${r.names.kind} (${r.names.fullGroup}/${r.names.version}) served by helm-charts/${r.chartName}: make install run, then kubectl apply -k config/samples`,
        ]),
  ];
  return lines.join('\n');
}

export async function runInit(f: InitFlags, runtime: RuntimeIdentity): Promise<string> {
  const { results, plan, source } = await initProject(
    {
      root: f.root,
      domain: f.domain,
      force: f.force,
      dryRun: f.dryRun,
      ...(f.projectName === undefined ? {} : { projectName: f.projectName }),
    },
    runtime,
  );
  const out = [
    ...(f.dryRun ? ['plan:', formatPlan(plan), ''] : []),
    formatResults(results, f.dryRun),
    `runtime: ${source.dependency} (${source.reason})`,
  ];
  const wantsApi = f.kind !== undefined || f.helmChart !== undefined || f.group !== undefined || f.version !== undefined;
  if (wantsApi && !f.dryRun) out.push(await createApiReport(f));
  if (!wantsApi && !f.dryRun) {
    const project = await readProject(f.root);
    out.push(
      `project ${project.projectName} (domain ${project.domain}) created; next: helm-operator create api --group <g> --version v1alpha1 --kind <Kind> --helm-chart <chart>`,
    );
  }
  return out.join('\n');
}

export const runCreateApi = (f: CreateApiFlags): Promise<string> => createApiReport(f);
