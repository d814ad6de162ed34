/** One frame of a `text/event-stream` answer. */
export interface StreamedEvent {
  id: number;
  event: string;
  data: any;
}

/**
 * A client of `GET /api/v1/events/`: collects the frames as they come until closed. A
 * fetch rather than EventSource, which cannot send an Authorization header.
 */
export async function openEventStream(url: string, headers: Record<string, string>) {
  const controller = new AbortController();
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  const events: StreamedEvent[] = [];
  const reading = (async () => {
    if (!response.ok || !response.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields = Object.fromEntries(frame.split('\n').filter((line) => !line.startsWith(':')).map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]));
        if (fields.id) events.push({ id: Number(fields.id), event: fields.event, data: JSON.parse(fields.data) });
      }
    }
  })().catch(() => undefined);
  return {
    response,
    events,
    of: (guid: string) => events.filter((event) => event.data.task_guid === guid),
    close: async () => {
      controller.abort();
      await reading;
    },
  };
}
