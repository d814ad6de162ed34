import { spawnSync } from 'node:child_process';
import { http } from './http';

/** One scrape of a `/metrics` endpoint, with its samples by series (`name{label="value"}`). */
export interface Scrape {
  text: string;
  samples: Map<string, number>;
  /** The sample of `series` (as it is written in the exposition, labels in order); undefined when absent. */
  value(series: string): number | undefined;
  /** The metric families named in `# TYPE` lines. */
  families(): string[];
}

export async function scrape(baseUrl: string): Promise<Scrape> {
  const answer = await http('GET', `${baseUrl}/metrics`);
  if (answer.status !== 200) throw new Error(`GET ${baseUrl}/metrics answered ${answer.status}`);
  const text = answer.text;
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*(?:\{.*\})?) (\S+)$/.exec(line);
    if (match) samples.set(match[1], Number(match[2]));
  }
  return {
    text,
    samples,
    value: (series) => samples.get(series),
    families: () => [...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]),
  };
}

/** `promtool check metrics` on an exposition: its complaints, empty when it has none. */
export function promtoolComplaints(exposition: string): string {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  if (run.error) throw new Error(`promtool is needed (Debian package prometheus; .ci/run installs it): ${run.error.message}`);
  return `${run.stdout}${run.stderr}`.trim();
}
