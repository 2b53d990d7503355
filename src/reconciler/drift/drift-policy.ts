/**
 * One drift repair pass's RepairPolicy: the ignore rules in force and the fight records of the
 * CR's status, consulted and updated as the pass goes (the decisions are drift-ignore.ts's and
 * drift-fight.ts's pure functions; this only keeps their state for one pass).
 */
import { formatPointer, parsePointer, type DriftIgnoreRule } from '../../config/drift-ignore-rules.js';
import type { FieldPath } from './drift.js';
import { fightsFor, heldPaths, judgeRewrites, unrestored, type FightKey, type FightObject } from './drift-fight.js';
import { ignoredFields, type RuleSubject } from './drift-ignore.js';
import { renderedBody, type InventoryEntry } from '../objects/inventory.js';
import type { DesiredObject, FieldRewrite, RepairPolicy } from '../objects/release-object-types.js';
import type { DriftFightField, DriftFights } from '../status/status.js';
import { isPlainObject } from '../../util/plain-object.js';

export class DriftRepairPolicy implements RepairPolicy {
  #fights: DriftFights;
  readonly #declared: DriftFightField[] = [];

  constructor(
    private readonly rules: readonly DriftIgnoreRule[],
    prior: DriftFights | undefined,
    key: FightKey,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.#fights = fightsFor(prior, key);
  }

  /** The records as the pass left them. */
  get fights(): DriftFights {
    return this.#fights;
  }

  /** The fights this pass found, each reported once. */
  get declared(): readonly DriftFightField[] {
    return this.#declared;
  }

  ignored(d: DesiredObject): readonly FieldPath[] {
    const byRules = this.rules.length === 0 ? [] : ignoredFields(this.rules, ruleSubject(d));
    return [...byRules, ...heldPaths(this.#fights, fightObject(d.entry)).flatMap(tokens)];
  }

  judge(entry: InventoryEntry, rewrites: readonly FieldRewrite[]): { hold: FieldPath[]; found: number; notRestored: () => void } {
    const found = rewrites.map((r) => ({ path: formatPointer(r.path), manager: r.manager }));
    const before = this.#fights;
    const object = fightObject(entry);
    const j = judgeRewrites(before, object, found, this.now());
    this.#fights = j.fights;
    this.#declared.push(...j.declared);
    const notRestored = (): void => {
      this.#fights = unrestored(
        this.#fights,
        before,
        object,
        found.map((f) => f.path),
      );
    };
    return { hold: j.hold.flatMap(tokens), found: j.declared.length, notRestored };
  }
}

function tokens(pointer: string): FieldPath[] {
  const parsed = parsePointer(pointer);
  return parsed.ok ? [parsed.tokens] : [];
}

const fightObject = (e: InventoryEntry): FightObject => ({ kind: e.kind, namespace: e.namespace, name: e.name });

/** The rendered object's labels are read (a parse of its manifest) only when a rule's selector asks. */
function ruleSubject(d: DesiredObject): RuleSubject {
  let labels: Readonly<Record<string, string>> | undefined;
  return {
    kind: d.entry.kind,
    name: d.entry.name,
    get labels(): Readonly<Record<string, string>> {
      if (labels === undefined) {
        const meta = renderedBody(d.rendered).metadata;
        const raw = isPlainObject(meta) && isPlainObject(meta.labels) ? meta.labels : {};
        labels = Object.fromEntries(Object.entries(raw).filter((e): e is [string, string] => typeof e[1] === 'string'));
      }
      return labels;
    },
  };
}
