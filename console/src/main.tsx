import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Credential, loadCredential, saveCredential } from './api';
import { Audit } from './pages/Audit';
import { DeadLetters } from './pages/DeadLetters';
import { Deliveries } from './pages/Deliveries';
import { Dispatchers } from './pages/Dispatchers';
import { SignIn } from './pages/SignIn';
import { Skills } from './pages/Skills';
import { Subscriptions } from './pages/Subscriptions';
import { TaskDetail } from './pages/TaskDetail';
import { Tasks } from './pages/Tasks';
import { Workflows } from './pages/Workflows';
import './style.css';

const PAGES = [
  { path: 'tasks', title: 'Tasks' },
  { path: 'dead-letters', title: 'Dead letters' },
  { path: 'dispatchers', title: 'Dispatchers' },
  { path: 'workflows', title: 'Workflows' },
  { path: 'deliveries', title: 'Webhook deliveries' },
  { path: 'skills', title: 'Skills' },
  { path: 'subscriptions', title: 'Subscriptions' },
  { path: 'audit', title: 'Audit trail' },
];

/** `#/tasks/<guid>` → ['tasks', '<guid>']: hash routes need nothing from the server. */
function useRoute(): string[] {
  const parse = () => location.hash.replace(/^#\/?/, '').split('/').filter(Boolean);
  const [route, setRoute] = useState(parse);
  useEffect(() => {
    const update = () => setRoute(parse());
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}

function App() {
  const [credential, setCredential] = useState<Credential | null>(loadCredential);
  const [page = 'tasks', id] = useRoute();
  useEffect(() => {
    const title = PAGES.find((candidate) => candidate.path === page)?.title ?? 'Tasks';
    document.title = `${title} · Agent tasks console`;
  }, [page]);
  if (!credential) {
    return <SignIn onSignedIn={(signedIn) => { saveCredential(signedIn); setCredential(signedIn); }} />;
  }
  const signOut = () => { saveCredential(null); setCredential(null); };
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <span class="brand">Agent tasks</span>
        <nav aria-label="Pages">
          {PAGES.map((candidate) => (
            <a href={`#/${candidate.path}`} aria-current={candidate.path === page ? 'page' : undefined}>{candidate.title}</a>
          ))}
        </nav>
        <button type="button" class="link" onClick={signOut}>Sign out</button>
      </header>
      <main id="main" tabIndex={-1}>
        {page === 'tasks' && !id && <Tasks credential={credential} />}
        {page === 'tasks' && id && <TaskDetail credential={credential} guid={id} />}
        {page === 'dead-letters' && <DeadLetters credential={credential} />}
        {page === 'dispatchers' && <Dispatchers credential={credential} />}
        {page === 'workflows' && <Workflows credential={credential} />}
        {page === 'deliveries' && <Deliveries credential={credential} />}
        {page === 'skills' && <Skills credential={credential} selected={id} />}
        {page === 'subscriptions' && <Subscriptions credential={credential} selected={id} />}
        {page === 'audit' && <Audit credential={credential} />}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
