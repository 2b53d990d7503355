/** The bundle's metadata: `metadata/annotations.yaml` and `bundle.Dockerfile` carry the same keys. */
import { BUILDER, PROJECT_LAYOUT } from './types.js';

export interface BundleMetadataInput {
  readonly packageName: string;
  readonly channels: readonly string[];
  readonly defaultChannel?: string;
  readonly builderVersion: string;
  /** Relative to the project root, where `bundle.Dockerfile` is. */
  readonly outputDir: string;
}

export function bundleAnnotations(m: BundleMetadataInput): Record<string, string> {
  return {
    'operators.operatorframework.io.bundle.mediatype.v1': 'registry+v1',
    'operators.operatorframework.io.bundle.manifests.v1': 'manifests/',
    'operators.operatorframework.io.bundle.metadata.v1': 'metadata/',
    'operators.operatorframework.io.bundle.package.v1': m.packageName,
    'operators.operatorframework.io.bundle.channels.v1': m.channels.join(','),
    ...(m.defaultChannel === undefined ? {} : { 'operators.operatorframework.io.bundle.channel.default.v1': m.defaultChannel }),
    'operators.operatorframework.io.metrics.builder': `${BUILDER}-v${m.builderVersion}`,
    'operators.operatorframework.io.metrics.mediatype.v1': 'metrics+v1',
    'operators.operatorframework.io.metrics.project_layout': PROJECT_LAYOUT,
    'operators.operatorframework.io.test.mediatype.v1': 'scorecard+v1',
    'operators.operatorframework.io.test.config.v1': 'tests/scorecard/',
  };
}

export function annotationsYaml(m: BundleMetadataInput): string {
  const lines = Object.entries(bundleAnnotations(m)).map(([k, v]) => `  ${k}: ${v}`);
  return ['annotations:', '  # Core bundle annotations.', ...lines, ''].join('\n');
}

export function bundleDockerfile(m: BundleMetadataInput): string {
  const labels = Object.entries(bundleAnnotations(m)).map(([k, v]) => `LABEL ${k}=${v}`);
  const dir = m.outputDir.replace(/\/+$/, '');
  return [
    'FROM scratch',
    '',
    '# Core bundle labels: the same as metadata/annotations.yaml.',
    ...labels,
    '',
    '# Copy files to locations specified by labels.',
    `COPY ${dir}/manifests /manifests/`,
    `COPY ${dir}/metadata /metadata/`,
    `COPY ${dir}/tests/scorecard /tests/scorecard/`,
    '',
  ].join('\n');
}

/** The bundle image's build context: the bundle directory only. */
export const bundleDockerignore = (outputDir: string): string =>
  `# The build context of bundle.Dockerfile: ${outputDir}/ only.\n*\n!${outputDir}/\n`;
