import { useEffect, useState } from 'preact/hooks';
import { api, Credential } from '../api';
import { Status, when } from '../format';

interface DeadLetter {
  guid: string;
  status: string;
  agent_image: string;
  workflow: string | null;
  attempt: number;
  max_attempts: number;
  error_message: string | null;
  finished_at: string | null;
}

/** Tasks that gave up (failed or timed out, no attempt left, not re-run), each with a re-run button. */
export function DeadLetters({ credential }: { credential: Credential }) {
  const [rows, setRows] = useState<DeadLetter[] | null>(null);
  const [error, setError] = useState('');
  const [rerun, setRerun] = useState<{ of: string; guid: string } | null>(null);

  useEffect(() => {
    api<{ results: DeadLetter[] }>(credential, 'tasks/?dead_letter=true&limit=100').then((page) => setRows(page.results), (failure: Error) => setError(failure.message));
  }, [credential]);

  const runAgain = async (guid: string) => {
    setError('');
    try {
      const created = await api<{ guid: string }>(credential, `tasks/${guid}/rerun/`, { method: 'POST', body: '{}' });
      setRerun({ of: guid, guid: created.guid });
      setRows((current) => (current ?? []).filter((row) => row.guid !== guid));
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  return (
    <section aria-labelledby="dead-letters-title">
      <div class="heading"><h1 id="dead-letters-title">Dead letters</h1></div>
      <p class="muted">Tasks that failed or timed out and will not be tried again. A re-run is a new task from the same template and brief.</p>
      {error && <p class="error" role="alert">{error}</p>}
      {rerun && (
        <p role="status" class="notice">
          Re-ran <code>{rerun.of.slice(0, 8)}</code> as <a href={`#/tasks/${rerun.guid}`}><code>{rerun.guid.slice(0, 8)}</code></a>.
        </p>
      )}
      <table class="list">
        <thead><tr><th>Task</th><th>Status</th><th>Attempts</th><th>Last error</th><th>Finished</th><th><span class="sr-only">Actions</span></th></tr></thead>
        <tbody>
          {(rows ?? []).map((row) => (
            <tr key={row.guid} data-dead-letter={row.guid}>
              <td data-label="Task"><a href={`#/tasks/${row.guid}`}><code>{row.guid.slice(0, 8)}</code></a> <span class="muted">{row.agent_image}</span>
                {row.workflow && <span class="muted"> · {row.workflow}</span>}</td>
              <td data-label="Status"><Status status={row.status} /></td>
              <td data-label="Attempts">{row.attempt} of {row.max_attempts}</td>
              <td data-label="Last error" class="error-text">{row.error_message ?? '—'}</td>
              <td data-label="Finished">{when(row.finished_at)}</td>
              <td><button type="button" onClick={() => runAgain(row.guid)} aria-label={`Re-run ${row.guid.slice(0, 8)}`}>Re-run</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      {rows !== null && rows.length === 0 && <p class="muted">No dead letters.</p>}
    </section>
  );
}
