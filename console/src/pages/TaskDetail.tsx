import { useEffect, useRef, useState } from 'preact/hooks';
import { api, consoleSettings, Credential, readStream, traceUrl } from '../api';
import { LiveEvent, useEventStream } from '../events';
import { FINAL, Status, when } from '../format';

/** One task: its template, result or error, the timeline of its events, its live output, and cancel. */
export function TaskDetail({ credential, guid }: { credential: Credential; guid: string }) {
  const [task, setTask] = useState<any>(null);
  const [error, setError] = useState('');
  const [timeline, setTimeline] = useState<LiveEvent[]>([]);
  const [logs, setLogs] = useState('');
  const [following, setFollowing] = useState(false);
  const [brief, setBrief] = useState<string | null>(null);
  const logBox = useRef<HTMLPreElement>(null);
  const [traceTemplate, setTraceTemplate] = useState<string | null>(null);
  useEffect(() => void consoleSettings().then((found) => setTraceTemplate(found.trace_url_template)), []);

  const load = () => api(credential, `tasks/${guid}/`).then(setTask, (failure: Error) => setError(failure.message));
  useEffect(() => {
    void load();
    api(credential, `tasks/${guid}/brief/`).then((body) => setBrief(typeof body === 'string' ? body : JSON.stringify(body, null, 2)), () => setBrief(null));
  }, [guid]);
  // Another task's page in the same view (a hash change) starts its own timeline.
  useEffect(() => setTimeline([]), [guid]);
  // From id 0: every event of this task still in the window, then the live ones.
  useEventStream(credential, `?task_guid=${guid}&last_event_id=0`, (event) => {
    setTimeline((current) => (current.some((seen) => seen.id === event.id) ? current : [...current, event]));
    if (event.kind !== 'task.created') void load();
  });

  useEffect(() => {
    const abort = new AbortController();
    setLogs('');
    setFollowing(true);
    readStream(credential, `tasks/${guid}/logs/?follow=true`, abort.signal, (text) => setLogs((current) => current + text))
      .catch(() => undefined)
      .finally(() => setFollowing(false));
    return () => abort.abort();
  }, [guid]);
  useEffect(() => { logBox.current?.scrollTo({ top: logBox.current.scrollHeight }); }, [logs]);

  const rerun = async () => {
    try {
      const created = await api<{ guid: string }>(credential, `tasks/${guid}/rerun/`, { method: 'POST', body: '{}' });
      location.hash = `#/tasks/${created.guid}`;
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  const cancel = async () => {
    try {
      setTask(await api(credential, `tasks/${guid}/cancel/`, { method: 'POST', body: '{}' }));
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  if (!task) return <section><p class="muted">{error || 'Loading…'}</p></section>;
  const final = FINAL.includes(task.status);
  return (
    <section aria-labelledby="task-title">
      <p><a href="#/tasks">← Tasks</a></p>
      <div class="heading">
        <h1 id="task-title">Task <code>{task.guid}</code></h1>
        <Status status={task.status} />
        <button type="button" class="danger" onClick={cancel} disabled={final || task.cancel_requested}>{task.cancel_requested ? 'Cancel requested' : 'Cancel task'}</button>
        {final && <button type="button" onClick={rerun}>Re-run</button>}
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {task.status === 'pending' && <Waiting task={task} />}
      <div class="grid">
        <dl class="facts">
          <dt>Image</dt><dd>{task.agent_image}</dd>
          <dt>Workflow</dt><dd>{task.workflow ?? '—'}</dd>
          <dt>Dispatcher</dt><dd>{task.dispatcher ?? '—'}</dd>
          <dt>Created</dt><dd>{when(task.created_at)}</dd>
          <dt>Finished</dt><dd>{when(task.finished_at) || '—'}</dd>
          <dt>Progress</dt><dd><progress max={100} value={task.status === 'completed' ? 100 : (task.progress?.percentage ?? 0)} /> {task.progress?.message ?? ''}</dd>
          <dt>Brief key</dt><dd><code>{task.brief_key || '—'}</code></dd>
          <dt>Attempt</dt><dd>{task.attempt} of {task.max_attempts}{task.dead_letter ? ' · dead letter' : ''}</dd>
          {task.trace_id && <><dt>Trace</dt><dd><TraceLink traceId={task.trace_id} template={traceTemplate} /></dd></>}
          {task.rerun_of && <><dt>Re-run of</dt><dd><a href={`#/tasks/${task.rerun_of}`}><code>{task.rerun_of.slice(0, 8)}</code></a></dd></>}
          {task.reruns?.length > 0 && <><dt>Re-runs</dt><dd>{task.reruns.map((rerunGuid: string) => <a href={`#/tasks/${rerunGuid}`}><code>{rerunGuid.slice(0, 8)}</code> </a>)}</dd></>}
        </dl>
        <div>
          <h2>Brief</h2>
          {brief !== null ? <pre class="json" aria-label="Brief">{brief}</pre> : <p class="muted">No brief.</p>}
        </div>
        <div class="wide">
          <h2>Result</h2>
          {task.result ? <pre class="json">{JSON.stringify(task.result, null, 2)}</pre> : <p class="muted">Not finished yet.</p>}
          {task.error_message && <p class="error">{task.error_message}</p>}
        </div>
      </div>
      <h2>Timeline</h2>
      <ol class="timeline">
        {timeline.map((event) => (
          <li key={event.id}><time>{when(event.at)}</time> <span class="kind">{event.kind}</span> <Status status={event.status} />
            {event.progress?.percentage != null && event.kind === 'task.progress' ? ` ${event.progress.percentage}% ${event.progress.message ?? ''}` : ''}
            {event.kind === 'task.retrying' ? ` attempt ${String(event.attempt)} (${String(event.reason)}) from ${when(event.next_attempt_at as string)}` : ''}</li>
        ))}
      </ol>
      <Attempts attempts={task.attempts ?? []} />
      <h2>Logs {following && <span class="live on">following</span>}</h2>
      <pre class="logs" ref={logBox} tabIndex={0} aria-label="Task output">{logs || (following ? 'Waiting for output…' : 'No output.')}</pre>
      <details>
        <summary>Template</summary>
        <pre class="json">{JSON.stringify({ runtime_target: task.runtime_target, resources: task.resources, env_keys: Object.keys(task.env ?? {}), skills: task.skills, timeout_seconds: task.timeout_seconds, dispatcher_labels: task.dispatcher_labels }, null, 2)}</pre>
      </details>
    </section>
  );
}

/** Why a pending task waits: what the scheduler says (`waiting_reason`), else the last dispatch error, and until when. */
function Waiting({ task }: { task: any }) {
  const reason = task.waiting_reason ?? task.last_dispatch_error;
  return (
    <p class="waiting" role="status">
      <strong>Waiting:</strong> {reason ?? 'for the dispatch loop to send it.'}
      {task.next_attempt_at && <> Next try at <time>{when(task.next_attempt_at)}</time>.</>}
    </p>
  );
}

interface AttemptRow {
  attempt: number;
  dispatcher: string | null;
  dispatcher_task_id: string;
  status: string;
  reason: string | null;
  error_message: string | null;
  started_at: string | null;
  finished_at: string | null;
}

/** Each attempt of the task, the current one last. */
function Attempts({ attempts }: { attempts: AttemptRow[] }) {
  if (attempts.length === 0) return null;
  return (
    <>
      <h2>Attempts</h2>
      <table class="list" aria-label="Attempts">
        <thead><tr><th>#</th><th>Status</th><th>Dispatcher</th><th>Dispatcher task</th><th>Started</th><th>Finished</th><th>Error</th></tr></thead>
        <tbody>
          {attempts.map((attempt) => (
            <tr key={attempt.attempt} data-attempt={attempt.attempt}>
              <td data-label="#">{attempt.attempt}</td>
              <td data-label="Status"><Status status={attempt.status} />{attempt.reason && <span class="muted"> · retried ({attempt.reason})</span>}</td>
              <td data-label="Dispatcher">{attempt.dispatcher ?? '—'}</td>
              <td data-label="Dispatcher task"><code>{attempt.dispatcher_task_id.slice(0, 8)}</code></td>
              <td data-label="Started">{when(attempt.started_at) || '—'}</td>
              <td data-label="Finished">{when(attempt.finished_at) || '—'}</td>
              <td data-label="Error" class="error-text">{attempt.error_message ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

/** The task's trace id, linked to the tracing tool when TRACE_URL_TEMPLATE is set. */
function TraceLink({ traceId, template }: { traceId: string; template: string | null }) {
  const url = traceUrl(template, traceId);
  return url ? <a href={url} target="_blank" rel="noopener noreferrer"><code>{traceId}</code></a> : <code>{traceId}</code>;
}
