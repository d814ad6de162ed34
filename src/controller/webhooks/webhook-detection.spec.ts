import { DomainError } from '../../shared/errors/domain-error';
import { detectDeliveryId, detectEvent, detectSource, HeaderBag } from './webhook-signatures';
import { readPayload } from './webhooks.service';

function refusedWith(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof DomainError) return `${error.status} ${Object.keys(error.options.fields ?? {}).join(',')}`;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('webhook source, event and delivery id', () => {
  it.each<[HeaderBag, string]>([
    [{ 'x-webhook-source': 'custom', 'x-github-event': 'push' }, 'custom'],
    [{ 'x-webhook-source': 'Forge' }, 'forge'],
    [{ 'x-forge-event': 'push' }, 'forge'],
    [{ 'x-github-event': 'push', 'x-slack-signature': 'v0=1' }, 'forge'],
    [{ 'x-chat-signature': 'v0=1' }, 'chat'],
    [{ 'x-slack-signature': 'v0=1' }, 'chat'],
  ])('%j is %s', (headers, source) => {
    expect(detectSource(headers)).toBe(source);
  });

  it('refuses an unknown or missing source with 400 naming X-Webhook-Source', () => {
    expect(refusedWith(() => detectSource({ 'x-webhook-source': 'pager' }))).toBe('400 X-Webhook-Source');
    expect(refusedWith(() => detectSource({ 'content-type': 'application/json' }))).toBe('400 X-Webhook-Source');
  });

  it('takes the event from X-Webhook-Event, the forge header, or the payload type', () => {
    expect(detectEvent('forge', { 'x-webhook-event': 'pull_request', 'x-github-event': 'push' }, {})).toBe('pull_request');
    expect(detectEvent('forge', { 'x-forge-event': 'push' }, {})).toBe('push');
    expect(detectEvent('chat', {}, { type: 'event_callback' })).toBe('event_callback');
    expect(detectEvent('custom', {}, { type: 'invoice.paid' })).toBe('invoice.paid');
    expect(refusedWith(() => detectEvent('custom', {}, { data: 1 }))).toBe('400 X-Webhook-Event');
  });

  it('finds each source delivery id where its sender puts it', () => {
    expect(detectDeliveryId('forge', { 'x-forge-delivery': 'f1' }, {})).toBe('f1');
    expect(detectDeliveryId('forge', { 'x-github-delivery': 'g1' }, {})).toBe('g1');
    expect(detectDeliveryId('chat', {}, { event_id: 'Ev1' })).toBe('Ev1');
    expect(detectDeliveryId('custom', { 'webhook-id': 'msg_1' }, {})).toBe('msg_1');
    expect(detectDeliveryId('custom', { 'x-webhook-id': 'w1' }, {})).toBe('w1');
    expect(detectDeliveryId('chat', {}, { type: 'url_verification' })).toBeNull();
  });
});

describe('webhook payloads', () => {
  const inbound = (body: unknown, formEncoded = false) => ({ headers: {}, rawBody: Buffer.from('raw'), body, formEncoded });

  it('reads a form-encoded payload=<json> field, or the form fields themselves', () => {
    expect(readPayload(inbound({ payload: '{"ref":"main"}' }, true))).toEqual({ payload: { ref: 'main' }, payloadText: '{"ref":"main"}' });
    expect(readPayload(inbound({ command: '/deploy' }, true)).payload).toEqual({ command: '/deploy' });
  });

  it('refuses a payload field that is not JSON, and a body that is not an object', () => {
    expect(refusedWith(() => readPayload(inbound({ payload: '{nope' }, true)))).toBe('400 ');
    expect(refusedWith(() => readPayload(inbound([1, 2])))).toBe('400 body');
    expect(refusedWith(() => readPayload(inbound(undefined)))).toBe('400 body');
  });
});
