/**
 * The `openAPIV3Schema` pieces of a scaffolded CRD: `spec` typed from the chart's
 * values.schema.json, or inferred from its values.yaml, or left open as operator-sdk does; and
 * `status` as this operator writes it. Pure: no I/O, never throws on odd input (it warns).
 * See docs/adr/0013-typed-crd-from-values-schema.md.
 */
import { isPlainObject } from '../util/plain-object.js';
import { PRESERVE, openSchema, type OpenApiSchema } from './openapi.js';
import { convertValuesSchema, type SchemaWarning } from './values-schema.js';

export type { JsonValue, OpenApiSchema, OpenApiType } from './openapi.js';
export type { SchemaWarning } from './values-schema.js';

export interface SchemaConversion {
  schema: OpenApiSchema;
  warnings: SchemaWarning[];
}

export interface ValuesSchemaOptions {
  /**
   * The chart's parsed values.yaml. helm merges the CR's spec over it before validating, so with
   * it a `required` key that values.yaml sets is not required of the CR, and a schema `default`
   * that disagrees with values.yaml is dropped (helm uses values.yaml's). Without it, `required`
   * is only kept under lists and maps, where nothing is merged.
   */
  readonly values?: unknown;
}

/** kubectl's client-side apply keeps the object in an annotation limited to 256 KiB. */
const CLIENT_SIDE_APPLY_LIMIT = 256 * 1024;

/** operator-sdk's spec: any object. */
export function openSpecSchema(): OpenApiSchema {
  return { type: 'object', [PRESERVE]: true };
}

/** Pure: a structural schema for `spec` from a chart's values.schema.json, with what it could not express. */
export function specSchemaFromValuesSchema(valuesSchema: unknown, options: ValuesSchemaOptions = {}): SchemaConversion {
  const warnings: SchemaWarning[] = [];
  const merge = options.values === undefined ? 'unknown' : { values: options.values };
  let schema = convertValuesSchema(valuesSchema, merge, warnings);
  if (schema.type !== 'object') {
    if (schema.type !== undefined || schema['x-kubernetes-int-or-string'] === true) {
      warnings.push({ path: '.spec', message: 'the values schema does not describe an object (helm values are a map): spec left open' });
    }
    schema = { ...(schema.description === undefined ? {} : { description: schema.description }), ...openSpecSchema() };
  }
  // spec itself is never null and needs no default: an absent spec is helm's empty values.
  delete schema.nullable;
  delete schema.default;
  const size = JSON.stringify(schema).length;
  if (size > CLIENT_SIDE_APPLY_LIMIT) {
    warnings.push({
      path: '.spec',
      message: `the schema is ${Math.round(size / 1024)} KiB: apply the CRD with kubectl apply --server-side (client-side apply stores it in a 256 KiB annotation)`,
    });
  }
  return { schema, warnings };
}

/**
 * Pure: a permissive schema for `spec` inferred from the chart's values.yaml, for charts without
 * values.schema.json. It types what values.yaml shows and rejects little else: objects stay open
 * (charts read keys values.yaml does not list), empty maps and nulls accept anything, nothing is
 * required, no enum or default is invented.
 */
export function specSchemaFromValues(values: unknown): SchemaConversion {
  const warnings: SchemaWarning[] = [];
  if (values === undefined || values === null) return { schema: openSpecSchema(), warnings };
  if (!isPlainObject(values)) {
    warnings.push({ path: '.spec', message: 'values.yaml is not a map: spec left open' });
    return { schema: openSpecSchema(), warnings };
  }
  return { schema: inferObject(values, true), warnings };
}

/** Parent keys whose maps hold the user's own keys (labels, annotations, selectors, env). */
const USER_KEYED = /(labels|annotations|selector|nodeselector|env|environment|extraenv|config|data|secrets?|parameters|args)$/i;

/**
 * `merged`: helm merges the CR's spec into these values (not so in list items), so a user's null
 * deletes a value and must not be pruned: such fields are nullable.
 */
function inferObject(values: Record<string, unknown>, merged: boolean): OpenApiSchema {
  const properties = Object.fromEntries(
    Object.entries(values).map(([key, value]) => {
      const schema = infer(value, key, merged);
      return [key, merged && value !== null ? { ...schema, nullable: true } : schema];
    }),
  );
  return { type: 'object', properties, [PRESERVE]: true };
}

