/**
 * Per-CR series, so a dashboard or an alert can name the CR without kube-state-metrics (ADR 0080):
 *
 * - `helm_operator_cr_info{controller,namespace,name,chart,chart_version,fleet_revision}` 1
 * - `helm_operator_cr_release_revision{controller,namespace,name}` the deployed helm revision
 * - `helm_operator_cr_condition{controller,namespace,name,type,status}` 1, for Ready, Deployed,
 *   Drifted and ReleaseFailed as the CR's status last said (one series per type: the current status)
 * - `helm_operator_cr_last_success_timestamp_seconds{controller,namespace,name}` when a reconcile of
 *   the CR last ended without error (`time() - …` is the time since)
 * - `helm_operator_cr_series_dropped{controller}` CRs left out by the limit
 *
 * Bounded: at most `limit` CRs (across controllers) have series, 7 each at most; a CR past the limit
 * is counted, not exported, until a tracked CR is deleted. The revision is a value, not a label, so
 * an upgrade replaces no series. Everything is computed at scrape time from the last sample of each
 * CR: a deleted CR's series go with its {@link CrMetrics.forget}.
 */
import { Gauge, type Registry } from 'prom-client';

/** The condition types exported per CR. */
export const CR_CONDITION_TYPES = ['Ready', 'Deployed', 'Drifted', 'ReleaseFailed'] as const;

export interface CrSample {
  readonly chart?: string;
  readonly chartVersion?: string;
  readonly revision?: number;
  readonly fleetRevision?: string;
  /** Condition type → status, for the types of {@link CR_CONDITION_TYPES} the CR has. */
  readonly conditions: Readonly<Partial<Record<(typeof CR_CONDITION_TYPES)[number], string>>>;
  /** This reconcile ended without error. */
  readonly succeeded: boolean;
}

interface Tracked {
  readonly sample: CrSample;
  readonly lastSuccess?: number;
}

type CrLabels = 'controller' | 'namespace' | 'name';

export class CrMetrics {
  /** controller → `namespace/name` → last sample. */
  readonly #crs = new Map<string, Map<string, Tracked>>();
  /** controller → CRs reported but left out by the limit. */
  readonly #dropped = new Map<string, Set<string>>();
  #count = 0;

  constructor(
    registry: Registry,
    private readonly limit: number,
    private readonly now: () => number = Date.now,
  ) {
    if (limit <= 0) return;
    const registers = [registry];
    const each = (fn: (labels: Record<CrLabels, string>, t: Tracked) => void): void => {
      for (const [controller, crs] of this.#crs) {
        for (const [key, t] of crs) {
          const slash = key.indexOf('/');
          fn({ controller, namespace: key.slice(0, slash), name: key.slice(slash + 1) }, t);
        }
      }
    };
    new Gauge({
      name: 'helm_operator_cr_info',
      help: "A CR's helm release: its chart, chart version and fleet revision (value 1)",
      labelNames: ['controller', 'namespace', 'name', 'chart', 'chart_version', 'fleet_revision'],
      registers,
      collect(this: Gauge) {
        this.reset();
        each((l, t) => {
          this.set(
            { ...l, chart: t.sample.chart ?? '', chart_version: t.sample.chartVersion ?? '', fleet_revision: t.sample.fleetRevision ?? '' },
            1,
          );
        });
      },
    });
    new Gauge({
      name: 'helm_operator_cr_release_revision',
      help: "The helm revision of a CR's deployed release",
      labelNames: ['controller', 'namespace', 'name'],
      registers,
      collect(this: Gauge) {
        this.reset();
        each((l, t) => {
          if (t.sample.revision !== undefined) this.set(l, t.sample.revision);
        });
      },
    });
    new Gauge({
      name: 'helm_operator_cr_condition',
      help: "A CR's status conditions (Ready, Deployed, Drifted, ReleaseFailed) as its last reconcile wrote them: 1 for the current status",
      labelNames: ['controller', 'namespace', 'name', 'type', 'status'],
      registers,
      collect(this: Gauge) {
        this.reset();
        each((l, t) => {
          for (const type of CR_CONDITION_TYPES) {
            const status = t.sample.conditions[type];
            if (status !== undefined) this.set({ ...l, type, status }, 1);
          }
        });
      },
    });
    new Gauge({
      name: 'helm_operator_cr_last_success_timestamp_seconds',
      help: 'When a reconcile of the CR last ended without error (Unix seconds)',
      labelNames: ['controller', 'namespace', 'name'],
      registers,
      collect(this: Gauge) {
        this.reset();
        each((l, t) => {
          if (t.lastSuccess !== undefined) this.set(l, t.lastSuccess / 1000);
        });
      },
    });
    const dropped = this.#dropped;
    new Gauge({
      name: 'helm_operator_cr_series_dropped',
      help: 'CRs without per-CR series because --metrics-cr-limit was reached',
      labelNames: ['controller'],
      registers,
      collect(this: Gauge) {
        this.reset();
        for (const [controller, keys] of dropped) this.set({ controller }, keys.size);
      },
    });
  }

  /** The state a CR's reconcile left. */
  report(controller: string, namespace: string, name: string, sample: CrSample): void {
    if (this.limit <= 0) return;
    const key = `${namespace}/${name}`;
    let crs = this.#crs.get(controller);
    const prior = crs?.get(key);
    if (prior === undefined && this.#count >= this.limit) {
      let d = this.#dropped.get(controller);
      if (d === undefined) this.#dropped.set(controller, (d = new Set<string>()));
      d.add(key);
      return;
    }
    if (crs === undefined) this.#crs.set(controller, (crs = new Map<string, Tracked>()));
    if (prior === undefined) this.#count++;
    const lastSuccess = sample.succeeded ? this.now() : prior?.lastSuccess;
    crs.set(key, { sample, ...(lastSuccess === undefined ? {} : { lastSuccess }) });
  }

  /** A deleted CR: its series go. */
  forget(controller: string, namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    this.#dropped.get(controller)?.delete(key);
    if (this.#crs.get(controller)?.delete(key) === true) this.#count--;
  }

  /** A stopped controller: every series of its CRs goes. */
  forgetController(controller: string): void {
    this.#count -= this.#crs.get(controller)?.size ?? 0;
    this.#crs.delete(controller);
    this.#dropped.delete(controller);
  }
}
