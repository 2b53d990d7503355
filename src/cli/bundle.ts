/** `helm-operator generate kustomize manifests`, `generate bundle`, `bundle validate`: flags → src/bundle/commands. */
import { readFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import type { GenerateBundleFlags } from '../bundle/commands.js';
import { positiveInt } from './flags.js';

type Action<T> = (flags: T) => Promise<void>;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function defineGenerateCommand(
  kustomizeManifests: Action<{ root: string; force: boolean; dryRun: boolean; packageName?: string }>,
  bundle: Action<GenerateBundleFlags>,
  builderVersion: string,
): Command {
  const generate = new Command('generate').description('Generate OLM packaging: config/manifests and the bundle');
  generate
    .command('kustomize')
    .description('Generate kustomize bases')
    .command('manifests')
    .description('Write config/manifests: the base ClusterServiceVersion (only when absent; yours to edit) and its kustomization')
    .option('--package <name>', 'package name (default: PROJECT projectName, else the directory name)')
    .option('--dry-run', 'print the plan; write nothing', false)
    .action(async (o: { package?: string; dryRun: boolean }) => {
      await kustomizeManifests({
        root: process.cwd(),
        force: false,
        dryRun: o.dryRun,
        ...(o.package === undefined ? {} : { packageName: o.package }),
      });
    });
  generate
    .command('bundle')
    .description('Write bundle/ and bundle.Dockerfile from `kubectl kustomize config/manifests` (stdin or --input-file)')
    .requiredOption('-v, --version <semver>', 'the bundle version, e.g. 0.1.0')
    .option('--channels <list>', 'comma-separated channels', 'alpha')
    .option('--default-channel <channel>', 'the default channel (one of --channels)')
    .option('--package <name>', 'package name (default: PROJECT projectName, else the directory name)')
    .option('--use-image-digests', 'require every image to be pinned by digest (this tool does not query registries)', false)
    .option('--output-dir <dir>', 'bundle directory', 'bundle')
    .option(
      '--sharded-replicas <n>',
      "run the operator's Deployment as N replicas sharing the watched namespaces (--sharding; its Role must allow list, create, update on leases)",
      positiveInt('--sharded-replicas'),
    )
    .addOption(new Option('--input-file <file>', 'kustomize output to read instead of stdin'))
    .option('--dry-run', 'print the plan; write nothing', false)
    .action(
      async (o: {
        version: string;
        channels: string;
        defaultChannel?: string;
        package?: string;
        useImageDigests: boolean;
        outputDir: string;
        shardedReplicas?: number;
        inputFile?: string;
        dryRun: boolean;
      }) => {
        const input = o.inputFile === undefined ? await readStdin() : await readFile(o.inputFile, 'utf8');
        await bundle({
          root: process.cwd(),
          force: true,
          dryRun: o.dryRun,
          input,
          inputName: o.inputFile ?? '<stdin>',
          version: o.version.replace(/^v/, ''),
          channels: o.channels.split(',').map((c) => c.trim()),
          useImageDigests: o.useImageDigests,
          outputDir: o.outputDir,
          builderVersion,
          now: new Date(),
          ...(o.package === undefined ? {} : { packageName: o.package }),
          ...(o.defaultChannel === undefined ? {} : { defaultChannel: o.defaultChannel }),
          ...(o.shardedReplicas === undefined ? {} : { shardedReplicas: o.shardedReplicas }),
        });
      },
    );
  return generate;
}

export function defineBundleCommand(validate: Action<{ dir: string; selectOptional?: string; output: 'text' | 'json' }>): Command {
  const bundle = new Command('bundle').description('Operate on OLM bundles');
  bundle
    .command('validate')
    .description("Validate a bundle directory with OLM's checks; exit 1 on errors, 0 on warnings only")
    .argument('<dir>', 'bundle directory, e.g. ./bundle')
    .option(
      '--select-optional <selector>',
      'also run optional checks: suite=operatorframework or name=operatorhub|capabilities|good-practices|alpha-deprecated-apis',
    )
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
    .action(async (dir: string, o: { selectOptional?: string; output: 'text' | 'json' }) => {
      await validate({ dir, output: o.output, ...(o.selectOptional === undefined ? {} : { selectOptional: o.selectOptional }) });
    });
  return bundle;
}
