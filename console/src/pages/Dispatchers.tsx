import { useEffect, useState } from 'preact/hooks';
import { api, Credential } from '../api';
import { useEventStream } from '../events';
import { age, Status } from '../format';

/** Dispatchers with state, backends, labels, load and last heartbeat; refreshed on dispatcher.state events. */
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
    </section>
  );
}
