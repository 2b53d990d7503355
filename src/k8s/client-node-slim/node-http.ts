/**
 * `node:http` for ES modules, without node's bundled undici (see ../client-node-hooks.ts). Node
 * builds a builtin's ES module facade by reading every export, and `node:http`'s `WebSocket`,
 * `CloseEvent` and `MessageEvent` are getters that load node's own copy of undici (the one behind
 * the global `fetch`, ~8 MiB of RSS) just to be listed. `require` reads nothing, so the same module
 * object is re-exported from it, minus those three names, which nothing in the operator uses.
 */
import { createRequire } from 'node:module';

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export default http;
export const {
  _connectionListener,
  METHODS,
  STATUS_CODES,
  Agent,
  ClientRequest,
  IncomingMessage,
  OutgoingMessage,
  Server,
  ServerResponse,
  createServer,
  validateHeaderName,
  validateHeaderValue,
  get,
  request,
  setMaxIdleHTTPParsers,
  setGlobalProxyFromEnv,
  maxHeaderSize,
  globalAgent,
} = http as typeof http & { readonly _connectionListener: unknown; readonly setGlobalProxyFromEnv: unknown };
