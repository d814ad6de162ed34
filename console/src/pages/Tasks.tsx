import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, Credential } from '../api';
import { LiveEvent, useEventStream } from '../events';
import { age, Status } from '../format';

interface TaskRow {
  guid: string;
  status: string;
  workflow: string | null;
  dispatcher: string | null;
  agent_image: string;
  created_at: string;
  progress: { percentage?: number | null; message?: string | null } | null;
}

const STATUSES = ['pending', 'dispatched', 'running', 'completed', 'failed', 'timed_out', 'cancelled'];

const percentOf = (row: TaskRow): number => (row.status === 'completed' ? 100 : (row.progress?.percentage ?? 0));

/** Applies one event to the list: a new task goes on top, a change updates its row. */
function applyEvent(rows: TaskRow[], event: LiveEvent): TaskRow[] {
  if (!event.task_guid) return rows;
  const index = rows.findIndex((row) => row.guid === event.task_guid);
  if (index < 0) {
    if (event.kind !== 'task.created') return rows;
    return [{
      guid: event.task_guid, status: event.status, workflow: event.workflow ?? null, dispatcher: event.dispatcher_slug ?? null,
      agent_image: event.agent_image ?? '', created_at: event.at, progress: event.progress ?? null,
    }, ...rows];
  }
  const next = [...rows];
  next[index] = { ...rows[index], status: event.status, dispatcher: event.dispatcher_slug ?? rows[index].dispatcher, progress: event.progress ?? rows[index].progress };
  return next;
}

/** Tasks, newest first, kept live by the event stream; filters by status, workflow and text. */
export function Tasks({ credential }: { credential: Credential }) {
  const [rows, setRows] = useState<TaskRow[]>([]);
  const [error, setError] = useState('');
  const [status, setStatus] = useState('');
  const [workflow, setWorkflow] = useState('');
  const [text, setText] = useState('');
  const [now, setNow] = useState(Date.now());

  useEffect(() => {
    api<{ results: TaskRow[] }>(credential, 'tasks/?limit=100').then((page) => setRows(page.results), (failure: Error) => setError(failure.message));
    const timer = setInterval(() => setNow(Date.now()), 5000);
    return () => clearInterval(timer);
  }, [credential]);
  const live = useEventStream(credential, '', (event) => setRows((current) => applyEvent(current, event)));

  const shown = useMemo(() => rows.filter((row) =>
    (!status || row.status === status)
    && (!workflow || (row.workflow ?? '').includes(workflow))
    && (!text || `${row.guid} ${row.agent_image} ${row.dispatcher ?? ''}`.includes(text))), [rows, status, workflow, text]);

  return (
    <section aria-labelledby="tasks-title">
      <div class="heading">
        <h1 id="tasks-title">Tasks</h1>
        <span class={live ? 'live on' : 'live'} role="status">{live ? 'live' : 'reconnecting…'}</span>
      </div>
      <div class="filters" role="search">
        <label>Status
          <select value={status} onChange={(event) => setStatus((event.target as HTMLSelectElement).value)}>
            <option value="">any</option>
            {STATUSES.map((candidate) => <option value={candidate}>{candidate}</option>)}
          </select>
        </label>
        <label>Workflow<input value={workflow} onInput={(event) => setWorkflow((event.target as HTMLInputElement).value)} /></label>
        <label>Search<input type="search" value={text} placeholder="id, image, dispatcher" onInput={(event) => setText((event.target as HTMLInputElement).value)} /></label>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <table class="list">
        <thead><tr><th>Task</th><th>Status</th><th>Workflow</th><th>Dispatcher</th><th>Age</th><th>Progress</th></tr></thead>
        <tbody>
          {shown.map((row) => (
            <tr key={row.guid} data-task={row.guid}>
              <td data-label="Task"><a href={`#/tasks/${row.guid}`}><code>{row.guid.slice(0, 8)}</code></a> <span class="muted">{row.agent_image}</span></td>
              <td data-label="Status"><Status status={row.status} /></td>
              <td data-label="Workflow">{row.workflow ?? '—'}</td>
              <td data-label="Dispatcher">{row.dispatcher ?? '—'}</td>
              <td data-label="Age">{age(row.created_at, now)}</td>
              <td data-label="Progress">
                <progress max={100} value={percentOf(row)} aria-label={`progress of ${row.guid.slice(0, 8)}`} /> <span class="muted">{percentOf(row)}%</span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {shown.length === 0 && <p class="muted">No tasks{status || workflow || text ? ' match these filters' : ' yet'}.</p>}
    </section>
  );
}
