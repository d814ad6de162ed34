import { useState } from 'preact/hooks';
import { Credential, signInWithClient, whoami } from '../api';

/** An operator token, or OAuth client credentials exchanged for an access token; kept for this tab's session only. */
export function SignIn({ onSignedIn }: { onSignedIn: (credential: Credential) => void }) {
  const [mode, setMode] = useState<'token' | 'oauth'>('token');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    setBusy(true);
    setError('');
    try {
      const credential: Credential = mode === 'token'
        ? { kind: 'token', token: String(form.get('token') ?? '').trim() }
        : await signInWithClient(String(form.get('client_id') ?? '').trim(), String(form.get('client_secret') ?? ''));
      await whoami(credential);
      onSignedIn(credential);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="signin" id="main">
      <h1>Agent tasks console</h1>
      <div class="tabs" role="tablist">
        <button type="button" role="tab" aria-selected={mode === 'token'} onClick={() => setMode('token')}>Operator token</button>
        <button type="button" role="tab" aria-selected={mode === 'oauth'} onClick={() => setMode('oauth')}>OAuth client</button>
      </div>
      <form onSubmit={submit} autocomplete="off">
        {mode === 'token' ? (
          <label>Operator token<input name="token" type="password" required autoFocus autocomplete="off" /></label>
        ) : (
          <>
            <label>Client id<input name="client_id" required autoFocus autocomplete="off" /></label>
            <label>Client secret<input name="client_secret" type="password" required autocomplete="off" /></label>
          </>
        )}
        <button type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
        {error && <p class="error" role="alert">{error}</p>}
        <p class="hint">Kept in this browser tab's session only; closing the tab signs you out.</p>
      </form>
    </main>
  );
}
