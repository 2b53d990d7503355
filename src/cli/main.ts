#!/usr/bin/env node
/**
 * The `helm-operator` executable: on a system Node older than the runtime needs, it re-runs itself
 * on the pinned one (node-launch.ts); otherwise it trims client-node's import graph
 * (client-node-hooks.ts), then loads the program. Dynamic imports, because every static import is
 * resolved before any code runs, and those modules need the newer Node.
 */
import { relaunchOnPinnedNode } from './node-launch.js';

if (!(await relaunchOnPinnedNode())) {
  const { trimClientNode } = await import('../k8s/client-node-hooks.js');
  trimClientNode();
  await import('./program.js');
}
