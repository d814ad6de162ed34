/** The last `lines` lines of a text (all of it when not given): `?tail=N` of a task's logs on both roles. */
export function lastLines(text: string, lines?: number): string {
  if (!lines) return text;
  const parts = text.split('\n');
  const trailingNewline = parts.length > 1 && parts[parts.length - 1] === '';
  if (trailingNewline) parts.pop();
  const kept = parts.slice(-lines).join('\n');
  return trailingNewline ? `${kept}\n` : kept;
}
