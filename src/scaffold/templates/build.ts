/**
 * The scaffolded project's Makefile, Dockerfile and README: files/Makefile.tmpl, Dockerfile.tmpl and
 * README.md.tmpl (see docs/adr/0014 and 0051). What differs for a vendored runtime is chosen here.
 */
import path from 'node:path';
import { markerText } from '../../machinery/index.js';
import { vendoredRuntime, type ProjectInputs } from './project.js';
import { render } from './render.js';

/** `text(file)` for a project with a vendored runtime tarball, nothing for one the registry serves. */
const ifVendored = (p: ProjectInputs, text: (file: string) => string): string => {
  const file = vendoredRuntime(p);
  return file === undefined ? '' : text(file);
};

export const makefile = (p: ProjectInputs): string =>
  render('Makefile', {
    projectName: p.projectName,
    runtimePackage: p.runtimePackage,
    commitVendored: ifVendored(p, (file) => `, and ${file}`),
  });

export const dockerfile = (p: ProjectInputs): string =>
  render('Dockerfile', {
    projectName: p.projectName,
    runtimePackage: p.runtimePackage,
    nodeVersion: p.nodeVersion,
    installedFrom: ifVendored(p, (file) => `, from ${file}`),
    // The vendored runtime's directory into the build stage, before `npm ci` needs it.
    vendorCopy: ifVendored(p, (file) => `COPY ${path.posix.dirname(file)}/ ./${path.posix.dirname(file)}/\n`),
  });

export const readme = (p: ProjectInputs): string =>
  render('README.md', {
    projectName: p.projectName,
    runtimePackage: p.runtimePackage,
    runtimeVersion: p.runtimeVersion,
    runtimeDependency: p.runtimeDependency,
    vendoredTarball: ifVendored(
      p,
      (file) => `; \`${file}\` is its tarball, as \`helm-operator init\`\nfound it (the npm registry did not serve this version)`,
    ),
    tenancy: tenancySection,
  });

/**
 * The README's Tenancy section, ending at the marker where `create api` adds each kind's entry
 * (api.ts `tenancyFragment`). Kept in TypeScript beside that fragment for now.
 */
const tenancySection = `## Tenancy

Whoever may create a custom resource chooses the chart's values. Run as it is scaffolded, the operator
installs every release with its own identity, so a CR author gets, through the chart, what
\`config/rbac/role.yaml\` grants the operator: its kinds in every namespace, and every Secret of the
cluster (helm's release storage needs them), readable through \`lookup()\`. A value the chart renders
with \`tpl\` or an \`extraDeploy\`-style list lets them write any object or template; \`create api\`
lists such values below. The \`allowKinds\` that \`create api\` writes into each watch (the kinds its
chart renders) narrows what such a value can create to those kinds: helm's other writes are refused
(\`ReleaseFailed=True\`, reason \`KindNotAllowed\`). Add a kind there when a new chart version renders it.

The boundary is impersonation, enforced by the API server: run the operator with
\`--default-service-account <name>\` (or set \`serviceAccountName\` on a watch) and each release is
installed as that ServiceAccount of the CR's namespace, which the namespace's admin creates and grants
(a Role for the chart's kinds and Secrets); a CR author then gets no more than that. The operator needs
\`impersonate\` and \`get\` on \`serviceaccounts\` for it. Without a ServiceAccount, the operator warns at
start and \`helm_operator_watch_identity{identity="operator"}\` is 1 for the watch. \`confineToNamespace\`,
kind allow-lists and the values-source label are defense in depth, not a boundary.

<!-- ${markerText('tenancy')} -->`;
