import { Gauge, Registry } from 'prom-client';

/**
 * One read shared by the gauges of one scrape: a scrape collects every gauge at once, so
 * they all await the same query instead of one query each.
 */
export class ScrapeSnapshot<T> {
  private last?: { at: number; value: Promise<T> };

  constructor(
    private readonly read: () => Promise<T>,
    private readonly maxAgeMs = 500,
  ) {}

  get(): Promise<T> {
    const now = Date.now();
    if (!this.last || now - this.last.at > this.maxAgeMs) this.last = { at: now, value: this.read() };
    return this.last.value;
  }
}

export interface ScrapeGauge<T> {
  name: string;
  help: string;
  labelNames?: string[];
  set(gauge: Gauge<string>, snapshot: T): void;
}

/**
 * Registers gauges computed at scrape time from the database, so every replica reports
 * the same cluster-wide figure. They replace gauges of the same name an earlier app in
 * this process registered; the function answered removes them again (only if still ours).
 * A failed read leaves the gauges without samples for that scrape and is reported to `onError`.
 */
export function registerScrapeGauges<T>(
  registry: Registry,
  snapshot: ScrapeSnapshot<T>,
  specs: ScrapeGauge<T>[],
  onError: (error: unknown) => void,
): () => void {
  const gauges = specs.map((spec) => {
    registry.removeSingleMetric(spec.name);
    return new Gauge({
      name: spec.name,
      help: spec.help,
      labelNames: spec.labelNames ?? [],
      registers: [registry],
      async collect() {
        this.reset();
        try {
          spec.set(this, await snapshot.get());
        } catch (error) {
          onError(error);
        }
      },
    });
  });
  return () => {
    for (const gauge of gauges) {
      const name = (gauge as unknown as { name: string }).name;
      if (registry.getSingleMetric(name) === gauge) registry.removeSingleMetric(name);
    }
  };
}
