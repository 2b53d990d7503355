/**
 * Project-level files `init` writes: PROJECT, watches.yaml, package.json, .gitignore, and the
 * kustomize files that `create api` later extends at their markers (templates in files/).
 */
import { render } from './render.js';

export interface ProjectInputs {
  readonly projectName: string;
  readonly domain: string;
  /** The runtime package: npm name and the exact version a project pins. */
  readonly runtimePackage: string;
  readonly runtimeVersion: string;
  /**
   * The runtime's entry in the project's package.json: the exact version (from the registry) or
   * `file:vendor/<tarball>` (vendored, docs/adr/0032); the Dockerfile copies vendor/ in that case.
   */
  readonly runtimeDependency: string;
  /** Node version of the image's base (hack/versions.env's NODE_VERSION). */
  readonly nodeVersion: string;
}

/** The vendored tarball's path when the project installs the runtime from one. */
export const vendoredRuntime = (p: Pick<ProjectInputs, 'runtimeDependency'>): string | undefined =>
  p.runtimeDependency.startsWith('file:') ? p.runtimeDependency.slice('file:'.length) : undefined;

/** Node's conventions: the runtime an exact dependency, the lockfile (npm install writes it) committed. */
export const packageJson = (p: ProjectInputs): string =>
  `${JSON.stringify(
    {
      name: p.projectName,
      version: '0.0.1',
      private: true,
      description: `${p.projectName}: a Helm-backed Kubernetes operator (${p.runtimePackage})`,
      dependencies: { [p.runtimePackage]: p.runtimeDependency },
    },
    null,
    2,
  )}\n`;

/** operator-sdk's PROJECT format, with this runtime's `layout` (files/PROJECT.tmpl). */
export const projectFile = (p: ProjectInputs): string => render('PROJECT', { projectName: p.projectName, domain: p.domain });

export const watchesFile = (): string => render('watches.yaml');

/** Its template is files/gitignore.tmpl (dockerignore.tmpl below): no leading dot, so listings show it. */
export const gitignore = (): string => render('gitignore');

export const dockerignore = (): string => render('dockerignore');

export const crdKustomization = (): string => render('config/crd/kustomization.yaml');

export const samplesKustomization = (): string => render('config/samples/kustomization.yaml');

/** Least privilege, no wildcard; `create api` adds each kind's rules at the marker. */
export const managerRole = (p: { projectName: string }): string => render('config/rbac/role.yaml', { projectName: p.projectName });
