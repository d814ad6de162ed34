import { useEffect, useRef, useState } from 'preact/hooks';
import { Credential, readStream } from './api';

export interface LiveEvent {
  id: number;
  kind: string;
  at: string;
  task_guid?: string;
  dispatcher_slug?: string | null;
  status: string;
  workflow?: string | null;
  agent_image?: string;
  progress?: { percentage?: number | null; message?: string | null } | null;
  error_message?: string | null;
  [key: string]: unknown;
}

/** Parses `text/event-stream` text as it arrives, frame by frame. */
export function sseParser(onEvent: (event: LiveEvent) => void): (text: string) => void {
  let buffer = '';
  return (text) => {
    buffer += text;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n');
      if (data) onEvent(JSON.parse(data) as LiveEvent);
    }
  };
}

/**
 * Follows `GET /api/v1/events/` (with `query`), reconnecting after a drop with the last
 * id seen, so no event is missed; `onEvent` gets each one once.
 */
export function useEventStream(credential: Credential, query: string, onEvent: (event: LiveEvent) => void): boolean {
  const [connected, setConnected] = useState(false);
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    const abort = new AbortController();
    let lastId: number | null = null;
    const run = async () => {
      while (!abort.signal.aborted) {
        const headers: Record<string, string> = lastId === null ? {} : { 'last-event-id': String(lastId) };
        try {
          setConnected(true);
          await readStream(credential, `events/${query}`, abort.signal, sseParser((event) => {
            lastId = event.id;
            handler.current(event);
          }), headers);
        } catch {
          // Dropped or refused: try again shortly, from the last id seen.
        }
        setConnected(false);
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    };
    void run();
    return () => abort.abort();
  }, [credential, query]);
  return connected;
}
