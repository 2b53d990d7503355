/**
 * The parts of @kubernetes/client-node the operator uses, each imported from its own file. The
 * package's index evaluates every generated API and model (~870 modules, 16 MB of source that V8
 * keeps for lazy compilation): +85 MiB RSS for a process that needs none of them, since our
 * requests go through {@link RawClient} as plain JSON. Types may still come from the index
 * (`import type` is erased); values come from here. The package has no `exports` map, so these
 * paths are public to Node. See client-node-hooks.ts for the two imports inside the package that
 * still reach the generated code, and docs/adr/0020.
 */
export { KubeConfig } from '@kubernetes/client-node/dist/config.js';
export { ApiException } from '@kubernetes/client-node/dist/gen/apis/exception.js';
export { HttpMethod, RequestContext } from '@kubernetes/client-node/dist/gen/http/http.js';
export type { Configuration } from '@kubernetes/client-node/dist/gen/configuration.js';
export { PatchStrategy } from '@kubernetes/client-node/dist/patch.js';
export { ListWatch } from '@kubernetes/client-node/dist/cache.js';
export { Watch } from '@kubernetes/client-node/dist/watch.js';
export { V1MicroTime } from '@kubernetes/client-node/dist/types.js';
export type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node/dist/types.js';
