/**
 * Why a helm execution failed, as far as its stderr tells. Callers branch on this (retry, report,
 * give up), never on helm's message text.
 */
export type HelmErrorReason =
  | 'ReleaseNotFound'
  | 'AnotherOperationInProgress'
  | 'ValuesSchemaInvalid'
  | 'ChartInvalid'
  | 'RenderFailed'
  | 'InvalidReleaseName'
  /** The revision does not fit in helm's storage: one Secret (or ConfigMap), at most 1 MiB. */
  | 'ReleaseTooLarge'
  | 'ResourceConflict'
  /** The helm gateway refused a request: the release would reach outside what its watch confines it to. */
  | 'ConfinementViolation'
  | 'KubernetesAPIError'
  | 'Timeout'
  | 'Canceled'
  /** No usable helm: the binary is missing or not executable, or its version is unsupported. */
  | 'HelmNotFound'
  | 'Unknown';

/** What the process runner knew about the failure besides stderr. */
export interface HelmErrorFlags {
  /** Our own execution deadline fired (helm got SIGTERM). */
  readonly timedOut?: boolean;
  /** The caller's AbortSignal fired. */
  readonly canceled?: boolean;
  /** The binary could not be started at all (ENOENT, EACCES). */
  readonly spawnFailed?: boolean;
}

export interface HelmErrorInit extends HelmErrorFlags {
  readonly reason: HelmErrorReason;
  readonly verb: string;
  readonly summary: string;
  readonly exitCode?: number;
}

/**
 * A failed helm execution. It carries no stdout, stderr or values (only `summary`, a capped excerpt
 * of helm's own error line) and no `cause`: execa's error holds the full output, and pino's error
 * serializer would log every enumerable field of a cause chain.
 */
export class HelmError extends Error {
  override readonly name = 'HelmError';
  readonly reason: HelmErrorReason;
  /** The helm subcommand: `install`, `upgrade`, `status`, `get-metadata`, … */
  readonly verb: string;
  readonly exitCode?: number;
  readonly timedOut: boolean;
  readonly canceled: boolean;
  /** Short, single-line, human text fit for a status condition message. */
  readonly summary: string;

  constructor(init: HelmErrorInit) {
    super(`helm ${init.verb} failed (${init.reason}): ${init.summary}`);
    this.reason = init.reason;
    this.verb = init.verb;
    if (init.exitCode !== undefined) this.exitCode = init.exitCode;
    this.timedOut = init.timedOut === true;
    this.canceled = init.canceled === true;
    this.summary = init.summary;
  }
}

export const isHelmError = (err: unknown, reason?: HelmErrorReason): err is HelmError =>
  err instanceof HelmError && (reason === undefined || err.reason === reason);

/** helm install's refusal when the release name has any history (helm 3: "re-use", helm 4: "reuse"). */
export const NAME_IN_USE = /cannot re-?use a name that is still in use/i;
/**
 * A field another field manager holds: server-side apply's refusal, or the operator's own check
 * before helm applies (`conflictPolicy: fail`, src/reconciler/objects/upgrade-fields.ts).
 */
export const FIELD_CONFLICT = /Apply failed with \d+ conflicts?|conflict occurred while applying|field conflicts? under conflictPolicy/i;

/**
 * stderr patterns, first match wins, so the order matters: a bad Chart.yaml also says "error
 * converting YAML to JSON" (ChartInvalid before RenderFailed), a failed create may end in "context
 * deadline exceeded" (Timeout before KubernetesAPIError). Texts are helm v3.13+ and v4's; the unit
 * tests hold real samples.
 */
