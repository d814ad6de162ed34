import { useEffect, useState } from 'preact/hooks';
import { api, Credential } from '../api';
import { age, Status } from '../format';

/** Workflows with their triggers; enable or disable one, and see its runs. */
export function Workflows({ credential }: { credential: Credential }) {
  const [workflows, setWorkflows] = useState<any[]>([]);
  const [runs, setRuns] = useState<Record<string, any[]>>({});
  const [error, setError] = useState('');
  const load = () => api<{ results: any[] }>(credential, 'workflows/?limit=200').then((page) => setWorkflows(page.results), (failure: Error) => setError(failure.message));
  useEffect(() => { void load(); }, [credential]);

  const toggle = async (workflow: any) => {
    const { name, priority, triggers, task_template } = workflow;
    try {
      await api(credential, `workflows/${encodeURIComponent(workflow.id)}/`, { method: 'PUT', body: JSON.stringify({ name, priority, triggers, task_template, enabled: !workflow.enabled }) });
      await load();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const showRuns = async (id: string) => {
    const page = await api<{ results: any[] }>(credential, `workflows/${encodeURIComponent(id)}/runs/?limit=20`).catch((failure: Error) => { setError(failure.message); return { results: [] }; });
    setRuns((current) => ({ ...current, [id]: page.results }));
  };

  return (
    <section aria-labelledby="workflows-title">
      <h1 id="workflows-title">Workflows</h1>
      {error && <p class="error" role="alert">{error}</p>}
      {workflows.length === 0 && <p class="muted">No workflows.</p>}
      {workflows.map((workflow) => (
        <article class="card" key={workflow.id}>
          <div class="heading">
            <h2>{workflow.name} <span class="muted">{workflow.id}</span></h2>
            <Status status={workflow.enabled ? 'enabled' : 'disabled'} />
            <button type="button" onClick={() => toggle(workflow)}>{workflow.enabled ? 'Disable' : 'Enable'}</button>
            <button type="button" onClick={() => showRuns(workflow.id)}>Runs</button>
          </div>
          <p>Priority {workflow.priority} · image <code>{workflow.task_template?.agent_image}</code>
            {workflow.next_runs?.length > 0 && <> · next run {new Date(workflow.next_runs[0]).toLocaleString()}</>}</p>
          <ul class="triggers">
            {workflow.triggers.map((trigger: any) => (
              <li><span class="chip">{trigger.source}</span> {trigger.event} {Object.keys(trigger.filter ?? {}).length > 0 && <code>{JSON.stringify(trigger.filter)}</code>}
                {trigger.cron && <><code>{trigger.cron}</code> {trigger.timezone}</>}</li>
            ))}
          </ul>
          {runs[workflow.id] && (
            <table class="list">
              <thead><tr><th>Task</th><th>Status</th><th>Age</th></tr></thead>
              <tbody>
                {runs[workflow.id].map((run) => (
                  <tr><td data-label="Task"><a href={`#/tasks/${run.guid}`}><code>{run.guid.slice(0, 8)}</code></a></td>
                    <td data-label="Status"><Status status={run.status} /></td><td data-label="Age">{age(run.created_at)}</td></tr>
                ))}
              </tbody>
            </table>
          )}
          {runs[workflow.id]?.length === 0 && <p class="muted">No runs yet.</p>}
        </article>
      ))}
    </section>
  );
}
