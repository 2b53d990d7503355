/** The watches.yaml keys that bound what a CR's release may do and who it acts as (docs/adr/0040). */
import { parseQualifiedKind } from '../util/group-kind.js';
import { isSeq } from 'yaml';
import type { Watch } from './watch.js';
import { readBoolean, readString, type FieldNodes } from './watch-fields.js';
import { fail, quote, type EntryContext } from './watches-problems.js';
import { DNS1123_SUBDOMAIN, DRY_RUN_OPTIONS, isServiceAccountName, KIND } from './watches-schema.js';
import { deref, describe, isEmpty, scalarValue } from './yaml-nodes.js';

/**
 * operator-sdk's `dryRunOption` chooses how its upgrade-detection dry run renders. This operator
 * decides upgrades by a fingerprint of the chart and values and renders nothing for that; its only
 * render is the `confineToNamespace` pre-flight, which `server` makes a server-side dry run.
 * Anywhere else `server` would be parsed and do nothing, so it is refused; `confine` is false only
 * when the entry says false or nothing (a malformed value is reported on its own).
 */
export function readDryRun(ctx: EntryContext, fields: FieldNodes, confine: boolean): 'client' | 'server' {
  const node = fields.dryRunOption;
  if (isEmpty(node)) return 'client';
  const value = scalarValue(node);
  if (value === 'server') {
    const confineNode = fields.confineToNamespace;
    if (!confine && (isEmpty(confineNode) || scalarValue(confineNode) === false)) {
      fail(
        ctx,
        node,
        'dryRunOption',
        'server has no effect without confineToNamespace: true: this operator decides upgrades by a fingerprint of the chart and values, not by a dry-run render, so the only dry run is the confineToNamespace pre-flight render; set confineToNamespace: true or remove dryRunOption',
      );
    }
    return 'server';
  }
  if (typeof value === 'string' && DRY_RUN_OPTIONS.includes(value)) return 'client';
  const hint = typeof value === 'string' ? DRY_RUN_OPTIONS.find((o) => o === value.toLowerCase()) : undefined;
  const suffix = hint === undefined ? '' : ` (did you mean ${quote(hint)}?)`;
  fail(ctx, node, 'dryRunOption', `expected one of "", "client", "none", "server", got ${describe(node)}${suffix}`);
  return 'client';
}

export function readTenancy(
  ctx: EntryContext,
  fields: FieldNodes,
): Pick<Watch, 'serviceAccountName' | 'confineToNamespace' | 'allowClusterScoped' | 'allowKinds'> {
  const sa = readString(ctx, fields, 'serviceAccountName', false);
  if (sa !== undefined && sa !== '' && !isServiceAccountName(sa)) {
    fail(
      ctx,
      fields.serviceAccountName,
      'serviceAccountName',
      `${quote(sa)} is not a ServiceAccount name: lower-case letters, digits, '-' and '.'`,
    );
  }
  const confine = readBoolean(ctx, fields, 'confineToNamespace', false);
  const allowed = readKindList(ctx, fields, 'allowClusterScoped');
  if (allowed.length > 0 && !confine) {
    fail(ctx, fields.allowClusterScoped, 'allowClusterScoped', 'has no effect without confineToNamespace: true');
  }
  const kinds = isEmpty(fields.allowKinds) ? undefined : readKindList(ctx, fields, 'allowKinds');
  const allowKindsNode = fields.allowKinds;
  if (isSeq(allowKindsNode) && allowKindsNode.items.length === 0)
    fail(
      ctx,
      allowKindsNode,
      'allowKinds',
      'an empty list would refuse every object of every release; list the kinds the chart renders, or remove the key',
    );
  return {
    ...(sa === undefined || sa === '' ? {} : { serviceAccountName: sa }),
    confineToNamespace: confine,
    allowClusterScoped: allowed,
    ...(kinds === undefined ? {} : { allowKinds: kinds }),
  };
}

/** `allowClusterScoped` or `allowKinds`: a list of `Kind` or `Kind.group`. */
function readKindList(ctx: EntryContext, fields: FieldNodes, field: 'allowClusterScoped' | 'allowKinds'): string[] {
  const node = fields[field];
  if (isEmpty(node)) return [];
  if (!isSeq(node)) {
    fail(ctx, node, field, `expected a list of kinds such as "ClusterRole.rbac.authorization.k8s.io", got ${describe(node)}`);
    return [];
  }
  const kinds: string[] = [];
  node.items.forEach((item, i) => {
    const itemNode = deref(ctx.pc.doc, item);
    const value = scalarValue(itemNode);
    const { kind, group } = parseQualifiedKind(typeof value === 'string' ? value : '');
    // `Kind.` names no group: only a kind with a dot has one to check.
    if (typeof value !== 'string' || !KIND.test(kind) || (value.includes('.') && !DNS1123_SUBDOMAIN.test(group))) {
      fail(ctx, itemNode, `${field}[${i}]`, `expected "Kind" (core group) or "Kind.group", got ${describe(itemNode)}`);
      return;
    }
    kinds.push(value);
  });
  return kinds;
}