const PATTERNS: ReadonlyArray<readonly [HelmErrorReason, RegExp]> = [
  ['AnotherOperationInProgress', /another operation \(install\/upgrade\/rollback\) is in progress/i],
  ['ReleaseNotFound', /release: not found|has no deployed releases/i],
  // Before KubernetesAPIError: helm words it as a failed create of its storage object.
  ['ReleaseTooLarge', /"sh\.helm\.release\.v1\.[^"]*" is invalid: .{0,80}Too long/i],
  ['InvalidReleaseName', /invalid release name|release name .{0,80}exceeds max length/i],
  ['ValuesSchemaInvalid', /values don't meet the specifications of the schema/i],
  [
    'ChartInvalid',
    new RegExp(
      [
        'path ".*" not found',
        'cannot load Chart\\.yaml',
        'Chart\\.yaml file is missing',
        'no Chart\\.yaml exists',
        'validation: chart\\.',
        'chart\\.metadata\\.\\w+ is required',
        'missing in charts/ directory',
        'chart requires kubeVersion',
        'apiVersion .{0,40} is not valid',
        'does not appear to be a gzipped archive',
        'is not a valid chart',
        'chart metadata \\(Chart\\.yaml\\) missing',
      ].join('|'),
      'i',
    ),
  ],
  // First: whatever helm was doing when the gateway refused it, the refusal is the cause.
  ['ConfinementViolation', /refused by the helm gateway/],
  // Before RenderFailed: a template's lookup() that the API server refused or never answered is
  // the cluster failing (RBAC granted later, an API server back), not the chart: retried.
  [
    'KubernetesAPIError',
    /error calling lookup: [^\n]*(?:is forbidden|Unauthorized|connection refused|i\/o timeout|no such host|TLS handshake|ServiceUnavailable)/i,
  ],
  [
    'RenderFailed',
    /execution error at|parse error at|YAML parse error|error converting YAML to JSON|template: |unable to build kubernetes objects from release manifest|error validating data|error validating ""/i,
  ],
  [
    'ResourceConflict',
    new RegExp(`exists and cannot be imported into the current release|${NAME_IN_USE.source}|${FIELD_CONFLICT.source}|already exists`, 'i'),
  ],
  ['Timeout', /context deadline exceeded|timed out waiting for the condition/i],
  ['Canceled', /context canceled|has been cancell?ed/i],
  [
    'KubernetesAPIError',
    new RegExp(
      [
        'kubernetes cluster unreachable',
        'could not get server version',
        'connection refused',
        'no such host',
        'i/o timeout',
        'TLS handshake',
        'is forbidden',
        'Unauthorized',
        'provide credentials',
        'the server could not find the requested resource',
        'Internal error occurred',
        'etcdserver',
        'the object has been modified',
        'the server was unable',
        'ServiceUnavailable',
        'too many requests',
        'failed to (?:create|update|patch|delete|get|list|replace)',
        'context ".*" does not exist',
        'no configuration has been provided',
      ].join('|'),
      'i',
    ),
  ],
];

/**
 * Maps a failed helm execution to a {@link HelmErrorReason}. Pure. The runner's flags win over the
 * text: after our SIGTERM helm prints whatever its cancelled context produced. Helm exits 1 for
 * every error, so `exitCode` only matters when there is no text to go on.
 */
export function classifyHelmError(stderr: string, exitCode: number | undefined, flags: HelmErrorFlags = {}): HelmErrorReason {
  if (flags.canceled === true) return 'Canceled';
  if (flags.timedOut === true) return 'Timeout';
  if (flags.spawnFailed === true || exitCode === 127) return 'HelmNotFound';
  const text = errorText(stderr);
  for (const [reason, pattern] of PATTERNS) {
    if (pattern.test(text)) return reason;
  }
  return 'Unknown';
}

/** Lines that are never the error: v4's slog records, flag deprecations, hints, warnings. */
const NOISE = [/^level=\w+ /, /^time=\S+ level=/, /^Flag --\S+ has been deprecated/, /^Use --debug flag/, /^WARNING: /i];

const isNoise = (line: string): boolean => line.trim() === '' || NOISE.some((re) => re.test(line));

/**
 * The part of stderr that states the error: from helm's first `Error: ` line to the end, minus
 * noise; without such a line, every non-noise line.
 */
function errorText(stderr: string): string {
  const lines = stderr.split(/\r?\n/);
  const start = lines.findIndex((l) => l.startsWith('Error: '));
  return (start >= 0 ? lines.slice(start) : lines).filter((l) => !isNoise(l)).join('\n');
}

export const SUMMARY_MAX_CHARS = 1000;

/**
 * What helm's words mean, where they do not say it: a release too large for storage surfaces as
 * the API server refusing an object the user never wrote ("Secret sh.helm.release.v1.… is
 * invalid: data: Too long"), so the summary leads with the limit and what counts towards it.
 */
const EXPLANATIONS: Partial<Readonly<Record<HelmErrorReason, string>>> = {
  ReleaseTooLarge:
    "release too large for helm's storage: helm keeps each revision (chart, values and rendered manifest, gzipped) " +
    'in one Secret, and Kubernetes limits a Secret to 1 MiB; make the chart or its values smaller',
};

/** Pure: the summary of a failure of `reason` whose helm text is `text`, led by its explanation if it has one. */
export function explainFailure(reason: HelmErrorReason, text: string): string {
  const explanation = EXPLANATIONS[reason];
  if (explanation === undefined) return text;
  return text === '' ? explanation : `${explanation} (helm: ${text})`;
}

/**
 * A short single line from helm's stderr: the error statement with `Error: ` and the
 * `INSTALLATION FAILED: ` / `UPGRADE FAILED: ` style prefixes removed, whitespace collapsed, capped
 * at `max` characters. Empty when stderr holds nothing but noise.
 */
export function summarizeStderr(stderr: string, max = SUMMARY_MAX_CHARS): string {
  const stated = errorText(stderr)
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^Error:\s*/, '')
    .replace(/^(?:[A-Z]+ )*FAILED:\s*/, '');
  const cause = UNINSTALL_CAUSE.exec(stderr)?.[1];
  const text = cause === undefined ? stated : `${stated}: ${cause.replace(/\\(.)/g, '$1')}`;
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** helm 4's debug line with the reason an uninstall failed (its `Error:` line omits it). */
const UNINSTALL_CAUSE = /msg="uninstall: Failed to delete release" error="((?:[^"\\]|\\.)*)"/;
