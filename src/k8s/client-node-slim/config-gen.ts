/** What client-node's config.js imports from its generated index (see ../client-node-hooks.ts). */
export { createConfiguration } from '@kubernetes/client-node/dist/gen/configuration.js';
export { ServerConfiguration } from '@kubernetes/client-node/dist/gen/servers.js';