function infer(value: unknown, key: string, merged: boolean): OpenApiSchema {
  if (value === null || value === undefined) return openSchema();
  if (Array.isArray(value)) return { type: 'array', items: inferItems(value) };
  if (isPlainObject(value)) {
    // {} is a placeholder to fill (resources, nodeSelector); a map of user keys is data, not shape.
    const userKeys = USER_KEYED.test(key) || Object.keys(value).some((k) => /[./]/.test(k));
    if (Object.keys(value).length === 0 || userKeys) return { type: 'object', [PRESERVE]: true };
    return inferObject(value, merged);
  }
  return inferScalar(value);
}

function inferScalar(value: unknown): OpenApiSchema {
  if (typeof value === 'boolean') return { type: 'boolean' };
  if (typeof value === 'number') return { type: Number.isInteger(value) ? 'integer' : 'number' };
  // "" is a placeholder (nodePort: "", tag: ""): integers are fine there; floats are not (tag 1.10 would be 1.1).
  if (value === '') return { 'x-kubernetes-int-or-string': true };
  return typeof value === 'string' ? { type: 'string' } : openSchema();
}

/** Items of a list: what every element agrees on, else anything. */
function inferItems(list: unknown[]): OpenApiSchema {
  if (list.length === 0) return openSchema();
  const schemas = list.map((item) => infer(item, '', false));
  return schemas.reduce(agree);
}

function agree(a: OpenApiSchema, b: OpenApiSchema): OpenApiSchema {
  const types = new Set([a.type, b.type]);
  if (types.size === 2 && types.has('integer') && types.has('number')) return { type: 'number' };
  if (a.type !== b.type || a['x-kubernetes-int-or-string'] !== b['x-kubernetes-int-or-string']) return openSchema();
  if (a.type === 'object') return agreeObjects(a.properties, b.properties);
  if (a.type === 'array' && a.items !== undefined && b.items !== undefined) return { type: 'array', items: agree(a.items, b.items) };
  return a;
}

function agreeObjects(a: Record<string, OpenApiSchema> | undefined, b: Record<string, OpenApiSchema> | undefined): OpenApiSchema {
  if (a === undefined || b === undefined) return { type: 'object', [PRESERVE]: true };
  const properties = new Map(Object.entries(a));
  for (const [key, schema] of Object.entries(b)) {
    const mine = properties.get(key);
    properties.set(key, mine === undefined ? schema : agree(mine, schema));
  }
  return { type: 'object', properties: Object.fromEntries(properties), [PRESERVE]: true };
}

const str = (description: string): OpenApiSchema => ({ type: 'string', description });
/** What drift repair's records in status are counted for: a deployed revision and spec generation. */
const countedAt = (what: string): Record<string, OpenApiSchema> => ({
  revision: { type: 'integer', description: `The deployed revision the ${what} were counted at.` },
  generation: { type: 'integer', description: `The metadata.generation of the CR the ${what} were counted at.` },
});

/**
 * The status this operator writes (src/reconciler/status/status.ts), typed so `kubectl explain` and
 * printer columns see it. Open at the top for forward compatibility: a newer operator writing a
 * field this CRD does not list must not have it pruned (a CRD upgrade lags the operator's).
 */
