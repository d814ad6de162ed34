import { useEffect, useState } from 'preact/hooks';
import { api, authorization, Credential } from '../api';
import { bytes, when } from '../format';

/** Skills and their versions (number, content hash, size); upload a package, download a version. */
export function Skills({ credential, selected }: { credential: Credential; selected?: string }) {
  const [skills, setSkills] = useState<any[]>([]);
  const [skill, setSkill] = useState<any>(null);
  const [message, setMessage] = useState('');
  const [error, setError] = useState('');
  const fail = (failure: Error) => setError(failure.message);
  const loadSkills = () => api<any[]>(credential, 'skills/').then(setSkills, fail);
  useEffect(() => { void loadSkills(); }, [credential]);
  const loadSkill = () => (selected ? api(credential, `skills/${selected}/`).then(setSkill, fail) : Promise.resolve(setSkill(null)));
  useEffect(() => { void loadSkill(); }, [selected]);

  const upload = async (event: Event) => {
    event.preventDefault();
    setError('');
    const form = event.currentTarget as HTMLFormElement;
    try {
      const answer = await api(credential, `skills/${selected}/upload/`, { method: 'POST', body: new FormData(form) });
      setMessage(`Version ${answer.version_number} ${answer.deduplicated ? 'already held these bytes' : 'stored'} (${answer.content_hash.slice(0, 12)}…)`);
      form.reset();
      await Promise.all([loadSkill(), loadSkills()]);
    } catch (failure) {
      fail(failure as Error);
    }
  };
  const download = async (version: number) => {
    const response = await fetch(`/api/v1/skills/${selected}/download/?version=${version}`, { headers: { authorization: authorization(credential) } });
    if (!response.ok) return setError(`Download failed: ${response.status}`);
    const link = document.createElement('a');
    link.href = URL.createObjectURL(await response.blob());
    link.download = `${selected}-${version}.zip`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  };

  return (
    <section aria-labelledby="skills-title" class="split">
      <nav aria-labelledby="skills-title">
        <h1 id="skills-title">Skills</h1>
        <ul class="picker">
          {skills.map((candidate) => (
            <li><a href={`#/skills/${candidate.slug}`} aria-current={candidate.slug === selected ? 'true' : undefined}>{candidate.name}</a> <span class="muted">v{candidate.latest_version ?? '—'}</span></li>
          ))}
        </ul>
        {skills.length === 0 && <p class="muted">No skills.</p>}
      </nav>
      <div>
        {message && <p class="notice" role="status">{message}</p>}
        {error && <p class="error" role="alert">{error}</p>}
        {!skill && <p class="muted">Choose a skill.</p>}
        {skill && (
          <>
            <h2>{skill.name} <span class="muted">{skill.slug} · {skill.category}</span></h2>
            <p>{skill.description}</p>
            <form class="upload" onSubmit={upload}>
              <label>New version (zip)<input type="file" name="file" accept=".zip,application/zip" required /></label>
              <button type="submit">Upload</button>
            </form>
            <table class="list">
              <thead><tr><th>Version</th><th>Content hash</th><th>Size</th><th>Uploaded</th><th></th></tr></thead>
              <tbody>
                {skill.versions.map((version: any) => (
                  <tr data-version={version.version_number}>
                    <td data-label="Version">{version.version_number}</td>
                    <td data-label="Content hash"><code class="hash" title={version.content_hash}>{version.content_hash.slice(0, 16)}…</code></td>
                    <td data-label="Size">{bytes(version.size_bytes)}</td>
                    <td data-label="Uploaded">{when(version.created_at)}</td>
                    <td><button type="button" onClick={() => download(version.version_number)}>Download</button></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </div>
    </section>
  );
}
