import { Client } from 'pg';

/** The statements every `pg` client sends (through TypeORM or prepared on its pool alike) until `stop()`, in order. */
export function sentStatements(): { texts: string[]; stop: () => void } {
  const texts: string[] = [];
  const original = Client.prototype.query;
  Client.prototype.query = function (this: Client, ...args: unknown[]) {
    texts.push(String(typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof Client.prototype.query;
  return { texts, stop: () => (Client.prototype.query = original) };
}

/** What `run` answers, with the statements every `pg` client sent while it ran. */
export async function statementsDuring<T>(run: () => Promise<T>): Promise<{ result: T; texts: string[] }> {
  const sent = sentStatements();
  try {
    return { result: await run(), texts: sent.texts };
  } finally {
    sent.stop();
  }
}
