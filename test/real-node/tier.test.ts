/**
 * The real-node tier (`make test-real-node`; docs/real-node.md), one file so that its suites run in
 * the order they depend on: vitest orders files by size and past durations, and the last suite takes
 * the cluster down. Root only (containerd, kubelet, host networking); its own cluster (one real node
 * per machine).
 */
import './deploy.suite.js';
import './image.suite.js';
import './operators.suite.js';
import './sharding.suite.js';
import './token.suite.js';
import './olm.suite.js';
import './scaffold.suite.js';
import './host.suite.js';
