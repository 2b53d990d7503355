#!/usr/bin/env node
/**
 * The `helm-operator` executable: trims client-node's import graph (client-node-hooks.ts), then
 * loads the program. Two steps, because every static import is resolved before any code runs.
 */
import { trimClientNode } from '../k8s/client-node-hooks.js';

trimClientNode();
await import('./program.js');
