/** `generate bundle` as a plan: every file of `bundle/` plus `bundle.Dockerfile`, regenerated on each run. */
import { stringify } from 'yaml';
import { create, type Plan } from '../machinery/index.js';
import { BundleInputError, buildBundle, manifestFileName, type BundleInput } from './csv.js';
import { annotationsYaml, bundleDockerfile, bundleDockerignore } from './metadata.js';
import { isScorecardConfig, scorecardConfig } from './scorecard.js';

export interface GenerateBundleOptions extends BundleInput {
  readonly channels: readonly string[];
  readonly defaultChannel?: string;
  /** Relative to the project root; `bundle` by default. */
  readonly outputDir?: string;
}

const toYaml = (o: unknown): string => stringify(o, { lineWidth: 0 });

export function generateBundle(o: GenerateBundleOptions): { plan: Plan; notes: readonly string[] } {
  if (o.channels.length === 0 || o.channels.some((c) => c.trim() === ''))
    throw new BundleInputError('--channels: give at least one channel name');
  if (o.defaultChannel !== undefined && !o.channels.includes(o.defaultChannel)) {
    throw new BundleInputError(`--default-channel ${o.defaultChannel} is not one of --channels ${o.channels.join(',')}`);
  }
  const out = (o.outputDir ?? 'bundle').replace(/\/+$/, '');
  // config/scorecard's Configuration goes to tests/, not into the bundle's manifests.
  const scorecard = o.objects.filter(isScorecardConfig);
  if (scorecard.length > 1)
    throw new BundleInputError(`${scorecard.length} scorecard Configurations in the input; config/scorecard must render one`);
  const content = buildBundle({ ...o, objects: o.objects.filter((x) => !isScorecardConfig(x)) });
  const meta = {
    packageName: o.packageName,
    channels: o.channels,
    builderVersion: o.builderVersion,
    outputDir: out,
    ...(o.defaultChannel === undefined ? {} : { defaultChannel: o.defaultChannel }),
  };
  const manifests = [content.csv, ...content.crds, ...content.others].map((m) =>
    create(`${out}/manifests/${manifestFileName(m, o.packageName)}`, toYaml(m)),
  );
  const plan: Plan = [
    ...manifests,
    create(`${out}/metadata/annotations.yaml`, annotationsYaml(meta)),
    create(`${out}/tests/scorecard/config.yaml`, scorecardConfig(scorecard[0])),
    create('bundle.Dockerfile', bundleDockerfile(meta)),
    // Read next to bundle.Dockerfile by docker (BuildKit) and podman instead of .dockerignore, which in
    // an operator project keeps bundle/ out of the operator image's context.
    create('bundle.Dockerfile.dockerignore', bundleDockerignore(out)),
  ];
  return { plan, notes: content.notes };
}
