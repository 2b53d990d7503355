/**
 * The OLM tier (`make test-olm`): OLM's operators as local processes, the mode `olm install` takes
 * on a cluster whose nodes run no containers (kwok's; docs/olm.md). One file, so that its suites
 * share ONE installation in the order they depend on: cli.suite.ts checks the commands without OLM,
 * then installs it; the install and upgrade suites use it; uninstall.suite.ts removes it last. OLM
 * as pods (its other mode) is the real-node tier's (test/real-node/olm.suite.ts).
 */
import { afterAll } from 'vitest';
import { helmOperator } from '../support/olm.js';
import './cli.suite.js';
import './install.suite.js';
import './bundle-upgrade.suite.js';
import './uninstall.suite.js';

// Whatever a failed suite left: no OLM process may outlive the tier.
afterAll(async () => {
  await helmOperator(['olm', 'uninstall']).catch(() => undefined);
}, 300_000);
