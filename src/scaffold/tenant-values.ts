/**
 * The values through which a CR author writes templates or whole objects (docs/adr/0040): a value
 * rendered with `tpl` (directly, or through a `*.tplvalues.render` helper as bitnami's common library
 * has), and `extraDeploy`-style lists. Without impersonation they lend the operator's rights to
 * whoever may create a CR; `create api` says so where the chart's author looks. Pure: template texts
 * and values in, findings out. A heuristic over the template text, not a parse: it names what it
 * finds, it does not prove the rest safe.
 */

export interface TemplateText {
  /** Relative to the chart, e.g. `templates/extra-list.yaml`. */
  readonly path: string;
  readonly text: string;
}

export interface TenantValue {
  /** The value's path, `[]` marking each item of a list (`extraDeploy[]`). */
  readonly path: string;
  /** `tpl`: rendered as a template; `objects`: a list of objects by its name. */
  readonly how: readonly ('tpl' | 'objects')[];
  /** Templates that render it with tpl. */
  readonly templates: readonly string[];
}

/** Names charts give to lists of extra objects deployed with the release. */
const OBJECT_LIST = /^extra(?:Deploy|Objects|Manifests|Resources|Templates|List)$/i;

/** A `range` or `with` block: the values path it iterates or enters, and the variable it binds. */
interface Frame {
  readonly path?: string;
  readonly variable?: string;
}

