#!/usr/bin/env node
/** The `helm-operator` command. */
import { Command } from 'commander';
import { runBundleValidate, runGenerateBundle, runKustomizeManifests } from '../bundle/commands.js';
import { BundleInputError } from '../bundle/csv.js';
import { SelectorError } from '../bundle/validate.js';
import { HelmError } from '../helm/index.js';
import { KubeConfigError } from '../k8s/kubeconfig.js';
import { NoKindMatchError } from '../k8s/restmapper.js';
import { runCreateApi, runInit } from '../scaffold/commands.js';
import { isScaffoldUserError } from '../scaffold/errors.js';
import { runtimeIdentity } from '../scaffold/runtime-identity.js';
import { defineBundleCommand, defineGenerateCommand } from './bundle.js';
import { defineRunCommand } from './flags.js';
import { defineCreateCommand, defineInitCommand } from './scaffold.js';
import { run, StartupError } from './run.js';
import { VERSION } from './version.js';

/** Errors a user fixes by editing input or setup: print the message alone, exit 1. */
function isUserFacing(err: unknown): err is Error {
  return (
    err instanceof StartupError ||
    err instanceof KubeConfigError ||
    err instanceof NoKindMatchError ||
    err instanceof HelmError ||
    isScaffoldUserError(err) ||
    err instanceof BundleInputError ||
    err instanceof SelectorError
  );
}

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
  program.addCommand(defineRunCommand(run));
  program.addCommand(defineInitCommand(async (f) => { print(await runInit(f, runtimeIdentity())); }));
  program.addCommand(defineCreateCommand(async (f) => { print(await runCreateApi(f)); }));
  program.addCommand(
    defineGenerateCommand(
      async (f) => { print(await runKustomizeManifests(f)); },
      async (f) => { print(await runGenerateBundle(f)); },
      VERSION,
    ),
  );
  program.addCommand(
    defineBundleCommand(async (f) => {
      const r = await runBundleValidate(f.dir, f);
      print(r.text);
      if (!r.ok) process.exitCode = 1;
    }),
  );
  program.command('version').description('Print the version').action(() => {
    process.stdout.write(`helm-operator ${VERSION}\n`);
  });
  await program.parseAsync(argv);
}

main(process.argv).then(
  () => process.exit(process.exitCode ?? 0),
  (err: unknown) => {
    process.stderr.write(isUserFacing(err) ? `error: ${err.message}\n` : `error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
