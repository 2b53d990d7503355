/** The OLM commands as the CLI calls them: the cluster connection, progress on stderr, what to print. */
import { loadKubeConfig } from '../k8s/kubeconfig.js';
import { cleanup, runBundle } from './bundle.js';
import { runBundleUpgrade } from './bundle-upgrade.js';
import { Cluster } from './cluster.js';
import { olmInstall, olmStatus, olmUninstall } from './olm.js';

export interface OlmFlags {
  readonly version?: string;
  readonly image?: string;
  readonly timeoutMs: number;
  readonly olmNamespace: string;
  readonly kubeconfig?: string;
}

export interface RunBundleFlags {
  readonly ref: string;
  readonly namespace?: string;
  readonly timeoutMs: number;
  readonly installMode?: string;
  readonly indexImage?: string;
  readonly useHttp: boolean;
  readonly skipTlsVerify: boolean;
  readonly kubeconfig?: string;
}

export type RunBundleUpgradeFlags = Omit<RunBundleFlags, 'installMode'>;

export interface CleanupFlags {
  readonly packageName: string;
  readonly namespace?: string;
  readonly timeoutMs: number;
  readonly deleteAll: boolean;
  readonly deleteCrds: boolean;
  readonly deleteOperatorGroups: boolean;
  readonly kubeconfig?: string;
}

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

const cluster = (kubeconfig: string | undefined): Cluster => new Cluster(loadKubeConfig(kubeconfig));

export const olmInstallCommand = (f: OlmFlags): Promise<string> => olmInstall(cluster(f.kubeconfig), f, progress);
export const olmStatusCommand = (f: OlmFlags): Promise<string> => olmStatus(cluster(f.kubeconfig), f);
export const olmUninstallCommand = (f: OlmFlags): Promise<string> => olmUninstall(cluster(f.kubeconfig), f, progress);
export const runBundleCommand = (f: RunBundleFlags): Promise<string> => runBundle(cluster(f.kubeconfig), f.ref, f, progress);
export const runBundleUpgradeCommand = (f: RunBundleUpgradeFlags): Promise<string> =>
  runBundleUpgrade(cluster(f.kubeconfig), f.ref, f, progress);
export const cleanupCommand = (f: CleanupFlags): Promise<string> => cleanup(cluster(f.kubeconfig), f.packageName, f, progress);
