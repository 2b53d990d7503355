/**
 * `create api --rbac`: what the generated role grants for kinds a chart renders only with other
 * values than its defaults. Its own module: the CLI reads it at start-up without loading the
 * scaffolder.
 */
export const RBAC_MODES = ['default-values', 'all-values'] as const;
export type RbacMode = (typeof RBAC_MODES)[number];
