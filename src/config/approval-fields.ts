/** The watch's plan approval keys (docs/adr/0083): `approval` and `approvedBy`, read like every other choice. */
import { APPROVAL_MODES, APPROVERS, type ApprovalMode, type Approvers } from './watch.js';
import { readChoice, type FieldNodes } from './watch-fields.js';
import { fail, type EntryContext } from './watches-problems.js';

/** Both keys, left out when absent (the defaults: `never`, `platform`) or wrong (reported at their line). */
export function readApproval(ctx: EntryContext, fields: FieldNodes): { approval?: ApprovalMode; approvedBy?: Approvers } {
  const approval = readChoice(ctx, fields, 'approval', {
    choices: APPROVAL_MODES,
    expected: `"never" (upgrades go ahead at once, the default), "risky" (an upgrade that deletes, recreates, meets a field conflict, changes a CRD or a volume template waits for an approval of its plan) or "always" (every upgrade waits)`,
  });
  const approvedBy = readChoice(ctx, fields, 'approvedBy', {
    choices: APPROVERS,
    expected: `"platform" (only a record in the operator's namespace approves: helm-operator plan approve, the default) or "cr" (the CR's own annotation helm-operator.io/approve-plan: whoever may edit the CR)`,
  });
  if (approvedBy !== undefined && (approval === undefined || approval === 'never'))
    fail(ctx, fields.approvedBy, 'approvedBy', 'has no effect without approval: risky or approval: always');
  return { ...(approval === undefined ? {} : { approval }), ...(approvedBy === undefined ? {} : { approvedBy }) };
}
