import { Client } from 'pg';
import { startCallbackReceiver } from './dispatcher';
import { startTestSystem, TestSystem } from './system';

export interface DispatcherWithSql {
  system: TestSystem;
  receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
  /** A connection of its own to the dispatcher's database, for specs that plant rows as a crash leaves them. */
  db: Client;
  close(): Promise<void>;
}

/** A dispatcher role with the given settings, a callback receiver, and SQL on its database. */
export async function startDispatcherWithSql(env: Record<string, string>): Promise<DispatcherWithSql> {
  const system = await startTestSystem({ role: 'dispatcher', env });
  const receiver = await startCallbackReceiver();
  const db = new Client({ connectionString: system.config.databaseUrl! });
  await db.connect();
  return {
    system,
    receiver,
    db,
    close: async () => {
      await db.end();
      await system.close();
      await receiver.close();
    },
  };
}