const ACTION = /\{\{-?([\s\S]*?)-?\}\}/g;
const VALUES_PATH = /^\$?\.Values\.([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)/;
/** The first operand of tpl or of the helper's `"value"`, after an optional `(`, `toYaml`/`toJson`/`toString`, `(`. */
const OPERAND_PREFIX = /^\(?\s*(?:(?:toYaml|toJson|toString|toPrettyJson)\s+)?\(?\s*/;
const TPL_CALL = /(?:^|[\s(|])tpl\s+/g;
const HELPER_CALL = /include\s+"[\w.-]*tplvalues\.render"\s*\(\s*dict\b([\s\S]*)/;

/** The values path an operand names, through the enclosing range/with blocks for `.` and `$var`. */
function operandPath(text: string, frames: readonly Frame[]): string | undefined {
  const operand = text.replace(OPERAND_PREFIX, '');
  const direct = VALUES_PATH.exec(operand);
  if (direct?.[1] !== undefined) return direct[1];
  const variable = /^(\$[A-Za-z_]\w*)(?![\w.])/.exec(operand)?.[1];
  if (variable !== undefined) return [...frames].reverse().find((f) => f.variable === variable)?.path;
  const relative = /^\.((?:[A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)*)?(?![\w])/.exec(operand);
  if (relative === null) return undefined;
  const dot = [...frames].reverse().find((f) => f.path !== undefined)?.path;
  if (dot === undefined) return undefined;
  return relative[1] === undefined ? dot : `${dot}.${relative[1]}`;
}

/** The frame a `range`/`with` action opens. */
function frameOf(action: string, keyword: 'range' | 'with', frames: readonly Frame[]): Frame {
  const rest = action.slice(keyword.length).trim();
  const bind = /^(?:\$[A-Za-z_]\w*\s*,\s*)?(\$[A-Za-z_]\w*)\s*:?=\s*/.exec(rest);
  const source = bind === null ? rest : rest.slice(bind[0].length);
  const path = operandPath(source, frames);
  // A range enters each item of the list.
  const entered = path === undefined ? undefined : keyword === 'range' ? `${path}[]` : path;
  return { ...(entered === undefined ? {} : { path: entered }), ...(bind?.[1] === undefined ? {} : { variable: bind[1] }) };
}

/** The values paths one action renders with tpl (`tpl X`, or a `*.tplvalues.render` helper's "value"). */
function tplCalls(action: string, frames: readonly Frame[]): string[] {
  const operands = [...action.matchAll(TPL_CALL)].map((call) => action.slice(call.index + call[0].length));
  const helper = HELPER_CALL.exec(action)?.[1];
  const value = helper === undefined ? undefined : /"value"\s+([\s\S]*)/.exec(helper)?.[1];
  if (value !== undefined) operands.push(value);
  return operands.map((o) => operandPath(o, frames)).filter((p): p is string => p !== undefined);
}

/** Values rendered with tpl in one template: their paths. */
export function tplValuesIn(text: string): string[] {
  const frames: Frame[] = [];
  const found: string[] = [];
  for (const m of text.matchAll(ACTION)) {
    const action = (m[1] ?? '').trim();
    if (action.startsWith('/*')) continue;
    const keyword = /^(range|with|if|define|block|end)\b/.exec(action)?.[1];
    if (keyword === 'end') frames.pop();
    else if (keyword === 'range' || keyword === 'with') frames.push(frameOf(action, keyword, frames));
    else {
      if (keyword !== undefined) frames.push({});
      found.push(...tplCalls(action, frames));
    }
  }
  return found;
}

/** Paths of `extraDeploy`-style lists in the chart's values. */
function objectLists(values: unknown, prefix = ''): string[] {
  if (typeof values !== 'object' || values === null || Array.isArray(values)) return [];
  return Object.entries(values as Record<string, unknown>).flatMap(([key, v]) => {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    return OBJECT_LIST.test(key) && (Array.isArray(v) || v === null || typeof v === 'string') ? [path] : objectLists(v, path);
  });
}

/** Every value a CR author can write templates or objects through, sorted by path. */
export function tenantValues(templates: readonly TemplateText[], values: unknown): TenantValue[] {
  const byPath = new Map<string, { how: Set<'tpl' | 'objects'>; templates: Set<string> }>();
  const entry = (path: string): { how: Set<'tpl' | 'objects'>; templates: Set<string> } => {
    let e = byPath.get(path);
    if (e === undefined) byPath.set(path, (e = { how: new Set(), templates: new Set() }));
    return e;
  };
  for (const t of templates) {
    for (const path of tplValuesIn(t.text)) {
      // `extraDeploy[]` (each item) is reported as the list it belongs to.
      const e = entry(path.replace(/\[\]$/, ''));
      e.how.add('tpl');
      e.templates.add(t.path);
    }
  }
  for (const path of objectLists(values)) entry(path).how.add('objects');
  return [...byPath]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([path, e]) => ({ path, how: [...e.how].sort().reverse(), templates: [...e.templates].sort() }));
}

/** One line per value: `extraDeploy: a list of objects, rendered with tpl (templates/extra-list.yaml)`. */
export function describeTenantValue(v: TenantValue): string {
  const parts = [
    v.how.includes('objects') ? 'a list of objects' : undefined,
    v.how.includes('tpl') ? `rendered with tpl (${v.templates.join(', ')})` : undefined,
  ];
  return `${v.path}: ${parts.filter((p) => p !== undefined).join(', ')}`;
}

/**
 * What `create api` says about a chart, as sentences for the CLI and the README: the values, what
 * the operator's generated rules then lend a CR author, and the remedy. `kinds`: the resources the
 * generated ClusterRole grants for this chart.
 */
/**
 * `kinds`: the resources the generated role grants; `allowKinds`: the watch's (empty when none is
 * written), which the helm gateway enforces on every object helm writes whatever the RBAC grants.
 */
export function tenancySentences(
  chartName: string,
  found: readonly TenantValue[],
  kinds: readonly string[],
  allowKinds: readonly string[] = [],
): string[] {
  const granted = [...new Set([...kinds, 'secrets'])].join(', ');
  const values =
    found.length === 0
      ? `no value of ${chartName} is rendered with tpl or is an extraDeploy-style list; CR authors still choose every value it has`
      : `CR authors can write templates or whole objects through ${found.length} value(s) of ${chartName}: ${found.map(describeTenantValue).join('; ')}`;
  const creates = found.length === 0 ? 'can make the chart create' : 'that sets them creates';
  const what =
    allowKinds.length === 0
      ? `what config/rbac/role.yaml grants (${granted})`
      : `objects of the kinds the watch's allowKinds lists (${allowKinds.join(', ')}; the helm gateway refuses any other)`;
  return [
    values,
    `acting as the operator (no ServiceAccount), a CR ${creates} ${what} in every namespace, and reads through lookup() whatever the operator may read, every Secret of the cluster included`,
    'the boundary is impersonation: run the operator with --default-service-account <name>, or set serviceAccountName on this watch, and the API server bounds each CR by that ServiceAccount of its namespace',
  ];
}
