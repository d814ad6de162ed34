import { useEffect, useState } from 'preact/hooks';
import { api, Credential } from '../api';
import { useEventStream } from '../events';
import { age, Status } from '../format';

/**
 * Dispatchers with state, backends, labels, load and last heartbeat, then their warm pools as
 * each one's last heartbeat reported them; refreshed on dispatcher.state events.
 */
export function Dispatchers({ credential }: { credential: Credential }) {
  const [dispatchers, setDispatchers] = useState<any[]>([]);
  const [error, setError] = useState('');
  const load = () => api<any[]>(credential, 'dispatchers/').then(setDispatchers, (failure: Error) => setError(failure.message));
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), 10_000);
    return () => clearInterval(timer);
  }, [credential]);
  useEventStream(credential, '', (event) => { if (event.kind === 'dispatcher.state') void load(); });

  return (
    <section aria-labelledby="dispatchers-title">
      <h1 id="dispatchers-title">Dispatchers</h1>
      {error && <p class="error" role="alert">{error}</p>}
      <table class="list">
        <thead><tr><th>Name</th><th>State</th><th>Backends</th><th>Labels</th><th>Active / capacity</th><th>Last heartbeat</th></tr></thead>
        <tbody>
          {dispatchers.map((dispatcher) => (
            <tr key={dispatcher.guid}>
              <td data-label="Name">{dispatcher.name} <span class="muted">{dispatcher.endpoint_url}</span></td>
              <td data-label="State"><Status status={dispatcher.state} /></td>
              <td data-label="Backends">{(dispatcher.backends ?? []).join(', ')}</td>
              <td data-label="Labels">{Object.keys(dispatcher.labels ?? {}).length === 0 ? '—' : Object.entries(dispatcher.labels).map(([key, value]) => <span class="chip">{key}={String(value)}</span>)}</td>
              <td data-label="Active / capacity">{dispatcher.active_tasks} / {dispatcher.capacity ?? '∞'}</td>
              <td data-label="Last heartbeat">{dispatcher.last_heartbeat_at ? `${age(dispatcher.last_heartbeat_at)} ago` : 'never'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {dispatchers.length === 0 && <p class="muted">No dispatcher has checked in.</p>}
      <WarmPools dispatchers={dispatchers} />
    </section>
  );
}

/** One row per warm pool of every dispatcher: its size, the agents waiting for a task and those at work. */
function WarmPools({ dispatchers }: { dispatchers: any[] }) {
  const pools = dispatchers.flatMap((dispatcher) => (dispatcher.warm_pools ?? []).map((pool: any) => ({ dispatcher, pool })));
  return (
    <section aria-labelledby="warm-pools-title">
      <h2 id="warm-pools-title">Warm pools</h2>
      {pools.length === 0 ? <p class="muted">No dispatcher reports a warm pool (WARM_POOLS).</p> : (
        <table class="list">
          <thead><tr><th>Pool</th><th>Dispatcher</th><th>Backend</th><th>Image</th><th>Idle / size</th><th>Claimed</th></tr></thead>
          <tbody>
            {pools.map(({ dispatcher, pool }) => (
              <tr key={`${dispatcher.guid}/${pool.name}`}>
                <td data-label="Pool">{pool.name}</td>
                <td data-label="Dispatcher">{dispatcher.name} <Status status={dispatcher.state} /></td>
                <td data-label="Backend">{pool.backend}</td>
                <td data-label="Image"><code>{pool.image}</code></td>
                <td data-label="Idle / size">
                  <meter min={0} max={Math.max(pool.size, 1)} value={pool.idle} aria-label={`${pool.idle} of ${pool.size} idle`} /> {pool.idle} / {pool.size}
                  {pool.idle < pool.size && <span class="muted"> (refilling)</span>}
                </td>
                <td data-label="Claimed">{pool.claimed}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
