import { useEffect, useState } from 'preact/hooks';
import { api, Credential } from '../api';
import { age, Status } from '../format';

const EVENT_TYPES = ['task.created', 'task.status', 'task.progress', 'task.finished', 'task.retrying', 'dispatcher.state', 'subscription.disabled'];

/** Outbound event subscriptions: add one (its secret shown once), enable or disable, rotate, and each one's deliveries with replay. */
export function Subscriptions({ credential, selected }: { credential: Credential; selected?: string }) {
  const [subscriptions, setSubscriptions] = useState<any[]>([]);
  const [secret, setSecret] = useState<{ id: string; secret: string } | null>(null);
  const [error, setError] = useState('');
  const load = () => api<{ results: any[] }>(credential, 'subscriptions/?limit=100').then((page) => setSubscriptions(page.results), (failure: Error) => setError(failure.message));
  useEffect(() => { void load(); }, [credential]);

  const act = async (work: () => Promise<void>) => {
    setError('');
    try {
      await work();
      await load();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const create = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const eventTypes = EVENT_TYPES.filter((type) => form.get(type) === 'on');
    return act(async () => {
      const created = await api<any>(credential, 'subscriptions/', { method: 'POST', body: JSON.stringify({ url: form.get('url'), event_types: eventTypes, description: form.get('description') }) });
      setSecret({ id: created.id, secret: created.secret });
      (event.target as HTMLFormElement).reset();
    });
  };
  const toggle = (subscription: any) => act(async () => {
    await api(credential, `subscriptions/${subscription.id}/`, { method: 'PATCH', body: JSON.stringify({ enabled: !subscription.enabled }) });
  });
  const rotate = (id: string) => act(async () => {
    const rotated = await api<any>(credential, `subscriptions/${id}/rotate-secret/`, { method: 'POST' });
    setSecret({ id, secret: rotated.secret });
  });

  return (
    <section aria-labelledby="subscriptions-title">
      <h1 id="subscriptions-title">Event subscriptions</h1>
      {error && <p class="error" role="alert">{error}</p>}
      {secret && (
        <p class="notice" role="status">
          Signing secret of <code>{secret.id.slice(0, 8)}</code>, shown this once: <code data-secret>{secret.secret}</code>
        </p>
      )}
      <form class="inline" onSubmit={create} aria-label="New subscription">
        <label>URL <input name="url" type="url" required placeholder="https://orchestrator.example.com/hooks" /></label>
        <label>Description <input name="description" /></label>
        <fieldset>
          <legend>Events</legend>
          {EVENT_TYPES.map((type) => <label key={type}><input type="checkbox" name={type} defaultChecked={type === 'task.finished'} /> {type}</label>)}
        </fieldset>
        <button type="submit">Subscribe</button>
      </form>
      <table class="list">
        <thead><tr><th>URL</th><th>Events</th><th>State</th><th>Created</th><th></th></tr></thead>
        <tbody>
          {subscriptions.map((subscription) => (
            <tr key={subscription.id} data-subscription={subscription.id}>
              <td data-label="URL"><a href={`#/subscriptions/${subscription.id}`}><code>{subscription.url}</code></a> <span class="muted">{subscription.description}</span></td>
              <td data-label="Events">{subscription.event_types.map((type: string) => <span class="chip" key={type}>{type}</span>)}</td>
              <td data-label="State"><Status status={subscription.enabled ? 'enabled' : `disabled${subscription.disabled_reason ? ` (${subscription.disabled_reason})` : ''}`} /></td>
              <td data-label="Created">{age(subscription.created_at)} ago</td>
              <td>
                <button type="button" onClick={() => toggle(subscription)}>{subscription.enabled ? 'Disable' : 'Enable'}</button>{' '}
                <button type="button" onClick={() => rotate(subscription.id)}>Rotate secret</button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {subscriptions.length === 0 && <p class="muted">No subscriptions.</p>}
      {selected && <SubscriptionDeliveries credential={credential} id={selected} />}
    </section>
  );
}

function SubscriptionDeliveries({ credential, id }: { credential: Credential; id: string }) {
  const [deliveries, setDeliveries] = useState<any[]>([]);
  const [error, setError] = useState('');
  const load = () => api<{ results: any[] }>(credential, `subscriptions/${id}/deliveries/?limit=100`).then((page) => setDeliveries(page.results), (failure: Error) => setError(failure.message));
  useEffect(() => { void load(); }, [credential, id]);
  const replay = async (deliveryId: string) => {
    setError('');
    try {
      await api(credential, `subscriptions/${id}/deliveries/${deliveryId}/replay/`, { method: 'POST' });
      await load();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  return (
    <section aria-labelledby="subscription-deliveries-title">
      <h2 id="subscription-deliveries-title">Deliveries of <code>{id.slice(0, 8)}</code></h2>
      {error && <p class="error" role="alert">{error}</p>}
      <table class="list">
        <thead><tr><th>Created</th><th>Event</th><th>Status</th><th>Attempts</th><th>Last answer</th><th></th></tr></thead>
        <tbody>
          {deliveries.map((delivery) => {
            const last = delivery.attempts[delivery.attempts.length - 1];
            return (
              <tr key={delivery.id} data-delivery={delivery.id}>
                <td data-label="Created">{age(delivery.created_at)} ago</td>
                <td data-label="Event"><span class="chip">{delivery.event_type}</span> {delivery.payload?.data?.task_guid ? <code>{String(delivery.payload.data.task_guid).slice(0, 8)}</code> : ''}</td>
                <td data-label="Status"><Status status={delivery.status} /></td>
                <td data-label="Attempts">{delivery.attempt_count}</td>
                <td data-label="Last answer">{last ? <span>{last.status_code ?? '—'} in {last.duration_ms} ms <span class="muted">{last.error ?? last.response}</span></span> : '—'}</td>
                <td><button type="button" onClick={() => replay(delivery.id)}>Replay</button></td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {deliveries.length === 0 && <p class="muted">No deliveries yet.</p>}
    </section>
  );
}
