/**
 * The `helm-operator` command. Scaffolding, bundle and OLM code load only when their command runs, so
 * `run` (the long-lived process) never holds them.
 */
import { Command } from 'commander';
import { HelmError } from '../helm/index.js';
import { KubeConfigError } from '../k8s/kubeconfig.js';
import { NoKindMatchError } from '../k8s/restmapper.js';
import { defineBundleCommand, defineGenerateCommand } from './bundle.js';
import { defineRunCommand } from './flags.js';
import { defineCleanupCommand, defineOlmCommand, defineRunBundleCommand, defineRunBundleUpgradeCommand } from './olm.js';
import { defineCreateCommand, defineInitCommand } from './scaffold.js';
import { defineRolloutCommand, RolloutError } from './rollout.js';
import { definePlanCommand } from './plan.js';
import { defineShardsCommand } from './shards.js';
import { run, StartupError } from './run.js';
import { VERSION } from './version.js';

/** Errors a user fixes by editing input or setup: print the message alone, exit 1. */
async function isUserFacing(err: unknown): Promise<boolean> {
  if (
    err instanceof StartupError ||
    err instanceof RolloutError ||
    err instanceof KubeConfigError ||
    err instanceof NoKindMatchError ||
    err instanceof HelmError
  )
    return true;
  const [{ isScaffoldUserError }, { BundleInputError }, { SelectorError }, { OlmError }] = await Promise.all([
    import('../scaffold/errors.js'),
    import('../bundle/csv.js'),
    import('../bundle/validate.js'),
    import('../olm/errors.js'),
  ]);
  return isScaffoldUserError(err) || err instanceof BundleInputError || err instanceof SelectorError || err instanceof OlmError;
}

const scaffold = (): Promise<typeof import('../scaffold/commands.js')> => import('../scaffold/commands.js');
const bundle = (): Promise<typeof import('../bundle/commands.js')> => import('../bundle/commands.js');
const olm = (): Promise<typeof import('../olm/commands.js')> => import('../olm/commands.js');

const print = (text: string): void => {
  process.stdout.write(`${text}\n`);
};

async function main(argv: readonly string[]): Promise<void> {
  const program = new Command('helm-operator')
    .description('A Helm-backed Kubernetes operator: reconciles custom resources into helm releases')
    .version(VERSION, '--version')
    // Program options only before the subcommand: `create api --version v1alpha1` is the API version.
    .enablePositionalOptions()
    .showHelpAfterError('(run with --help for usage)');
  program.addCommand(
    defineRunCommand(run)
      .addCommand(
        defineRunBundleCommand(async (f) => {
          print(await (await olm()).runBundleCommand(f));
        }),
      )
      .addCommand(
        defineRunBundleUpgradeCommand(async (f) => {
          print(await (await olm()).runBundleUpgradeCommand(f));
        }),
      ),
  );
  program.addCommand(
    defineInitCommand(async (f) => {
      const [{ runInit }, { runtimeIdentity }] = await Promise.all([scaffold(), import('../scaffold/runtime-identity.js')]);
      print(await runInit(f, runtimeIdentity()));
    }),
  );
  program.addCommand(
    defineCreateCommand(async (f) => {
      print(await (await scaffold()).runCreateApi(f));
    }),
  );
  program.addCommand(
    defineGenerateCommand(
      async (f) => {
        print(await (await bundle()).runKustomizeManifests(f));
      },
      async (f) => {
        print(await (await bundle()).runGenerateBundle(f));
      },
      VERSION,
    ),
  );
  program.addCommand(
    defineBundleCommand(async (f) => {
      const r = await (await bundle()).runBundleValidate(f.dir, f);
      print(r.text);
      if (!r.ok) process.exitCode = 1;
    }),
  );
  program.addCommand(
    defineOlmCommand({
      install: async (f) => {
        print(await (await olm()).olmInstallCommand(f));
      },
      status: async (f) => {
        print(await (await olm()).olmStatusCommand(f));
      },
      uninstall: async (f) => {
        print(await (await olm()).olmUninstallCommand(f));
      },
    }),
  );
  program.addCommand(
    defineCleanupCommand(async (f) => {
      print(await (await olm()).cleanupCommand(f));
    }),
  );
  program.addCommand(
    defineRolloutCommand(async (f) => {
      print(await (await import('./rollout.js')).rolloutCommand(f));
    }),
  );
  program.addCommand(
    definePlanCommand(async (f) => {
      print(
        f.verb === 'diff' ? await (await import('./plan-diff.js')).planDiffCommand(f) : await (await import('./plan.js')).planCommand(f),
      );
    }),
  );
  program.addCommand(
    defineShardsCommand(async (f) => {
      print(await (await import('./shards.js')).shardsCommand(f));
    }),
  );
  program
    .command('version')
    .description('Print the version')
    .action(() => {
      process.stdout.write(`helm-operator ${VERSION}\n`);
    });
  await program.parseAsync(argv);
}

main(process.argv).then(
  () => process.exit(process.exitCode ?? 0),
  async (err: unknown) => {
    const userFacing = err instanceof Error && (await isUserFacing(err).catch(() => false));
    process.stderr.write(
      userFacing ? `error: ${err.message}\n` : `error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
