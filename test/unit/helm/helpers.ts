import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** Directory of a hack/tools.sh component, without building it. */
function toolDir(component: string): string | undefined {
  try {
    return execFileSync('bash', [path.join(repoRoot, 'hack/tools.sh'), 'path', component], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

function existing(p: string | undefined): string | undefined {
  return p !== undefined && existsSync(p) ? p : undefined;
}

const dir4 = toolDir('helm');
const dir3 = toolDir('helm3');

/** The real helm binaries that are present (HELM4_BIN / HELM3_BIN override the tool cache). */
export const HELM_BINARIES: ReadonlyArray<{ readonly major: 3 | 4; readonly bin: string }> = [
  { major: 4 as const, bin: existing(process.env.HELM4_BIN ?? (dir4 && path.join(dir4, 'helm/helm'))) },
  { major: 3 as const, bin: existing(process.env.HELM3_BIN ?? (dir3 && path.join(dir3, 'helm'))) },
].flatMap((b) => (b.bin === undefined ? [] : [{ major: b.major, bin: b.bin }]));

/**
 * A one-ConfigMap chart with NOTES, a values schema (`greeting` must be a string) and a
 * `fail: true` switch that makes rendering fail.
 */
export async function writeTinyChart(dir: string, name = 'tiny', version = '0.1.0'): Promise<string> {
  const chart = path.join(dir, name);
  await mkdir(path.join(chart, 'templates'), { recursive: true });
  await writeFile(path.join(chart, 'Chart.yaml'), `apiVersion: v2\nname: ${name}\nversion: ${version}\nappVersion: "1.0.0"\n`);
  await writeFile(path.join(chart, 'values.yaml'), 'greeting: hello\n');
  await writeFile(
    path.join(chart, 'values.schema.json'),
    JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { greeting: { type: 'string' } } }),
  );
  await writeFile(
    path.join(chart, 'templates', 'cm.yaml'),
    [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: {{ .Release.Name }}-cm',
      'data:',
      '  greeting: {{ .Values.greeting | quote }}',
      '  {{- if .Values.fail }}',
      '  x: {{ required "fail was requested" .Values.nothere }}',
      '  {{- end }}',
      '',
    ].join('\n'),
  );
  await writeFile(path.join(chart, 'templates', 'NOTES.txt'), 'Hello from {{ .Release.Name }}\n');
  return chart;
}

/**
 * A stand-in helm: answers `version` with $FAKE_HELM_VERSION (default v4.1.4), first writing its
 * environment to $FAKE_HELM_ENV_DUMP when set, and otherwise sleeps, replacing itself with `sleep`
 * so no grandchild holds the pipes open.
 */
export async function writeFakeHelm(dir: string): Promise<string> {
  const file = path.join(dir, 'fake-helm');
  const version = '[ -n "$FAKE_HELM_ENV_DUMP" ] && env > "$FAKE_HELM_ENV_DUMP"; echo "${FAKE_HELM_VERSION:-v4.1.4}"; exit 0';
  // FAKE_HELM_STARTED: a file created once a hanging verb runs, for tests to await instead of sleeping.
  const started = '[ -n "$FAKE_HELM_STARTED" ] && : > "$FAKE_HELM_STARTED"';
  // FAKE_HELM_SLOW_EXIT: like a helm that cleans up for a second after SIGTERM before it exits.
  const slowExit = 'if [ -n "$FAKE_HELM_SLOW_EXIT" ]; then trap \'sleep 1; exit 143\' TERM; while :; do sleep 0.1; done; fi';
  await writeFile(file, `#!/bin/sh\ncase "$1" in version) ${version};; esac\n${started}\n${slowExit}\nexec sleep 30\n`);
  await chmod(file, 0o755);
  return file;
}

/** A kubeconfig whose API server is a closed port: every cluster call fails fast. */
export async function writeUnreachableKubeconfig(dir: string): Promise<string> {
  const file = path.join(dir, 'unreachable.kubeconfig');
  await writeFile(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]',
      'contexts: [{name: c, context: {cluster: c, user: u}}]',
      'current-context: c',
      'users: [{name: u, user: {token: x}}]',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return file;
}

/** A fresh directory for each test (named `prefix…`), given to `use` before it and removed after it. */
export function workDirPerTest(prefix: string, use: (dir: string) => void): void {
  let dir: string | undefined;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), prefix));
    use(dir);
  });
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });
}
