import { readFileSync } from 'node:fs';

/** Set at build time in the bundled executable (hack/bundle.ts), which has no package.json beside it. */
declare const HELM_OPERATOR_VERSION: string | undefined;

/** The package version: the bundle's, or read once from package.json next to dist/ or src/. */
export const VERSION: string =
  typeof HELM_OPERATOR_VERSION === 'string'
    ? HELM_OPERATOR_VERSION
    : (() => {
        try {
          const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
          return pkg.version ?? '0.0.0';
        } catch {
          return '0.0.0';
        }
      })();