export function statusSchema(): OpenApiSchema {
  return {
    description: 'The observed state of the release, written by the operator.',
    type: 'object',
    [PRESERVE]: true,
    properties: {
      observedGeneration: { type: 'integer', format: 'int64', description: 'The generation of the spec last reconciled.' },
      conditions: {
        description: 'Initialized, Deployed, ReleaseFailed, Irreconcilable, Ready, Paused, Stalled, Drifted.',
        type: 'array',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
        items: {
          type: 'object',
          required: ['type', 'status'],
          properties: {
            type: str('The condition type, e.g. Deployed.'),
            status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
            reason: str("A CamelCase reason, e.g. operator-sdk's InstallSuccessful or UpgradeError."),
            message: str('A human-readable message: the chart NOTES or the error.'),
            lastTransitionTime: { type: 'string', format: 'date-time', description: 'When the status last changed.' },
            observedGeneration: { type: 'integer', format: 'int64' },
          },
        },
      },
      deployedRelease: {
        description: 'The helm release last deployed.',
        type: 'object',
        properties: {
          name: str('The release name (the CR name).'),
          namespace: str('The release namespace (the CR namespace).'),
          revision: { type: 'integer', description: 'The helm revision.' },
          chart: str('The chart name.'),
          chartVersion: str('The chart version.'),
          appVersion: str("The chart's appVersion."),
          manifest: str("The rendered manifest (operator-sdk's field; this operator does not write it)."),
        },
      },
      inventory: {
        description: 'The objects the release created.',
        type: 'array',
        items: {
          type: 'object',
          properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, namespace: { type: 'string' }, name: { type: 'string' } },
        },
      },
      failedAttempts: {
        description: 'Consecutive failed installs or upgrades of one desired state; retries stop after 5.',
        type: 'object',
        properties: {
          fingerprint: str('The desired state (chart and values) that failed.'),
          count: { type: 'integer' },
        },
      },
      driftRepairFailures: {
        description:
          'Consecutive reconciles whose drift repair the API server refused, for one deployed revision and spec generation; repair stops after 5 until an upgrade or a spec change.',
        type: 'object',
        properties: {
          ...countedAt('failures'),
          count: { type: 'integer' },
        },
      },
      rollout: {
        description:
          'Which fleet revision (chart contents and operator-level values) the deployed release was made from, and the last move to one (docs/rollouts.md).',
        type: 'object',
        properties: {
          fleetRevision: str('The fleet revision of the deployed release.'),
          chartDigest: str("The digest of the chart's files the deployed release was made from."),
          attempt: {
            type: 'object',
            properties: {
              fleetRevision: str('The fleet revision last moved to.'),
              at: { type: 'string', format: 'date-time' },
              failure: str('Why it failed; absent when it did not.'),
              approvedPlan: {
                description:
                  "The plan approved for this move (docs/plans.md): the rollout's later waves take the fleet revision without their own approval when their plans' risks are among these.",
                type: 'object',
                properties: {
                  digest: str('The digest of the approved plan.'),
                  risks: { type: 'array', maxItems: 8, items: { type: 'string' } },
                },
              },
            },
          },
          seal: str(
            "The operator's seal over these fields and the Ready condition: the rollout reads no status it did not write (docs/adr/0101).",
          ),
        },
      },
      driftFights: {
        description:
          'Fields drift repair restored after another field manager wrote them; one restored 3 times within 10 minutes and written again is a fight (conflict: true) and no longer restored, until an upgrade, a spec change or a change of the drift ignore rules.',
        type: 'object',
        properties: {
          ...countedAt('restores'),
          rules: str('The fingerprint of the drift ignore rules in force.'),
          fields: {
            type: 'array',
            maxItems: 16,
            items: {
              type: 'object',
              properties: {
                kind: { type: 'string' },
                namespace: { type: 'string' },
                name: { type: 'string' },
                path: str('The field, as an RFC 6901 JSON pointer.'),
                manager: str('The other field manager that wrote it before each restore.'),
                restores: { type: 'integer' },
                since: str('When the first counted restore was made.'),
                conflict: { type: 'boolean', description: 'A fight: the field is no longer restored.' },
              },
            },
          },
        },
      },
      plan: {
        description:
          "The last upgrade plan's summary (docs/plans.md): what the upgrade would create, change and delete, its risks, and the digest an approval names; the whole plan is in the ConfigMap named here.",
        type: 'object',
        properties: {
          digest: str('sha256:<hex> of the plan: what an approval names.'),
          generation: { type: 'integer', format: 'int64', description: 'The metadata.generation of the CR the plan was made for.' },
          fingerprint: str('The desired state (chart and values) the plan was made from.'),
          fromRevision: { type: 'integer', description: 'The deployed revision the plan starts from.' },
          chartVersion: str('The chart version the plan upgrades to.'),
          counts: {
            type: 'object',
            properties: Object.fromEntries(
              ['create', 'change', 'delete', 'refuse', 'conflicts', 'hooks', 'crds'].map((k) => [k, { type: 'integer' }]),
            ),
          },
          risks: { type: 'array', items: { type: 'string', enum: ['delete', 'recreate', 'conflict', 'crd', 'volumeTemplates'] } },
          state: { type: 'string', enum: ['AwaitingApproval', 'Applied'] },
          configMap: str('The ConfigMap in the CR namespace that holds the whole plan.'),
        },
      },
    },
  };
}
