import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import { once } from 'node:events';
import { waitFor } from './wait';

const RECEIVER = path.resolve(__dirname, 'otlp-receiver.mjs');
const MAIN = path.resolve(__dirname, '../../dist/src/main.js');

/** A span as the receiver keeps it (OTLP JSON, flattened). */
export interface ReceivedSpan {
  service: string;
  /** The instrumentation scope (tracer name) that made the span. */
  scope?: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
}

/** The OTLP/HTTP receiver (test/harness/otlp-receiver.mjs) in a process of its own. */
export class OtlpReceiver {
  private constructor(private readonly child: ChildProcess, readonly url: string) {}

  static async start(): Promise<OtlpReceiver> {
    const child = spawn(process.execPath, [RECEIVER], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
    return new OtlpReceiver(child, `http://127.0.0.1:${chunk.toString().trim()}`);
  }

  async spans(): Promise<ReceivedSpan[]> {
    return (await fetch(`${this.url}/spans`)).json() as Promise<ReceivedSpan[]>;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGTERM');
    await exited;
  }
}

/** The settings that send every span to `receiver` as OTLP/HTTP JSON, quickly. */
export function exportTo(receiver: OtlpReceiver): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_TRACES_SAMPLER: 'always_on',
  };
}

/** The built server (dist/) with `env`, its JSON log lines kept. */
export class LoggedServer {
  readonly lines: Record<string, unknown>[] = [];
  /** What the server wrote that is no log line (the SDK's own diagnostics go to stderr). */
  readonly otherLines: string[] = [];
  private child?: ChildProcess;

  constructor(private readonly env: Record<string, string | undefined>) {}

  async start(healthUrl: string): Promise<this> {
    const env = Object.fromEntries(Object.entries({ PATH: process.env.PATH, ...this.env }).filter(([, value]) => value !== undefined)) as Record<string, string>;
    const child = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.readLines(child.stdout!);
    this.readLines(child.stderr!, (chunk) => process.stderr.write(chunk));
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
      return fetch(healthUrl).then((answer) => answer.ok, () => false);
    }, 40_000, `${healthUrl} to answer`, 100);
    return this;
  }

  private readLines(stream: NodeJS.ReadableStream, echo?: (chunk: Buffer) => void): void {
    let rest = '';
    stream.on('data', (chunk: Buffer) => {
      echo?.(chunk);
      const text = rest + chunk.toString('utf8');
      const lines = text.split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        try {
          this.lines.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          this.otherLines.push(line);
        }
      }
    });
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  }
}
