/**
 * `helm-operator olm install | status | uninstall`, `run bundle`, `run bundle-upgrade` and `cleanup`: operator-sdk's
 * command shapes and flags (docs/adr/0033); flags → src/olm.
 */
import { Command, Option } from 'commander';
import type { CleanupFlags, OlmFlags, RunBundleFlags, RunBundleUpgradeFlags } from '../olm/commands.js';
import { boolOption, duration } from './flags.js';

type Action<T> = (flags: T) => Promise<void>;

const timeout = (): Option =>
  new Option('--timeout <duration>', 'time to wait for the command to complete before failing')
    .argParser(duration)
    .default(120_000, '2m0s');
const kubeconfig = (): Option => new Option('--kubeconfig <file>', 'path to the kubeconfig file to use for CLI requests');
const namespace = (): Option =>
  new Option('-n, --namespace <namespace>', "namespace for this request (default: the context's namespace, else default)");
const optional = <T extends object>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };

export function defineOlmCommand(actions: { install: Action<OlmFlags>; status: Action<OlmFlags>; uninstall: Action<OlmFlags> }): Command {
  const olm = new Command('olm').description('Manage the Operator Lifecycle Manager installation in your cluster');
  const common = (cmd: Command, versionHelp: string): Command =>
    cmd
      .option('--version <version>', versionHelp)
      .addOption(timeout())
      .option('--olm-namespace <namespace>', 'namespace where OLM is installed', 'olm')
      .addOption(kubeconfig());
  type Raw = { version?: string; image?: string; timeout: number; olmNamespace: string; kubeconfig?: string };
  const flags = (o: Raw): OlmFlags => ({
    timeoutMs: o.timeout,
    olmNamespace: o.olmNamespace,
    ...optional({ version: o.version, image: o.image, kubeconfig: o.kubeconfig }),
  });
  olm.addCommand(
    common(
      new Command('install').description('Install Operator Lifecycle Manager in your cluster'),
      'version of OLM to install (default: the pinned one, built from source)',
    )
      .option(
        '--image <ref>',
        "OLM's image, on a cluster whose nodes run containers (default: quay.io/operator-framework/olm:<version>; hack/olm-images.sh builds it here)",
      )
      .action((o: Raw) => actions.install(flags(o))),
  );
  olm.addCommand(
    common(
      new Command('status').description('Get the status of the Operator Lifecycle Manager installation in your cluster'),
      'version of OLM installed on the cluster',
    ).action((o: Raw) => actions.status(flags(o))),
  );
  olm.addCommand(
    common(
      new Command('uninstall').description('Uninstall Operator Lifecycle Manager from your cluster'),
      'version of OLM resources to uninstall',
    ).action((o: Raw) => actions.uninstall(flags(o))),
  );
  return olm;
}

export function defineRunBundleCommand(action: Action<RunBundleFlags>): Command {
  type Raw = {
    namespace?: string;
    timeout: number;
    installMode?: string;
    indexImage?: string;
    useHttp: boolean;
    skipTlsVerify: boolean;
    kubeconfig?: string;
  };
  return new Command('bundle')
    .description(
      'Deploy an operator in the bundle format with OLM: a bundle image (<registry>/<repository>:<tag>) or a bundle directory (./bundle)',
    )
    .argument('<bundle>', 'bundle image or bundle directory')
    .addOption(namespace())
    .addOption(timeout())
    .option(
      '--install-mode <mode>',
      'install mode: AllNamespaces, OwnNamespace, SingleNamespace=<ns> or MultiNamespace=<ns1>,<ns2> (default: AllNamespaces when the CSV supports it, else OwnNamespace)',
    )
    .option(
      '--index-image <ref>',
      "the opm image the registry pod serves the bundle's catalog with, on a cluster whose nodes run containers (default: quay.io/operator-framework/opm:<pinned version>; hack/olm-images.sh builds it here)",
    )
    .option('--use-http', 'pull the bundle image from a plain-HTTP registry', false)
    .option('--skip-tls-verify', "pull the bundle image without checking the registry's TLS certificate", false)
    .addOption(kubeconfig())
    .action((ref: string, o: Raw) =>
      action({
        ref,
        timeoutMs: o.timeout,
        useHttp: o.useHttp,
        skipTlsVerify: o.skipTlsVerify,
        ...optional({ namespace: o.namespace, installMode: o.installMode, indexImage: o.indexImage, kubeconfig: o.kubeconfig }),
      }),
    );
}

export function defineRunBundleUpgradeCommand(action: Action<RunBundleUpgradeFlags>): Command {
  type Raw = { namespace?: string; timeout: number; useHttp: boolean; skipTlsVerify: boolean; kubeconfig?: string };
  return new Command('bundle-upgrade')
    .description(
      "Upgrade an operator that 'run bundle' installed to the bundle given: a bundle image or a bundle directory of a newer version",
    )
    .argument('<bundle>', 'bundle image or bundle directory')
    .addOption(namespace())
    .addOption(timeout())
    .option('--use-http', 'pull the bundle image from a plain-HTTP registry', false)
    .option('--skip-tls-verify', "pull the bundle image without checking the registry's TLS certificate", false)
    .addOption(kubeconfig())
    .action((ref: string, o: Raw) =>
      action({
        ref,
        timeoutMs: o.timeout,
        useHttp: o.useHttp,
        skipTlsVerify: o.skipTlsVerify,
        ...optional({ namespace: o.namespace, kubeconfig: o.kubeconfig }),
      }),
    );
}

export function defineCleanupCommand(action: Action<CleanupFlags>): Command {
  type Raw = {
    namespace?: string;
    timeout: number;
    deleteAll: boolean;
    deleteCrds: boolean;
    deleteOperatorGroups: boolean;
    kubeconfig?: string;
  };
  return new Command('cleanup')
    .description(
      "Clean up an operator deployed with 'run bundle': its Subscription, ClusterServiceVersion, CatalogSource and catalog server, and (--delete-all) its CRDs and OperatorGroup",
    )
    .argument('<packageName>', "the bundle's package name")
    .addOption(namespace())
    .addOption(timeout())
    .addOption(boolOption('--delete-all', 'if true, all other delete options are enabled').default(true))
    .addOption(boolOption('--delete-crds', 'if true, owned CRDs and their CRs are deleted').default(false))
    .addOption(boolOption('--delete-operator-groups', 'if true, the OperatorGroup run bundle created is deleted').default(false))
    .addOption(kubeconfig())
    .action((packageName: string, o: Raw) =>
      action({
        packageName,
        timeoutMs: o.timeout,
        deleteAll: o.deleteAll,
        deleteCrds: o.deleteCrds,
        deleteOperatorGroups: o.deleteOperatorGroups,
        ...optional({ namespace: o.namespace, kubeconfig: o.kubeconfig }),
      }),
    );
}
