import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { defineCreateCommand, defineInitCommand } from '../../../src/cli/scaffold.js';
import type { CreateApiFlags, InitFlags } from '../../../src/scaffold/commands.js';

interface Parsed<T> {
  flags?: T;
  /** What commander printed to stderr (its error message). */
  stderr: string;
}

/** Parses `args` with the command `define` builds (`create` gets `api` first); never exits the process. */
async function parse<T>(define: (action: (f: T) => Promise<void>) => Command, args: string[]): Promise<Parsed<T>> {
  const out: Parsed<T> = { stderr: '' };
  const cmd = define((f) => {
    out.flags = f;
    return Promise.resolve();
  });
  for (const c of [cmd, ...cmd.commands])
    c.exitOverride().configureOutput({ writeErr: (s) => (out.stderr += s), writeOut: () => undefined });
  await cmd.parseAsync(cmd.name() === 'create' ? ['api', ...args] : args, { from: 'user' }).catch(() => undefined);
  return out;
}

const parseInit = (args: string[]): Promise<Parsed<InitFlags>> => parse(defineInitCommand, args);
const parseCreateApi = (args: string[]): Promise<Parsed<CreateApiFlags>> => parse(defineCreateCommand, args);

describe('--plugins, as operator-sdk users type it', () => {
  it.each([
    'helm',
    'helm.sdk.operatorframework.io/v1',
    'helm/v1',
    'helm,manifests.sdk.operatorframework.io/v2,scorecard.sdk.operatorframework.io/v2',
  ])('init accepts --plugins=%s and scaffolds as without it', async (plugins) => {
    const r = await parseInit([`--plugins=${plugins}`, '--domain', 'aiops.org']);
    expect(r.stderr).toBe('');
    expect(r.flags).toMatchObject({ domain: 'aiops.org' });
  });

  it('create api accepts --plugins=helm', async () => {
    const r = await parseCreateApi(['--plugins', 'helm', '--group', 'web', '--version', 'v1', '--kind', 'Nginx']);
    expect(r.stderr).toBe('');
    expect(r.flags).toMatchObject({ group: 'web', version: 'v1', kind: 'Nginx' });
  });

  it.each(['go/v4', 'ansible', 'helm,go.kubebuilder.io/v4'])('refuses --plugins=%s by name, saying what is available', async (plugins) => {
    const r = await parseInit([`--plugins=${plugins}`, '--domain', 'aiops.org']);
    expect(r.flags).toBeUndefined();
    const foreign = plugins
      .split(',')
      .filter((p) => p !== 'helm')
      .join(', ');
    expect(r.stderr).toContain(`plugin ${foreign} is not available: helm-operator scaffolds Helm-based operators only`);
    expect(r.stderr).toContain('use --plugins=helm or leave --plugins out');
  });

  it('refuses an empty --plugins', async () => {
    const r = await parseInit(['--plugins=', '--domain', 'aiops.org']);
    expect(r.flags).toBeUndefined();
    expect(r.stderr).toContain('no plugin named');
  });
});
