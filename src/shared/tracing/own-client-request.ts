import { Context, context, createContextKey } from '@opentelemetry/api';

const OWN_CLIENT_REQUEST = createContextKey('agent-task own HTTP client span');

/**
 * The context of a request sent inside one of the project's own HTTP client spans
 * (`inClientSpan`); the fetch instrumentation leaves such a request alone (sdk.ts), or it
 * would be recorded twice.
 */
export function asOwnClientRequest(active: Context): Context {
  return active.setValue(OWN_CLIENT_REQUEST, true);
}

export function isOwnClientRequest(): boolean {
  return context.active().getValue(OWN_CLIENT_REQUEST) === true;
}
