/** What a bundle check reports: validate.ts and the checks it runs (deprecated-apis.ts) share it. */
export type Check =
  'format' | 'objects' | 'bundle' | 'csv' | 'crd' | 'operatorhub' | 'capabilities' | 'good-practices' | 'alpha-deprecated-apis';
export interface Finding {
  readonly level: 'error' | 'warning';
  readonly check: Check;
  /** Relative to the bundle directory. */
  readonly file: string;
  /** Dotted field path inside the file, when the finding is about a field. */
  readonly path?: string;
  readonly message: string;
}
