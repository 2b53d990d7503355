#!/usr/bin/env node
/** The `helm-operator` command. */
import { Command } from 'commander';
import { HelmError } from '../helm/index.js';
import { KubeConfigError } from '../k8s/kubeconfig.js';
import { NoKindMatchError } from '../k8s/restmapper.js';
import { defineRunCommand } from './flags.js';
import { run, StartupError } from './run.js';
import { VERSION } from './version.js';

/** Errors a user fixes by editing input or setup: print the message alone, exit 1. */
function isUserFacing(err: unknown): err is Error {
  return err instanceof StartupError || err instanceof KubeConfigError || err instanceof NoKindMatchError || err instanceof HelmError;
}

async function main(argv: readonly string[]): Promise<void> {
  const program = new Command('helm-operator')
    .description('A Helm-backed Kubernetes operator: reconciles custom resources into helm releases')
    .version(VERSION, '--version')
    .showHelpAfterError('(run with --help for usage)');
  program.addCommand(defineRunCommand(run));
  program.command('version').description('Print the version').action(() => {
    process.stdout.write(`helm-operator ${VERSION}\n`);
  });
  await program.parseAsync(argv);
}

main(process.argv).then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(isUserFacing(err) ? `error: ${err.message}\n` : `error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
