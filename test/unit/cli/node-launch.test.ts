import { constants } from 'node:os';
import { describe, expect, it } from 'vitest';
import { decideLaunch, exitStatus } from '../../../src/cli/node-launch.js';

describe('decideLaunch: the executable on the system Node or the pinned one', () => {
  it('runs on a Node that satisfies engines.node, and when the package states none', () => {
    expect(decideLaunch('24.21.0', '>=24', false)).toEqual({ action: 'run' });
    expect(decideLaunch('25.0.0', '>=24', false)).toEqual({ action: 'run' });
    expect(decideLaunch('18.0.0', undefined, false)).toEqual({ action: 'run' });
  });

  it('relaunches from an older Node (Debian 12 ships Node 18, many images 20)', () => {
    expect(decideLaunch('20.20.2', '>=24', false)).toEqual({ action: 'relaunch' });
    expect(decideLaunch('23.11.0', '>=24', false)).toEqual({ action: 'relaunch' });
  });

  it('fails with what to install, not a loop, when the relaunched Node is still too old', () => {
    const d = decideLaunch('20.20.2', '>=24', true);
    expect(d.action).toBe('fail');
    expect(d.action === 'fail' ? d.message : '').toMatch(/needs Node >=24; .* is 20\.20\.2\. Install Node >=24/);
  });
});

describe('exitStatus: the relaunched child’s status as a shell reports it', () => {
  it('passes an exit code through, and maps a signal to 128 + its number', () => {
    expect(exitStatus(0, null)).toBe(0);
    expect(exitStatus(3, null)).toBe(3);
    expect(exitStatus(null, 'SIGTERM')).toBe(128 + constants.signals.SIGTERM);
    expect(exitStatus(null, 'SIGINT')).toBe(130);
  });
});
