import { useEffect, useState } from 'preact/hooks';
import { api, Credential } from '../api';
import { age, Status, when } from '../format';

interface AuditRow {
  id: string;
  at: string;
  actor: { kind: 'operator' | 'oauth_client'; name: string };
  action: string;
  resource_type: string;
  resource_id: string | null;
  outcome: string;
  remote_addr: string | null;
  details: { status_code?: number; error?: string; fields?: string[]; result_id?: string };
}

interface AuditPage {
  count: number;
  next: string | null;
  previous: string | null;
  results: AuditRow[];
}

type Filters = Record<'actor' | 'action' | 'resource_type' | 'resource_id' | 'since', string>;
const NO_FILTERS: Filters = { actor: '', action: '', resource_type: '', resource_id: '', since: '' };
const RESOURCE_TYPES = ['task', 'workflow', 'subscription', 'skill', 'dispatcher', 'oauth_client', 'webhook_delivery'];

/** The query of a list call: the filters given, and the cursor of a page link. */
function queryOf(filters: Filters, cursor: string | null): string {
  const params = new URLSearchParams({ limit: '50' });
  for (const [name, value] of Object.entries(filters)) {
    if (value) params.set(name, name === 'since' ? new Date(value).toISOString() : value.trim());
  }
  if (cursor) params.set('cursor', cursor);
  return params.toString();
}

const cursorOf = (link: string | null): string | null => (link ? new URL(link).searchParams.get('cursor') : null);

function Resource({ row }: { row: AuditRow }) {
  if (!row.resource_id) return <span class="muted">{row.resource_type}</span>;
  const id = row.resource_type === 'task' ? <a href={`#/tasks/${row.resource_id}`}><code>{row.resource_id.slice(0, 8)}</code></a> : <code>{row.resource_id}</code>;
  return <><span class="chip">{row.resource_type}</span> {id}</>;
}

/** Who changed what, when, from where, and the outcome: the audit trail, newest first, filtered on the server. */
export function Audit({ credential }: { credential: Credential }) {
  const [form, setForm] = useState<Filters>(NO_FILTERS);
  const [applied, setApplied] = useState<Filters>(NO_FILTERS);
  const [cursor, setCursor] = useState<string | null>(null);
  const [page, setPage] = useState<AuditPage | null>(null);
  const [error, setError] = useState('');

  useEffect(() => {
    setError('');
    api<AuditPage>(credential, `audit/?${queryOf(applied, cursor)}`).then(setPage, (failure: Error) => setError(failure.message));
  }, [credential, applied, cursor]);

  const field = (name: keyof Filters) => ({
    value: form[name],
    onInput: (event: Event) => setForm({ ...form, [name]: (event.target as HTMLInputElement).value }),
  });
  const apply = (event: Event) => {
    event.preventDefault();
    setCursor(null);
    setApplied({ ...form });
  };

  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit trail</h1>
      <form class="filters" role="search" onSubmit={apply}>
        <label>Actor<input {...field('actor')} placeholder="token name or client_id" /></label>
        <label>Action<input {...field('action')} placeholder="tasks.cancel" /></label>
        <label>Resource type
          <select value={form.resource_type} onChange={(event) => setForm({ ...form, resource_type: (event.target as HTMLSelectElement).value })}>
            <option value="">any</option>
            {RESOURCE_TYPES.map((type) => <option value={type}>{type}</option>)}
          </select>
        </label>
        <label>Resource id<input {...field('resource_id')} /></label>
        <label>Since<input type="datetime-local" {...field('since')} /></label>
        <button type="submit">Filter</button>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      {page && <p class="muted" role="status">{page.count} {page.count === 1 ? 'entry' : 'entries'}</p>}
      <table class="list">
        <thead><tr><th>When</th><th>Actor</th><th>Action</th><th>Resource</th><th>Outcome</th><th>From</th></tr></thead>
        <tbody>
          {page?.results.map((row) => (
            <tr key={row.id} data-audit={row.id}>
              <td data-label="When" title={when(row.at)}>{age(row.at)} ago</td>
              <td data-label="Actor"><span class="chip">{row.actor.kind === 'operator' ? 'operator' : 'client'}</span> {row.actor.name}</td>
              <td data-label="Action"><code>{row.action}</code></td>
              <td data-label="Resource"><Resource row={row} />{row.details.result_id && <span class="muted"> → {row.details.result_id.slice(0, 8)}</span>}</td>
              <td data-label="Outcome"><Status status={row.outcome} /> <span class="muted">{row.details.status_code}{row.details.error ? ` ${row.details.error}` : ''}</span></td>
              <td data-label="From">{row.remote_addr ?? '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {page && page.results.length === 0 && <p class="muted">No audit entries.</p>}
      <nav class="filters" aria-label="Audit pages">
        <button type="button" disabled={!page?.previous} onClick={() => setCursor(cursorOf(page!.previous))}>Newer</button>
        <button type="button" disabled={!page?.next} onClick={() => setCursor(cursorOf(page!.next))}>Older</button>
      </nav>
    </section>
  );
}
