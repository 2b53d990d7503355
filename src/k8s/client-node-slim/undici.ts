/**
 * What client-node imports from `undici` (see ../client-node-hooks.ts): `Agent` and `ProxyAgent`
 * (config.js) and `fetch` (watch.js and the generated clients' isomorphic-fetch.js). The package's
 * index also evaluates its mock agents, cache stores (SQLite included), WebSocket, EventSource and
 * cookie helpers: ~28 MiB of RSS, of which these three need ~19. They are taken from the same
 * files the index takes them from, in the undici that client-node itself resolves, so they are the
 * very same classes.
 */
import { createRequire } from 'node:module';

// client-node's own `undici`, wherever the package manager put it.
const fromClientNode = createRequire(createRequire(import.meta.url).resolve('@kubernetes/client-node'));
const undiciLib = (file: string): unknown => fromClientNode(`undici/lib/${file}`);

// The index adds request/stream/pipeline/upgrade/connect to every dispatcher; ProxyAgent tunnels
// with `connect`, so the slim set does the same before anything is constructed.
const { prototype } = undiciLib('dispatcher/dispatcher.js') as { prototype: object };
Object.assign(prototype, undiciLib('api/index.js'));

export const Agent = undiciLib('dispatcher/agent.js');
export const ProxyAgent = undiciLib('dispatcher/proxy-agent.js');
export const { fetch } = undiciLib('web/fetch/index.js') as { fetch: unknown };
