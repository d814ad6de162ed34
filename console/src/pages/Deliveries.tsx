import { useEffect, useState } from 'preact/hooks';
import { api, Credential } from '../api';
import { age, Status } from '../format';

/** The webhook ledger: each delivery's outcome, where it went, and replay. */
export function Deliveries({ credential }: { credential: Credential }) {
  const [deliveries, setDeliveries] = useState<any[]>([]);
  const [message, setMessage] = useState('');
  const [error, setError] = useState('');
  const load = () => api<{ results: any[] }>(credential, 'webhooks/deliveries/?limit=100').then((page) => setDeliveries(page.results), (failure: Error) => setError(failure.message));
  useEffect(() => { void load(); }, [credential]);

  const replay = async (id: string) => {
    setError('');
    try {
      const answer = await api<any>(credential, `webhooks/deliveries/${id}/replay/`, { method: 'POST', body: '{}' });
      // The list is fetched first, so the notice never names a delivery the table does not show yet.
      await load();
      setMessage(`Replayed as ${answer.delivery}: ${answer.status}${answer.task_guid ? `, task ${answer.task_guid.slice(0, 8)}` : ''}`);
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  return (
    <section aria-labelledby="deliveries-title">
      <h1 id="deliveries-title">Webhook deliveries</h1>
      {message && <p class="notice" role="status">{message}</p>}
      {error && <p class="error" role="alert">{error}</p>}
      <table class="list">
        <thead><tr><th>Received</th><th>Source / event</th><th>Outcome</th><th>Routed to</th><th>Task</th><th></th></tr></thead>
        <tbody>
          {deliveries.map((delivery) => (
            <tr key={delivery.id} data-delivery={delivery.id}>
              <td data-label="Received">{age(delivery.received_at)} ago</td>
              <td data-label="Source / event"><span class="chip">{delivery.source}</span> {delivery.event}{delivery.replay_of ? <span class="muted"> (replay)</span> : ''}</td>
              <td data-label="Outcome"><Status status={delivery.outcome} /> {delivery.error && <span class="muted">{delivery.error}</span>}</td>
              <td data-label="Routed to">{delivery.routed_to ?? '—'}</td>
              <td data-label="Task">{delivery.task_guid ? <a href={`#/tasks/${delivery.task_guid}`}><code>{delivery.task_guid.slice(0, 8)}</code></a> : '—'}</td>
              <td><button type="button" onClick={() => replay(delivery.id)}>Replay</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      {deliveries.length === 0 && <p class="muted">No deliveries.</p>}
    </section>
  );
}
